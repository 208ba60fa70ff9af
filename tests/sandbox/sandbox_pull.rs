//! A sandbox image the Docker engine lacks is pulled when the session starts, on a real engine:
//! from a private registry on 127.0.0.1 (`scripts/registry-up.sh`, LILYPAD_TEST_REGISTRY) with
//! the pull's progress reported, and from a registry nobody answers at, where the error says why
//! the pull failed and keeps the hint. The pulled image is made here: a layer of random bytes
//! committed on LILYPAD_TEST_IMAGE, pushed, and removed from the engine again, so that the pull
//! really downloads it. Copying a task image's repository out (`image::extract`) pulls the
//! same way.

use crate::sandbox_suite::{bollard_client, engine_missing};
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CommitContainerOptionsBuilder, CreateContainerOptionsBuilder, PushImageOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;
use lilypad::sandbox::docker::DockerSettings;
use lilypad::sandbox::image::extract::extract_dir;
use lilypad::sandbox::image::ImageError;
use lilypad::sandbox::{self, docker, ExecRequest, KindSettings, Sandbox, SandboxError};
use lilypad::sandbox::{ExecExit, SandboxSpec};
use std::error::Error as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bytes of the layer the pull must download.
const BLOB: usize = 3_000_000;

async fn engine() -> bool {
    match docker::connect().await {
        Ok(_) => true,
        Err(e) => {
            engine_missing("Docker", "LILYPAD_REQUIRE_DOCKER", &e.to_string());
            false
        }
    }
}

fn base_image() -> String {
    std::env::var("LILYPAD_TEST_IMAGE").unwrap_or_else(|_| "lilypad-sandbox:busybox".into())
}

fn spec(repo: &std::path::Path, image: &str) -> SandboxSpec {
    SandboxSpec {
        repo: repo.to_path_buf(),
        in_place: false,
        settings: KindSettings::Docker(DockerSettings {
            image: image.into(),
            memory_bytes: 256 << 20,
            cpus: 1.0,
            pids: 128,
            ..Default::default()
        }),
    }
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

#[tokio::test]
async fn an_image_on_a_registry_nobody_answers_at_fails_with_the_reason_and_the_hint() {
    if !engine().await {
        return;
    }
    let repo = crate::sandbox_suite::fixture();
    let image = "127.0.0.1:1/lilypad-nothing:latest";
    let (r, lines) = open(&spec(repo.path(), image)).await;
    let err = r.err().expect("no image and no registry: the start fails");
    assert!(
        matches!(&err, SandboxError::Image(ImageError::PullFailed { image: i, .. }) if i == image),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("pulling it failed"), "{text}");
    // The engine's reason: it could not reach the registry's address.
    assert!(
        text.contains("127.0.0.1:1") && text.contains("connection refused"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "hint: pull or build it first (`docker pull {image}`)"
        )),
        "{text}"
    );
    // The pull's own error is kept as the source (the image error is transparent).
    let source = err.source().expect("the pull's error").to_string();
    assert!(source.contains("connection refused"), "{source}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(image) && l.contains("pulling it")),
        "{lines:?}"
    );
}

/// Make `{registry}/lilypad-pull-test:{tag}` on the registry only: a layer of [`BLOB`] random
/// bytes (and `/repo/marker` saying `tag`) on the base image, committed, pushed, and removed
/// from the engine.
async fn push_fresh_image(d: &bollard::Docker, registry: &str, tag: &str) -> String {
    let repo = format!("{registry}/lilypad-pull-test");
    let body = ContainerCreateBody {
        image: Some(base_image()),
        entrypoint: Some(vec![]),
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            format!(
                "head -c {BLOB} /dev/urandom > /blob && mkdir /repo && echo {tag} > /repo/marker"
            ),
        ]),
        network_disabled: Some(true),
        ..Default::default()
    };
    let name = format!("lilypad-pull-test-{tag}");
    let opts = CreateContainerOptionsBuilder::default().name(&name).build();
    let c = d.create_container(Some(opts), body).await.unwrap();
    d.start_container(&c.id, None).await.unwrap();
    let wait = WaitContainerOptionsBuilder::default().build();
    let mut waiting = d.wait_container(&c.id, Some(wait));
    while let Some(w) = waiting.next().await {
        assert_eq!(w.unwrap().status_code, 0, "writing the blob");
    }
    let commit = CommitContainerOptionsBuilder::default()
        .container(&c.id)
        .repo(&repo)
        .tag(tag)
        .build();
    d.commit_container(commit, bollard::models::ContainerConfig::default())
        .await
        .unwrap();
    let rm = RemoveContainerOptionsBuilder::default().force(true).build();
    d.remove_container(&c.id, Some(rm)).await.unwrap();
    let push = PushImageOptionsBuilder::default().tag(tag).build();
    let mut pushing = d.push_image(&repo, Some(push), None);
    while let Some(p) = pushing.next().await {
        p.unwrap();
    }
    let image = format!("{repo}:{tag}");
    d.remove_image(
        &image,
        None::<bollard::query_parameters::RemoveImageOptions>,
        None,
    )
    .await
    .unwrap();
    assert!(
        d.inspect_image(&image).await.is_err(),
        "gone from the engine"
    );
    image
}

#[tokio::test]
async fn a_missing_image_is_pulled_from_the_registry_with_progress() {
    if !engine().await {
        return;
    }
    let Ok(registry) = std::env::var("LILYPAD_TEST_REGISTRY") else {
        engine_missing(
            "a local image registry (LILYPAD_TEST_REGISTRY, from scripts/registry-up.sh)",
            "LILYPAD_REQUIRE_DOCKER",
            "LILYPAD_TEST_REGISTRY is not set",
        );
        return;
    };
    let d = bollard_client().await;
    let tag = format!("t{}", std::process::id());
    let image = push_fresh_image(&d, &registry, &tag).await;

    let repo = crate::sandbox_suite::fixture();
    let (r, lines) = open(&spec(repo.path(), &image)).await;
    let sb = r.unwrap_or_else(|e| panic!("the sandbox starts from the pulled image: {e}"));
    let out = sb
        .exec(ExecRequest {
            command: "wc -c < /blob".into(),
            cwd: sb.root().into(),
            timeout: Duration::from_secs(30),
            keep_bytes: 1024,
            stream: None,
        })
        .await
        .unwrap();
    assert_eq!(out.exit, ExecExit::Exited(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout.head).trim(),
        BLOB.to_string()
    );
    sb.close().await.unwrap();

    assert!(
        lines
            .iter()
            .any(|l| l == &format!("{image} is not on the Docker engine: pulling it")),
        "{lines:?}"
    );
    // The base layer was on the engine; the random one was downloaded, all of it (random
    // bytes do not compress, so the download is the blob's size).
    let last = lines.last().unwrap();
    assert!(
        last.starts_with(&format!("pulled {image}: 2 of 2 layers, 3.0 MB of 3.0 MB")),
        "{lines:?}"
    );
    let rm = RemoveImageOptionsBuilder::default().force(true).build();
    d.remove_image(&image, Some(rm), None).await.unwrap();
}

#[tokio::test]
async fn copying_a_repository_out_of_a_missing_image_pulls_it_first() {
    if !engine().await {
        return;
    }
    let into = tempfile::tempdir().unwrap();
    let err = extract_dir("127.0.0.1:1/lilypad-nothing:1", "/repo", into.path())
        .await
        .expect_err("nothing to pull from");
    assert!(
        matches!(err, SandboxError::Image(ImageError::PullFailed { .. })),
        "{err:?}"
    );
    let Ok(registry) = std::env::var("LILYPAD_TEST_REGISTRY") else {
        engine_missing(
            "a local image registry (LILYPAD_TEST_REGISTRY, from scripts/registry-up.sh)",
            "LILYPAD_REQUIRE_DOCKER",
            "LILYPAD_TEST_REGISTRY is not set",
        );
        return;
    };
    let d = bollard_client().await;
    let tag = format!("x{}", std::process::id());
    let image = push_fresh_image(&d, &registry, &tag).await;
    let repo = extract_dir(&image, "/repo", into.path()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(repo.join("marker")).unwrap().trim(),
        tag
    );
    assert!(d.inspect_image(&image).await.is_ok(), "pulled and kept");
    let rm = RemoveImageOptionsBuilder::default().force(true).build();
    d.remove_image(&image, Some(rm), None).await.unwrap();
}
