//! A research batch on the real Kubernetes cluster of the test setup (scripts/k8s-up.sh), as
//! the least-privileged identity of docs/kube-rbac.yaml: 8 tasks x 2 attempts, 4 pods at a
//! time, the scripted engine with a script per attempt; the batch is SIGKILLed half-way, run
//! again with the same command, and finishes with 16 results, the ones finished before the
//! kill byte for byte as they were, and no pod or ConfigMap of either run left. And Harbor
//! tasks on the cluster: empty writable `/tests` and `/logs` in each pod, the verifier's
//! rewards, and the digest of each pod's image in its result.
//!
//! Without a cluster the tests skip loudly, unless LILYPAD_REQUIRE_KUBE=1 (CI), where they
//! fail.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams};
use lilypad::sandbox::kube::KubeSettings;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::batch::{fix_script as script, snapshot};
use crate::common::git_repo;

const SELECTOR: &str = "app.kubernetes.io/managed-by=lilypad";

/// The test cluster's settings, or `None` (skipped loudly) where there is none.
fn cluster(rt: &tokio::runtime::Runtime) -> Option<KubeSettings> {
    let path = std::env::var("LILYPAD_TEST_KUBECONFIG")
        .unwrap_or_else(|_| "/tmp/lilypad-k8s/sandbox.kubeconfig".into());
    let required = std::env::var("LILYPAD_REQUIRE_KUBE").is_ok_and(|v| v == "1");
    let s = KubeSettings {
        kubeconfig: Some(path.clone().into()),
        ..Default::default()
    };
    let why = if !Path::new(&path).exists() {
        format!("no kubeconfig at {path}")
    } else {
        match rt.block_on(lilypad::sandbox::kube::connect(&s)) {
            Ok(_) => return Some(s),
            Err(e) => e.to_string(),
        }
    };
    assert!(!required, "LILYPAD_REQUIRE_KUBE=1 but no cluster: {why}");
    eprintln!("!!!!! SKIPPED: the Kubernetes batch test: {why}");
    None
}

/// The Lilypad ConfigMaps of the namespace: name to the pid that made it.
fn config_maps(rt: &tokio::runtime::Runtime, s: &KubeSettings) -> BTreeMap<String, String> {
    rt.block_on(async {
        let (client, ns) = lilypad::sandbox::kube::connect(s).await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, &ns);
        cms.list(&ListParams::default().labels(SELECTOR))
            .await
            .unwrap()
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter_map(|c| {
                let pid = c
                    .metadata
                    .annotations
                    .as_ref()?
                    .get("lilypad.dev/pid")?
                    .clone();
                Some((c.metadata.name?, pid))
            })
            .collect()
    })
}

/// The pods of `names` that exist and are not being deleted.
fn live_pods(
    rt: &tokio::runtime::Runtime,
    s: &KubeSettings,
    names: &BTreeSet<String>,
) -> Vec<String> {
    rt.block_on(async {
        let (client, ns) = lilypad::sandbox::kube::connect(s).await.unwrap();
        let pods: Api<Pod> = Api::namespaced(client, &ns);
        let mut live = Vec::new();
        for n in names {
            if let Some(p) = pods.get_opt(n).await.unwrap() {
                if p.metadata.deletion_timestamp.is_none() {
                    live.push(n.clone());
                }
            }
        }
        live
    })
}

#[test]
fn a_kube_batch_killed_half_way_finishes_when_run_again_and_leaves_no_pod() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(kube) = cluster(&rt) else { return };
    let image =
        std::env::var("LILYPAD_TEST_IMAGE").unwrap_or_else(|_| "lilypad-sandbox:busybox".into());
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    // Attempt 1 makes f return 2, attempt 2 makes it return 3.
    let scripts = tmp.path().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    for a in [1, 2] {
        std::fs::write(scripts.join(format!("{a}.txt")), script(a + 1)).unwrap();
    }
    let ids: Vec<String> = (1..=8).map(|i| format!("k{i}")).collect();
    let tasks = tmp.path().join("tasks.jsonl");
    let lines: String = ids
        .iter()
        .map(|id| format!("{{\"instance_id\": \"{id}\", \"task\": \"change f\"}}\n"))
        .collect();
    std::fs::write(&tasks, lines).unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[sandbox]\nimage = \"{image}\"\nmemory = \"256m\"\ndisk = \"256m\"\n\
             [sandbox.kube]\nkubeconfig = \"{}\"\nimage_pull_policy = \"Never\"\n",
            kube.kubeconfig.as_ref().unwrap().display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("batch");
    let command = |delay: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
        c.env("LILYPAD_CONFIG", &config)
            .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
            .env("LILYPAD_SCRIPT_DELAY_MS", delay)
            .env_remove("LILYPAD_MODEL")
            .args([
                "run",
                "--sandbox",
                "kube",
                "--parallel",
                "4",
                "--attempts",
                "2",
            ])
            .arg("--tasks")
            .arg(&tasks)
            .arg("--repo")
            .arg(&repo)
            .arg("--engine")
            .arg(format!("script:{}/{{attempt}}.txt", scripts.display()))
            .args(["--check", "grep -q 'return [23]' src/app.py"])
            .arg("--out")
            .arg(&out);
        c
    };
    let finished = |out: &Path| -> Vec<PathBuf> {
        ids.iter()
            .flat_map(|id| (1..=2).map(move |a| out.join("results").join(id).join(a.to_string())))
            .filter(|d| d.join("result.json").exists())
            .collect()
    };
    // The slow run: SIGKILLed once a quarter of the attempts finished, while others run.
    let mut child = command("15")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first_pid = child.id().to_string();
    let mut seen = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        for (name, pid) in config_maps(&rt, &kube) {
            if pid == first_pid {
                seen.insert(name);
            }
        }
        let running = ids.iter().any(|id| {
            (1..=2).any(|a| {
                let d = out.join("results").join(id).join(a.to_string());
                d.join("session.json").exists() && !d.join("result.json").exists()
            })
        });
        if finished(&out).len() >= 4 && running {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the batch ended before it was killed"
        );
        assert!(Instant::now() < deadline, "the batch made no progress");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done_before = finished(&out);
    assert!(
        done_before.len() < 16,
        "the kill came after the batch had finished"
    );
    let before: BTreeMap<PathBuf, Vec<u8>> = done_before
        .iter()
        .flat_map(|d| snapshot(d).into_iter().map(move |(p, b)| (d.join(p), b)))
        .collect();
    // The killed run left its pods behind.
    let left = config_maps(&rt, &kube);
    assert!(
        left.values().any(|p| *p == first_pid),
        "the SIGKILLed batch left no session behind: {left:?}"
    );
    seen.extend(left.keys().cloned());

    // The same command again, without the delay: it finishes the batch.
    let mut again = command("0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let second_pid = again.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(600);
    while again.try_wait().unwrap().is_none() {
        for (name, pid) in config_maps(&rt, &kube) {
            if pid == second_pid {
                seen.insert(name);
            }
        }
        assert!(Instant::now() < deadline, "the second run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = again.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("{} finished earlier", done_before.len())),
        "{stderr}"
    );
    assert_eq!(finished(&out).len(), 16);
    for (p, bytes) in &before {
        assert_eq!(
            std::fs::read(p).ok().as_ref(),
            Some(bytes),
            "{} changed",
            p.display()
        );
    }
    let preds: Vec<serde_json::Value> = std::fs::read_to_string(out.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(preds.len(), 16);
    for p in &preds {
        let want = format!("+    return {}", p["attempt"].as_u64().unwrap() + 1);
        assert!(p["model_patch"].as_str().unwrap().contains(&want), "{p}");
        assert_eq!(p["check_passed"], true, "{p}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["pass_at_k"]["2"], 1.0, "{report}");

    // Nothing of either run is left: no ConfigMap made by either process, and none of the
    // pods seen (the cluster may take a moment to finish deleting).
    assert!(seen.len() >= 4, "{seen:?}");
    let ours = |m: &BTreeMap<String, String>| {
        m.iter()
            .filter(|(_, p)| **p == first_pid || **p == second_pid)
            .map(|(n, _)| n.clone())
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let cms = ours(&config_maps(&rt, &kube));
        let pods = live_pods(&rt, &kube, &seen);
        if cms.is_empty() && pods.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "left behind: ConfigMaps {cms:?}, pods {pods:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_image_task_works_on_the_images_own_repository_on_the_cluster() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(kube) = cluster(&rt) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[sandbox]\nmemory = \"512m\"\n\
             [sandbox.kube]\nkubeconfig = \"{}\"\nimage_pull_policy = \"Never\"\n",
            kube.kubeconfig.as_ref().unwrap().display()
        ),
    )
    .unwrap();
    super::batch_image_own::run_on_own_repository("kube", Some(&config));
}

/// The Harbor batch of `batch_harbor`, on the cluster: each task's image is built on the
/// Docker engine the test cluster's node runs on (so its pod finds it without a registry),
/// the pod has empty writable `/tests` and `/logs` under a read-only root, the verifier
/// rewards one task and not the other, and each result records the digest the pod's status
/// gives its image.
#[test]
fn harbor_tasks_run_on_kubernetes_with_writable_tests_and_logs() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(kube) = cluster(&rt) else { return };
    let base = std::env::var("LILYPAD_TEST_BASH_IMAGE")
        .unwrap_or_else(|_| "lilypad-sandbox:debian".into());
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    super::batch_harbor::task(&tasks, "kube-42", 42, &base);
    super::batch_harbor::task(&tasks, "kube-43", 43, &base);
    let script = tmp.path().join("answer.txt");
    std::fs::write(&script, super::batch_harbor::SCRIPT).unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[sandbox.kube]\nkubeconfig = \"{}\"\nimage_pull_policy = \"Never\"\n",
            kube.kubeconfig.as_ref().unwrap().display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", &config)
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", "kube", "--parallel", "2"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "stderr: {stderr}");
    let result = |id: &str| -> serde_json::Value {
        let p = out.join("results").join(id).join("1/result.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (good, bad) = (result("kube-42"), result("kube-43"));
    assert_eq!(good["reward"], 1.0, "{good}");
    assert_eq!(good["check"]["passed"], true, "{good}");
    assert_eq!(bad["reward"], 0.0, "{bad}");
    for (id, r) in [("kube-42", &good), ("kube-43", &bad)] {
        // The agent worked in the image's /app and saw /tests and /logs empty.
        let t = std::fs::read_to_string(out.join("results").join(id).join("1/trajectory.json"))
            .unwrap();
        assert!(t.contains("/app") && !t.contains("expected"), "{t}");
        let patch =
            std::fs::read_to_string(out.join("results").join(id).join("1/patch.diff")).unwrap();
        assert!(
            patch.contains("+42") && !patch.contains("test.sh"),
            "{patch}"
        );
        // The digest is the one the node's engine holds for the task's image.
        let image = r["image"].as_str().unwrap();
        let id = Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", image])
            .output()
            .unwrap();
        let id = String::from_utf8_lossy(&id.stdout).trim().to_string();
        assert!(id.starts_with("sha256:"), "{image}: {id}");
        assert_eq!(r["image_digest"], id.as_str(), "{r}");
    }
}

#[test]
fn patcheval_tasks_run_and_are_verified_on_the_cluster() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(kube) = cluster(&rt) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[sandbox.kube]\nkubeconfig = \"{}\"\nimage_pull_policy = \"Never\"\n",
            kube.kubeconfig.as_ref().unwrap().display()
        ),
    )
    .unwrap();
    super::batch_patcheval::run_patcheval("kube", Some(&config));
}
