//! The tools and every attack case against a real Docker engine (scripts/docker-up.sh). Without
//! an engine these tests skip loudly, unless LILYPAD_REQUIRE_DOCKER=1 (CI), where they fail.
//! Image: LILYPAD_TEST_IMAGE, default `lilypad-sandbox:busybox` (no bash: commands run with
//! `sh -c` there).

use crate::sandbox_suite::{
    self, attacks, bollard_client, engine_missing, exclusive, fixture, formats, Harness,
};
use lilypad::sandbox::docker::{self, DockerSandbox, DockerSettings};
use lilypad::sandbox::workspace::Workspace;
use lilypad::sandbox::{Sandbox, SandboxError};
use std::sync::Arc;

const TMP_MB: u64 = 16;

fn settings() -> DockerSettings {
    DockerSettings {
        image: std::env::var("LILYPAD_TEST_IMAGE")
            .unwrap_or_else(|_| "lilypad-sandbox:busybox".into()),
        memory_bytes: 256 << 20,
        cpus: 1.0,
        pids: 128,
        tmp_size: format!("{TMP_MB}m"),
        ..Default::default()
    }
}

/// True when an engine answers; otherwise skip (or fail when required).
async fn engine() -> bool {
    match docker::connect().await {
        Ok(_) => true,
        Err(e) => {
            engine_missing("Docker", "LILYPAD_REQUIRE_DOCKER", &e.to_string());
            false
        }
    }
}

async fn start(repo: &std::path::Path) -> Arc<DockerSandbox> {
    let ws = Workspace::create(repo).unwrap();
    Arc::new(DockerSandbox::start(ws, &settings()).await.unwrap())
}

/// The container is gone once the sandbox is closed.
async fn assert_removed(id: &str) {
    let d = bollard_client().await;
    match d.inspect_container(id, None).await {
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        other => panic!("container {id} still exists after close: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_tool_formats_paths_and_patch() {
    if !engine().await {
        return;
    }
    let repo = fixture();
    let sb = start(repo.path()).await;
    let id = sb.container_id().to_string();
    let h = Harness::new(sb.clone());
    formats::reads_and_paths(&h).await;
    formats::writes_and_edits(&h, repo.path()).await;
    formats::commands(&h).await;
    sb.close().await.unwrap();
    assert_removed(&id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_attacks() {
    if !engine().await {
        return;
    }
    let _machine = exclusive().await;
    attacks::plant_secret();
    let repo = fixture();
    let sb = start(repo.path()).await;
    let id = sb.container_id().to_string();
    let h = Harness::new(sb.clone());
    attacks::secrets_and_privileges(&h, true).await;
    attacks::writes_outside(&h).await;
    attacks::egress(&h, true).await;
    attacks::disk_filler(&h, TMP_MB).await;
    attacks::big_output(&h).await;
    attacks::hung_and_escapee(&h, true).await;
    attacks::fork_bomb(&h).await;
    attacks::escaping_fork_bomb(&h).await;
    attacks::last_resort(&h, async { sb.kill_all().await.unwrap() }).await;
    attacks::memory_hog(&h).await;
    let info = bollard_client()
        .await
        .inspect_container(&id, None)
        .await
        .unwrap();
    let hc = info.host_config.unwrap();
    assert_eq!(hc.network_mode.as_deref(), Some("none"));
    assert_eq!(hc.readonly_rootfs, Some(true));
    assert_eq!(hc.init, Some(true));
    assert_eq!(hc.pids_limit, Some(128));
    sb.close().await.unwrap();
    assert_removed(&id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_startup_errors_say_what_to_do() {
    if !engine().await {
        return;
    }
    let repo = fixture();
    let ws = Workspace::create(repo.path()).unwrap();
    let s = DockerSettings {
        image: "lilypad-no-such-image:latest".into(),
        ..settings()
    };
    match DockerSandbox::start(ws, &s).await {
        Err(SandboxError::Unavailable { what, hint }) => {
            assert!(what.contains("lilypad-no-such-image:latest"), "{what}");
            assert!(hint.contains("docker pull"), "{hint}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_sweeps_leftovers_of_dead_sessions() {
    if !engine().await {
        return;
    }
    use bollard::models::ContainerCreateBody;
    let d = bollard_client().await;
    let labels = std::collections::HashMap::from([
        (docker::LABEL.to_string(), "1".to_string()),
        (
            "dev.lilypad.session".to_string(),
            "dead-session".to_string(),
        ),
        (
            "dev.lilypad.host".to_string(),
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap()
                .trim()
                .to_string(),
        ),
        // No process has this pid (above the kernel's pid_max limit of 2^22).
        ("dev.lilypad.pid".to_string(), "4194305".to_string()),
    ]);
    let body = ContainerCreateBody {
        image: Some(settings().image),
        cmd: Some(vec!["true".into()]),
        labels: Some(labels),
        network_disabled: Some(true),
        ..Default::default()
    };
    let c = d.create_container(None, body).await.unwrap();
    let client = docker::connect().await.unwrap();
    let swept = docker::sweep_leftovers(&client).await.unwrap();
    assert!(swept >= 1);
    assert!(
        d.inspect_container(&c.id, None).await.is_err(),
        "leftover not swept"
    );
}

/// The formats again on an image with bash (LILYPAD_TEST_BASH_IMAGE, e.g. the
/// `lilypad-sandbox:debian` of `docker-up.sh --debian`): commands run with `/bin/bash -lc`
/// there, as the model was trained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_tool_formats_with_bash() {
    let Some(image) = sandbox_suite::bash_image() else {
        return;
    };
    if !engine().await {
        return;
    }
    let repo = fixture();
    let s = DockerSettings {
        image,
        ..settings()
    };
    let sb = Arc::new(
        DockerSandbox::start(Workspace::create(repo.path()).unwrap(), &s)
            .await
            .unwrap(),
    );
    assert_eq!(sb.shell(), "/bin/bash -lc");
    let h = Harness::new(sb.clone());
    assert_eq!(h.out("echo $BASH_VERSION | cut -c1").await, "5\n");
    formats::reads_and_paths(&h).await;
    formats::writes_and_edits(&h, repo.path()).await;
    formats::commands(&h).await;
    sb.close().await.unwrap();
}

/// The workspace is a git checkout of its own in the container (an image with git:
/// LILYPAD_TEST_BASH_IMAGE, `lilypad-sandbox:debian`), with the `.git` the bind mount brings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_workspace_is_a_git_checkout() {
    let Some(image) = sandbox_suite::bash_image() else {
        return;
    };
    if !engine().await {
        return;
    }
    let repo = sandbox_suite::git::git_fixture();
    let s = DockerSettings {
        image,
        ..settings()
    };
    let sb = Arc::new(
        DockerSandbox::start(Workspace::create(repo.path()).unwrap(), &s)
            .await
            .unwrap(),
    );
    let h = Harness::new(sb.clone());
    sandbox_suite::git::checkout(&h, repo.path(), false).await;
    sb.close().await.unwrap();
}
