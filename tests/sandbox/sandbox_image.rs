//! Sandbox images from the repository, on a real Docker engine: a `.devcontainer/` Dockerfile
//! built once and reused, a failing build's log tail, the setup command committed and seen by
//! the session with the network off, and the check of what the image lacks. The base image is
//! LILYPAD_TEST_BASH_IMAGE (`lilypad-sandbox:debian`: bash, git, python3); builds download
//! nothing, since the test engine has no way out.

use crate::sandbox_suite::{bash_image, bollard_client, engine_missing};
use lilypad::sandbox::image::{check, ImageError};
use lilypad::sandbox::{self, docker, ExecRequest, Sandbox, SandboxError, SandboxExt, SandboxKind};
use lilypad::sandbox::{KindSettings, SandboxSettings, SandboxSpec};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn engine() -> bool {
    match docker::connect().await {
        Ok(_) => true,
        Err(e) => {
            engine_missing("Docker", "LILYPAD_REQUIRE_DOCKER", &e.to_string());
            false
        }
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A value no earlier run used, so each run's first build or setup really runs.
fn unique() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// The Kubernetes settings of a spec of that kind.
fn kube_settings(spec: &SandboxSpec) -> &lilypad::sandbox::kube::KubeSettings {
    match &spec.settings {
        KindSettings::Kube(k) => k,
        other => panic!("not a kube spec: {other:?}"),
    }
}

fn spec(repo: &Path, s: &SandboxSettings) -> SandboxSpec {
    let mut spec = s.spec(repo, Some(SandboxKind::Docker), SandboxKind::Docker);
    if let KindSettings::Docker(d) = &mut spec.settings {
        d.memory_bytes = 512 << 20;
        d.cpus = 1.0;
    }
    spec
}

/// Opens the sandbox, keeping every progress line.
async fn open(spec: &SandboxSpec) -> (Result<Arc<dyn Sandbox>, SandboxError>, Vec<String>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let progress = move |l: &str| sink.lock().unwrap().push(l.to_string());
    let r = sandbox::open_reporting(spec, &progress).await;
    let lines = lines.lock().unwrap().clone();
    (r, lines)
}

async fn sh(sb: &dyn Sandbox, cmd: &str) -> String {
    let out = sb
        .exec(ExecRequest {
            command: cmd.into(),
            cwd: sb.root().into(),
            timeout: Duration::from_secs(60),
            keep_bytes: 1 << 16,
            stream: None,
        })
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout.head).into_owned()
        + &String::from_utf8_lossy(&out.stderr.head)
}

async fn remove_image(tag: &str) {
    let d = bollard_client().await;
    let _ = d
        .remove_image(
            tag,
            Some(
                bollard::query_parameters::RemoveImageOptionsBuilder::default()
                    .force(true)
                    .build(),
            ),
            None,
        )
        .await;
}

/// The tag named by a progress line `... lilypad-build:xxxx ...`.
fn tag_in(lines: &[String], repo: &str) -> String {
    lines
        .iter()
        .flat_map(|l| l.split_whitespace())
        .map(|w| w.trim_matches(|c: char| c == ',' || c == ':' || c == '`'))
        .find(|w| w.starts_with(&format!("{repo}:")))
        .unwrap_or_else(|| panic!("no {repo} tag in {lines:#?}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devcontainer_dockerfile_is_built_once_then_reused() {
    if !engine().await {
        return;
    }
    let Some(base) = bash_image() else { return };
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    let marker = unique();
    write(r, "README.md", "# proj\n");
    write(r, "tools/marker.txt", &format!("{marker}\n"));
    write(r, "big/ignored.bin", "not sent");
    write(r, ".dockerignore", "big\n");
    write(
        r,
        ".devcontainer/devcontainer.json",
        r#"{
  // built from the repository's own Dockerfile
  "name": "test",
  "build": { "dockerfile": "Dockerfile", "context": "..", },
}"#,
    );
    write(
        r,
        ".devcontainer/Dockerfile",
        &format!(
            "FROM {base}\nCOPY tools/marker.txt /opt/marker.txt\nCOPY . /opt/ctx\n\
             RUN echo built-once >> /opt/build-log\n"
        ),
    );
    let spec = spec(r, &SandboxSettings::default());
    let (sb, first) = open(&spec).await;
    let sb = sb.unwrap();
    let tag = tag_in(&first, "lilypad-build");
    assert!(
        first.iter().any(|l| l.starts_with("Step ")),
        "the build's steps are reported: {first:#?}"
    );
    assert_eq!(
        sh(sb.as_ref(), "cat /opt/marker.txt").await,
        format!("{marker}\n")
    );
    assert_eq!(
        sh(
            sb.as_ref(),
            "test -e /opt/ctx/big && echo sent || echo ignored"
        )
        .await,
        "ignored\n",
        ".dockerignore is honoured"
    );
    assert_eq!(
        sh(sb.as_ref(), "ls /sys/class/net").await,
        "lo\n",
        "the session's network is off"
    );
    sb.close().await.unwrap();

    let (sb, second) = open(&spec).await;
    let sb = sb.unwrap();
    assert!(
        !second.iter().any(|l| l.starts_with("Step ")),
        "the second start builds nothing: {second:#?}"
    );
    assert!(
        second
            .iter()
            .any(|l| l.contains(&tag) && l.contains("built earlier")),
        "the cached image is named: {second:#?}"
    );
    assert_eq!(sh(sb.as_ref(), "cat /opt/build-log").await, "built-once\n");
    sb.close().await.unwrap();

    // A changed file of the context is a new image.
    write(r, "tools/marker.txt", "changed\n");
    let (sb, third) = open(&spec).await;
    let sb = sb.unwrap();
    let tag3 = tag_in(&third, "lilypad-build");
    assert_ne!(tag3, tag);
    assert_eq!(sh(sb.as_ref(), "cat /opt/marker.txt").await, "changed\n");
    sb.close().await.unwrap();
    remove_image(&tag).await;
    remove_image(&tag3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_build_reports_its_log_tail() {
    if !engine().await {
        return;
    }
    let Some(base) = bash_image() else { return };
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    let marker = unique();
    write(
        r,
        "ci/Dockerfile",
        &format!("FROM {base}\nRUN echo 'about to fail {marker}' && exit 3\n"),
    );
    let s = SandboxSettings {
        dockerfile: Some("ci/Dockerfile".into()),
        ..Default::default()
    };
    let (sb, _) = open(&spec(r, &s)).await;
    let err = sb.err().expect("the build fails");
    match &err {
        SandboxError::Image(ImageError::BuildFailed {
            tail, dockerfile, ..
        }) => {
            assert!(tail.contains(&format!("about to fail {marker}")), "{tail}");
            assert_eq!(dockerfile, &r.join("ci/Dockerfile"));
        }
        other => panic!("expected a build failure, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("last lines of the build log"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_runs_once_and_the_session_sees_it_with_the_network_off() {
    if !engine().await {
        return;
    }
    let Some(base) = bash_image() else { return };
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    write(r, "pyproject.toml", "[project]\nname = \"lily\"\n");
    write(r, "src/lilymod.py", "VALUE = 'repo'\n");
    write(r, "unique.txt", &unique());
    // Stands in for `pip install -e .`: a tool outside the workspace, a path file pointing
    // into /workspace (as an editable install writes), and a file inside the workspace.
    let setup = "set -e; mkdir -p /opt/tool; echo from-setup > /opt/tool/marker; \
        printf '#!/bin/sh\\necho tool-ran\\n' > /usr/local/bin/lilytool; \
        chmod 755 /usr/local/bin/lilytool; echo inside > /workspace/setup-made.txt; \
        test -f /workspace/src/lilymod.py; \
        py=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])'); \
        mkdir -p \"$py\"; echo /workspace/src > \"$py/lily-editable.pth\"; echo setup-done";
    let s = SandboxSettings {
        image: Some(base.clone()),
        setup: Some(setup.into()),
        ..Default::default()
    };
    let spec = spec(r, &s);
    let (sb, first) = open(&spec).await;
    let sb = sb.unwrap();
    let tag = tag_in(&first, "lilypad-setup");
    assert!(
        first.iter().any(|l| l == "setup-done"),
        "the setup's output is reported: {first:#?}"
    );
    assert_eq!(
        sh(sb.as_ref(), "lilytool; cat /opt/tool/marker").await,
        "tool-ran\nfrom-setup\n"
    );
    assert_eq!(
        sh(sb.as_ref(), "ls /sys/class/net").await,
        "lo\n",
        "network off"
    );
    assert_eq!(
        sh(
            sb.as_ref(),
            "python3 -c 'import lilymod; print(lilymod.VALUE)'"
        )
        .await,
        "repo\n"
    );
    // The editable install imports the session's own workspace, edits included.
    sb.write("/workspace/src/lilymod.py", b"VALUE = 'edited'\n")
        .await
        .unwrap();
    assert_eq!(
        sh(
            sb.as_ref(),
            "python3 -c 'import lilymod; print(lilymod.VALUE)'"
        )
        .await,
        "edited\n"
    );
    assert_eq!(
        sh(
            sb.as_ref(),
            "test -e setup-made.txt && echo seen || echo fresh"
        )
        .await,
        "fresh\n",
        "the session's workspace is its own copy of the repository"
    );
    let patch = String::from_utf8(
        lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
            .export_patch()
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(patch.contains("+VALUE = 'edited'"), "{patch}");
    assert!(!patch.contains("setup-made"), "{patch}");
    sb.close().await.unwrap();

    let (sb, second) = open(&spec).await;
    let sb = sb.unwrap();
    assert!(
        !second.iter().any(|l| l == "setup-done"),
        "the setup does not run again: {second:#?}"
    );
    assert!(second.iter().any(|l| l.contains(&tag)), "{second:#?}");
    assert_eq!(sh(sb.as_ref(), "lilytool").await, "tool-ran\n");
    sb.close().await.unwrap();

    // A failing setup says so, with its output's tail.
    let bad = SandboxSettings {
        image: Some(base),
        setup: Some(format!("echo 'setup broke {}'; exit 4", unique())),
        ..Default::default()
    };
    let (sb, _) = open(&self::spec(r, &bad)).await;
    match sb.err().expect("the setup fails") {
        SandboxError::Image(ImageError::SetupFailed { tail, how, .. }) => {
            assert!(tail.contains("setup broke"), "{tail}");
            assert!(how.contains('4'), "{how}");
        }
        other => panic!("expected a setup failure, got {other:?}"),
    }
    remove_image(&tag).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_check_names_what_is_missing() {
    if !engine().await {
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), "pyproject.toml", "[project]\nname = \"x\"\n");
    write(repo.path(), "src/x.py", "");
    let names = check::top_level(repo.path()).unwrap();

    let busybox = std::env::var("LILYPAD_TEST_IMAGE").unwrap_or("lilypad-sandbox:busybox".into());
    let s = SandboxSettings {
        image: Some(busybox.clone()),
        ..Default::default()
    };
    let spec = spec(repo.path(), &s);
    let report = check::check_spec(&spec).await.unwrap();
    let missing = report
        .missing
        .expect("the image is there, so it is checked");
    let progs: Vec<&str> = missing.iter().map(|n| n.program).collect();
    assert!(progs.contains(&"python3"), "{progs:?}");
    assert!(
        progs.contains(&"bash") && progs.contains(&"git"),
        "{progs:?}"
    );
    let advice = check::advice(&missing, &spec.image_label()).unwrap();
    assert!(
        advice.contains("python3 (the repository has pyproject.toml)"),
        "{advice}"
    );
    assert!(advice.contains(&busybox), "{advice}");
    // The same through the start-up path the interface and headless runs use.
    let sb = sandbox::open(&spec).await.unwrap();
    let notice = lilypad::launch::image_notice(sb.as_ref(), &spec).await;
    assert!(notice.is_some_and(|n| n.contains("python3")));
    sb.close().await.unwrap();

    let Some(debian) = bash_image() else { return };
    let s = SandboxSettings {
        image: Some(debian),
        ..Default::default()
    };
    let sb = sandbox::open(&self::spec(repo.path(), &s)).await.unwrap();
    assert_eq!(check::check(sb.as_ref(), &names).await.unwrap(), vec![]);
    sb.close().await.unwrap();
}

/// The kube sandbox from the `[sandbox]` settings: the image a devcontainer.json names, and
/// the pod spec's placement and resources, on the real test cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_pod_from_settings_honours_devcontainer_image_and_placement() {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let path = std::env::var("LILYPAD_TEST_KUBECONFIG")
        .unwrap_or_else(|_| "/tmp/lilypad-k8s/sandbox.kubeconfig".into());
    if !Path::new(&path).exists() {
        engine_missing(
            "Kubernetes",
            "LILYPAD_REQUIRE_KUBE",
            &format!("no kubeconfig at {path}"),
        );
        return;
    }
    let image = std::env::var("LILYPAD_TEST_IMAGE").unwrap_or("lilypad-sandbox:busybox".into());
    let repo = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        ".devcontainer/devcontainer.json",
        &format!("{{ \"image\": \"{image}\" /* a ready image */ }}"),
    );
    let s: SandboxSettings = toml::from_str(&format!(
        r#"
kind = "kube"
memory = "256m"
cpus = 0.5
[kube]
kubeconfig = "{path}"
image_pull_policy = "Never"
node_selector = {{ "kubernetes.io/os" = "linux" }}
resources = {{ requests = {{ cpu = "20m" }}, limits = {{ "ephemeral-storage" = "1Gi" }} }}
"#
    ))
    .unwrap();
    let spec = s.spec(repo.path(), None, SandboxKind::Docker);
    if let Err(e) = lilypad::sandbox::kube::connect(kube_settings(&spec)).await {
        engine_missing("Kubernetes", "LILYPAD_REQUIRE_KUBE", &e.to_string());
        return;
    }
    let sb = sandbox::open(&spec).await.unwrap();
    let d = sb.describe();
    let (ns, name) = d
        .strip_prefix("kube sandbox: pod ")
        .and_then(|r| r.split(',').next())
        .and_then(|r| r.split_once('/'))
        .unwrap_or_else(|| panic!("{d}"));
    let (client, _) = lilypad::sandbox::kube::connect(kube_settings(&spec))
        .await
        .unwrap();
    let pod = ::kube::Api::<Pod>::namespaced(client, ns)
        .get(name)
        .await
        .unwrap();
    let spec_ = pod.spec.unwrap();
    assert_eq!(spec_.containers[0].image.as_deref(), Some(image.as_str()));
    assert_eq!(spec_.node_selector.unwrap()["kubernetes.io/os"], "linux");
    let res = spec_.containers[0].resources.clone().unwrap();
    let (limits, requests) = (res.limits.unwrap(), res.requests.unwrap());
    assert_eq!(limits["cpu"], Quantity("500m".into()));
    assert_eq!(limits["memory"], Quantity("256Mi".into()));
    assert_eq!(limits["ephemeral-storage"], Quantity("1Gi".into()));
    assert_eq!(requests["cpu"], Quantity("20m".into()));
    assert_eq!(sh(sb.as_ref(), "echo up").await, "up\n");
    sb.close().await.unwrap();

    // A setup command cannot run there: the start says so.
    let mut with_setup = s.clone();
    with_setup.setup = Some("pip install -e .".into());
    let err = sandbox::open(&with_setup.spec(repo.path(), None, SandboxKind::Docker))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(err, SandboxError::Image(ImageError::KubeCannotBuild { .. })),
        "{err}"
    );
}
