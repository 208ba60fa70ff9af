//! The setup command (`sandbox.setup`, e.g. `pip install -e .[test]`): run once in a container
//! from the sandbox image with a copy of the repository at `/workspace` and the build network,
//! then committed as the image sessions start from (with the network off).
//!
//! Owns: the cache key, SHA-256 of the base image's id, the command and the digest of the
//! repository copy (what the session's workspace would hold, `.git` left out), shortened to the
//! tag `lilypad-setup:<16 hex digits>`; reusing an image that carries it; the setup container
//! (root, the build network, the sandbox's memory, CPU and pid limits, Lilypad's labels so a
//! crashed run is swept like a session), its output as progress, and the log's tail in a
//! failure.
//!
//! What survives: everything the command changes outside `/workspace` (packages, tools). The
//! session's own workspace is mounted (Docker) or unpacked (Kubernetes) over `/workspace`, so
//! what the command wrote inside it is not seen; an editable install still works, because it
//! points at `/workspace`, where the session's copy is.

use super::build::{present, Tail};
use super::context::{self, DockerIgnore};
use super::{ImageError, Progress};
use crate::sandbox::docker::{owner_labels, DockerSettings, WORKSPACE};
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerConfig, ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CommitContainerOptionsBuilder, CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;
use std::path::Path;
use std::time::Duration;

/// Repository part of every setup image's name.
pub const SETUP_REPO: &str = "lilypad-setup";

fn docker_err(context: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> ImageError {
    let context = context.into();
    move |source| ImageError::Docker {
        context,
        source: Box::new(source),
    }
}

/// The repository as the session would see it, packed under `workspace/`.
fn workspace_tar(repo: &Path) -> Result<context::Packed, ImageError> {
    let copy = tempfile::Builder::new()
        .prefix("lilypad-setup-")
        .tempdir()
        .map_err(|source| ImageError::Context {
            path: repo.to_path_buf(),
            source,
        })?;
    crate::sandbox::workspace::copy_repo(repo, copy.path()).map_err(|e| ImageError::Copy {
        path: repo.to_path_buf(),
        source: Box::new(e),
    })?;
    let prefix = format!("{}/", WORKSPACE.trim_start_matches('/'));
    context::pack(copy.path(), &prefix, &DockerIgnore::default(), &[])
}

/// The tag the setup of `repo` on `image` (whose engine id is `image_id`) commits to.
fn tag(image_id: &str, command: &str, workspace_digest: &str) -> String {
    let key = context::digest_of(&[
        image_id.as_bytes(),
        command.as_bytes(),
        workspace_digest.as_bytes(),
    ]);
    format!("{SETUP_REPO}:{}", &key[..16])
}

async fn image_id(docker: &Docker, image: &str) -> Result<String, ImageError> {
    let info = docker.inspect_image(image).await.map_err(|e| match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        } => ImageError::NoImage {
            image: image.to_string(),
        },
        other => docker_err(format!("inspecting image {image}"))(other),
    })?;
    Ok(info.id.unwrap_or_else(|| image.to_string()))
}

/// The tag the setup would commit to, and whether it is there already (for `lilypad doctor`).
pub async fn cached(
    docker: &Docker,
    image: &str,
    repo: &Path,
    command: &str,
) -> Result<(String, bool), ImageError> {
    let id = image_id(docker, image).await?;
    let t = tag(&id, command, &workspace_tar(repo)?.digest);
    let there = present(docker, &t).await?;
    Ok((t, there))
}

/// Run `command` on `image` with a copy of `repo` (or reuse its earlier result); returns the
/// committed image's tag.
pub async fn run(
    docker: &Docker,
    image: &str,
    repo: &Path,
    command: &str,
    s: &DockerSettings,
    progress: Progress<'_>,
) -> Result<String, ImageError> {
    let id = image_id(docker, image).await?;
    let ws = workspace_tar(repo)?;
    let tag = tag(&id, command, &ws.digest);
    if present(docker, &tag).await? {
        progress(&format!(
            "using {tag}: `{command}` ran earlier on these files"
        ));
        return Ok(tag);
    }
    progress(&format!(
        "running the setup command `{command}` (network {} while it runs)",
        s.build_network
    ));
    let container = create(docker, image, s).await?;
    let result = setup_in(docker, &container, ws.tar, command, &tag, s, progress).await;
    let opts = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    // The setup's outcome is what to report; a container left behind is swept later.
    let _ = docker.remove_container(&container, Some(opts)).await;
    result?;
    progress(&format!("committed the setup as {tag}"));
    Ok(tag)
}

async fn create(docker: &Docker, image: &str, s: &DockerSettings) -> Result<String, ImageError> {
    let labels = owner_labels("setup");
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            "while :; do sleep 3600; done".into(),
        ]),
        entrypoint: Some(vec![]),
        user: Some("0:0".into()),
        env: Some(vec![
            "HOME=/root".into(),
            "LANG=C.UTF-8".into(),
            "TERM=dumb".into(),
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ]),
        labels: Some(labels),
        host_config: Some(HostConfig {
            network_mode: Some(s.build_network.clone()),
            security_opt: Some(vec!["no-new-privileges".into()]),
            pids_limit: Some(s.pids),
            memory: Some(s.memory_bytes),
            memory_swap: Some(s.memory_bytes),
            nano_cpus: Some((s.cpus * 1e9) as i64),
            init: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let name = format!("lilypad-setup-{}", crate::sandbox::session_id());
    let opts = CreateContainerOptionsBuilder::default().name(&name).build();
    let created = docker
        .create_container(Some(opts), body)
        .await
        .map_err(docker_err(format!(
            "creating the setup container from {image}"
        )))?;
    docker
        .start_container(&created.id, None)
        .await
        .map_err(docker_err("starting the setup container"))?;
    Ok(created.id)
}

async fn setup_in(
    docker: &Docker,
    container: &str,
    tar: Vec<u8>,
    command: &str,
    tag: &str,
    s: &DockerSettings,
    progress: Progress<'_>,
) -> Result<(), ImageError> {
    let opts = UploadToContainerOptionsBuilder::default().path("/").build();
    docker
        .upload_to_container(container, Some(opts), bollard::body_full(tar.into()))
        .await
        .map_err(docker_err(
            "copying the repository into the setup container",
        ))?;
    // bash when the image has it (as the model's commands run), else sh; `$0` is the command.
    let script = "cd /workspace && if [ -x /bin/bash ]; then exec /bin/bash -lc \"$0\"; \
                  else exec sh -c \"$0\"; fi";
    let exec = docker
        .create_exec(
            container,
            CreateExecOptions::<String> {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(vec![
                    "sh".into(),
                    "-c".into(),
                    script.into(),
                    command.into(),
                ]),
                user: Some("0:0".into()),
                working_dir: Some(WORKSPACE.into()),
                ..Default::default()
            },
        )
        .await
        .map_err(docker_err("starting the setup command"))?;
    let started = docker
        .start_exec(&exec.id, None)
        .await
        .map_err(docker_err("starting the setup command"))?;
    let mut tail = Tail::default();
    if let StartExecResults::Attached { mut output, .. } = started {
        let timeout = tokio::time::sleep(Duration::from_secs(s.setup_timeout_secs));
        tokio::pin!(timeout);
        loop {
            tokio::select! {
                item = output.next() => match item {
                    Some(Ok(LogOutput::StdOut { message } | LogOutput::StdErr { message })) => {
                        let text = String::from_utf8_lossy(&message);
                        tail.push(&text);
                        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                            progress(line);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(docker_err("reading the setup's output")(e)),
                    None => break,
                },
                _ = &mut timeout => {
                    return Err(ImageError::SetupFailed {
                        command: command.to_string(),
                        how: format!("did not finish within {} s", s.setup_timeout_secs),
                        tail: tail.text(),
                    });
                }
            }
        }
    }
    let mut code = None;
    for _ in 0..100 {
        let info = docker
            .inspect_exec(&exec.id)
            .await
            .map_err(docker_err("reading the setup's exit code"))?;
        if info.running != Some(true) {
            code = info.exit_code;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if code != Some(0) {
        return Err(ImageError::SetupFailed {
            command: command.to_string(),
            how: format!(
                "exited with {}",
                code.map_or("no status".into(), |c| c.to_string())
            ),
            tail: tail.text(),
        });
    }
    let (repo, version) = tag.split_once(':').unwrap_or((tag, "latest"));
    let opts = CommitContainerOptionsBuilder::default()
        .container(container)
        .repo(repo)
        .tag(version)
        .comment(&format!("lilypad setup: {command}"))
        .pause(true)
        .build();
    docker
        .commit_container(opts, ContainerConfig::default())
        .await
        .map_err(docker_err("committing the setup container"))?;
    Ok(())
}
