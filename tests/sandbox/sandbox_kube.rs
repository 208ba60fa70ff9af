//! The tools and every attack case against a real Kubernetes cluster (scripts/k8s-up.sh), as
//! the least-privileged identity of docs/kube-rbac.yaml. Kubeconfig: LILYPAD_TEST_KUBECONFIG,
//! default /tmp/lilypad-k8s/sandbox.kubeconfig. Without a cluster these tests skip loudly,
//! unless LILYPAD_REQUIRE_KUBE=1 (CI), where they fail.
//!
//! The test cluster does not enforce NetworkPolicy (no policy-capable network plugin): the
//! policy's presence is asserted, and isolation from the host's 127.0.0.1 is tested directly.

use crate::sandbox_suite::{self, attacks, engine_missing, exclusive, fixture, formats, Harness};
use ::kube::Api;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use lilypad::sandbox::kube::{self, KubeSandbox, KubeSettings};
use lilypad::sandbox::workspace::Workspace;
use lilypad::sandbox::{Sandbox, SandboxError, SandboxExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn settings() -> Option<KubeSettings> {
    let path = std::env::var("LILYPAD_TEST_KUBECONFIG")
        .unwrap_or_else(|_| "/tmp/lilypad-k8s/sandbox.kubeconfig".into());
    if !std::path::Path::new(&path).exists() {
        engine_missing(
            "Kubernetes",
            "LILYPAD_REQUIRE_KUBE",
            &format!("no kubeconfig at {path}"),
        );
        return None;
    }
    Some(KubeSettings {
        image: std::env::var("LILYPAD_TEST_IMAGE")
            .unwrap_or_else(|_| "lilypad-sandbox:busybox".into()),
        image_pull_policy: "Never".into(),
        kubeconfig: Some(path.into()),
        cpu: "1".into(),
        memory: "256Mi".into(),
        tmp_size: "16Mi".into(),
        workspace_size: "256Mi".into(),
        ready_timeout_secs: 120,
        ..Default::default()
    })
}

async fn cluster() -> Option<KubeSettings> {
    let s = settings()?;
    match kube::connect(&s).await {
        Ok(_) => Some(s),
        Err(e) => {
            engine_missing("Kubernetes", "LILYPAD_REQUIRE_KUBE", &e.to_string());
            None
        }
    }
}

async fn start(repo: &std::path::Path, s: &KubeSettings) -> Arc<KubeSandbox> {
    let ws = Workspace::create(repo).unwrap();
    Arc::new(KubeSandbox::start(ws, s).await.unwrap())
}

/// After close: the pod and ConfigMap are gone or going at once; the NetworkPolicy follows
/// through garbage collection of its owner.
async fn assert_removed(s: &KubeSettings, ns: &str, name: &str) {
    let (client, _) = kube::connect(s).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let nps: Api<NetworkPolicy> = Api::namespaced(client, ns);
    if let Some(p) = pods.get_opt(name).await.unwrap() {
        assert!(
            p.metadata.deletion_timestamp.is_some(),
            "pod {name} not being deleted"
        );
    }
    if let Some(c) = cms.get_opt(name).await.unwrap() {
        assert!(
            c.metadata.deletion_timestamp.is_some(),
            "ConfigMap {name} not being deleted"
        );
    }
    let t0 = Instant::now();
    while nps.get_opt(name).await.unwrap().is_some() {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "NetworkPolicy {name} outlived its owner"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_tool_formats_paths_and_patch() {
    let Some(s) = cluster().await else { return };
    let repo = fixture();
    let sb = start(repo.path(), &s).await;
    let (ns, name) = (sb.namespace().to_string(), sb.pod_name().to_string());
    let h = Harness::new(sb.clone());
    formats::reads_and_paths(&h).await;
    formats::writes_and_edits(&h, repo.path()).await;
    formats::commands(&h).await;
    sb.close().await.unwrap();
    assert_removed(&s, &ns, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_attacks() {
    let Some(s) = cluster().await else { return };
    let _machine = exclusive().await;
    attacks::plant_secret();
    let repo = fixture();
    let sb = start(repo.path(), &s).await;
    let (ns, name) = (sb.namespace().to_string(), sb.pod_name().to_string());
    // The deny-all policy selects the pod.
    let (client, _) = kube::connect(&s).await.unwrap();
    let np = Api::<NetworkPolicy>::namespaced(client.clone(), &ns)
        .get(&name)
        .await
        .unwrap();
    let spec = np.spec.unwrap();
    assert_eq!(spec.policy_types.unwrap(), vec!["Ingress", "Egress"]);
    assert!(
        spec.ingress.unwrap_or_default().is_empty() && spec.egress.unwrap_or_default().is_empty()
    );
    let pod = Api::<Pod>::namespaced(client, &ns)
        .get(&name)
        .await
        .unwrap();
    let ps = pod.spec.unwrap();
    assert_eq!(ps.automount_service_account_token, Some(false));
    assert_eq!(ps.restart_policy.as_deref(), Some("Never"));
    assert!(ps.active_deadline_seconds.is_some());

    let h = Harness::new(sb.clone());
    attacks::secrets_and_privileges(&h, true).await;
    attacks::writes_outside(&h).await;
    attacks::egress(&h, false).await;
    attacks::big_output(&h).await;
    attacks::hung_and_escapee(&h, true).await;
    attacks::fork_bomb(&h).await;
    attacks::escaping_fork_bomb(&h).await;
    attacks::last_resort(&h, async { sb.kill_all().await.unwrap() }).await;
    attacks::memory_hog(&h).await;
    attacks::disk_filler(&h, 16).await;
    sb.close().await.unwrap();
    assert_removed(&s, &ns, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_startup_errors_say_what_to_do() {
    let Some(s) = cluster().await else { return };
    let repo = fixture();
    let s = KubeSettings {
        image: "lilypad-no-such-image:latest".into(),
        ..s
    };
    match KubeSandbox::start(Workspace::create(repo.path()).unwrap(), &s).await {
        Err(SandboxError::Unavailable { what, hint }) => {
            assert!(what.contains("cannot start its container"), "{what}");
            assert!(hint.contains("lilypad-no-such-image:latest"), "{hint}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let huge = KubeSettings {
        image: "lilypad-sandbox:busybox".into(),
        memory: "1000Gi".into(),
        memory_request: "1000Gi".into(),
        ..s.clone()
    };
    match KubeSandbox::start(Workspace::create(repo.path()).unwrap(), &huge).await {
        Err(SandboxError::Unavailable { what, hint }) => {
            assert!(what.contains("cannot be scheduled"), "{what}");
            assert!(hint.contains("limits"), "{hint}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let bad = KubeSettings {
        kubeconfig: Some("/nonexistent/kubeconfig".into()),
        ..s
    };
    match kube::connect(&bad).await {
        Err(SandboxError::Unavailable { hint, .. }) => {
            assert!(hint.contains("KUBECONFIG"), "{hint}")
        }
        other => panic!("expected Unavailable, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_sweeps_expired_sessions() {
    let Some(s) = cluster().await else { return };
    let (client, ns) = kube::connect(&s).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": "lilypad-expired-test",
            "labels": {"app.kubernetes.io/managed-by": "lilypad", "lilypad.dev/session": "expired-test"},
            "annotations": {"lilypad.dev/expires-unix": "1"}
        }
    }))
    .unwrap();
    let _ = cms
        .delete("lilypad-expired-test", &Default::default())
        .await;
    cms.create(&Default::default(), &cm).await.unwrap();
    assert!(kube::sweep_leftovers(&client, &ns).await.unwrap() >= 1);
    if let Some(c) = cms.get_opt("lilypad-expired-test").await.unwrap() {
        assert!(
            c.metadata.deletion_timestamp.is_some(),
            "expired session not swept"
        );
    }
}

/// The formats again on an image with bash (see tests/sandbox/sandbox_docker.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_tool_formats_with_bash() {
    let Some(image) = sandbox_suite::bash_image() else {
        return;
    };
    let Some(s) = cluster().await else { return };
    let repo = fixture();
    let s = KubeSettings { image, ..s };
    let sb = start(repo.path(), &s).await;
    assert_eq!(sb.shell(), "/bin/bash -lc");
    let h = Harness::new(sb.clone());
    formats::reads_and_paths(&h).await;
    formats::writes_and_edits(&h, repo.path()).await;
    formats::commands(&h).await;
    sb.close().await.unwrap();
}

/// The workspace is a git checkout of its own in the pod (an image with git, see
/// tests/sandbox/sandbox_docker.rs): `.git` travels in the upload, and git accepts the
/// checkout although the volume's root is not the sandbox user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_workspace_is_a_git_checkout() {
    let Some(image) = sandbox_suite::bash_image() else {
        return;
    };
    let Some(s) = cluster().await else { return };
    let repo = sandbox_suite::git::git_fixture();
    let s = KubeSettings { image, ..s };
    let sb = start(repo.path(), &s).await;
    let h = Harness::new(sb.clone());
    sandbox_suite::git::checkout(&h, repo.path(), false).await;
    sb.close().await.unwrap();
}

/// The pod pulls with the settings' pull secrets, its scratch directories are writable under
/// the read-only root, and the sandbox reports the digest of the image the pod runs (the
/// node's engine's id for it, as the pod's status gives it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_pod_has_pull_secrets_scratch_dirs_and_its_image_digest() {
    let Some(mut s) = cluster().await else { return };
    s.pull_secrets = vec!["lilypad-test-pull".into()];
    s.scratch_dirs = vec!["/tests".into(), "/logs".into()];
    let repo = fixture();
    let sb = start(repo.path(), &s).await;
    let (ns, name) = (sb.namespace().to_string(), sb.pod_name().to_string());
    let (client, _) = kube::connect(&s).await.unwrap();
    let pod = Api::<Pod>::namespaced(client, &ns)
        .get(&name)
        .await
        .unwrap();
    let secrets = pod.spec.unwrap().image_pull_secrets.unwrap();
    let names: Vec<&str> = secrets.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["lilypad-test-pull"]);
    let run = |command: &str| lilypad::sandbox::ExecRequest {
        command: command.into(),
        cwd: sb.workdir().to_string(),
        timeout: Duration::from_secs(30),
        keep_bytes: 4096,
        stream: None,
    };
    let ok = sb
        .exec(run("touch /tests/t /logs/l && ls -A /tests /logs"))
        .await
        .unwrap();
    assert_eq!(ok.exit, lilypad::sandbox::ExecExit::Exited(0), "{ok:?}");
    let refused = sb.exec(run("touch /elsewhere")).await.unwrap();
    assert_ne!(refused.exit, lilypad::sandbox::ExecExit::Exited(0));
    let id = std::process::Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", &s.image])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&id.stdout).trim().to_string();
    let digest = sb.image_digest().unwrap_or_default();
    match id.starts_with("sha256:") {
        // The node's engine is this machine's (the test cluster's dockershim).
        true => assert_eq!(digest, id),
        // A cluster elsewhere: its digest, whatever it is, is a whole one.
        false => assert!(
            digest.len() == 71 && digest.starts_with("sha256:"),
            "{digest}"
        ),
    }
    sb.close().await.unwrap();
    assert_removed(&s, &ns, &name).await;
}
