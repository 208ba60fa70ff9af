//! Taking a repository out of an image: the directory an image documents as its checkout
//! (`/testbed` in SWE-bench's images) copied to the host from a created, never started
//! container, every file and its `.git`, so that the session's workspace can take it as it is
//! ([`crate::sandbox::workspace::Workspace::adopt`]) and the workspace is mounted back at the
//! same path ([`crate::sandbox::docker::DockerSettings::workdir`]). The session patch is then
//! the diff from the image's checkout, and what the image installed against that directory
//! (an editable package) sees the session's files.
//!
//! Owns: the copy (an archive download, unpacked with [`crate::sandbox::tarball::unpack`]'s
//! checks) and removing the container again. An image the engine lacks is pulled first
//! (`super::pull`, its progress logged). Does not own: the session's container, or the
//! workspace made from the copy (`crate::sandbox::workspace`).

use super::ImageError;
use crate::sandbox::docker::{connect, owner_labels};
use crate::sandbox::SandboxError;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;
use std::path::{Path, PathBuf};

fn docker_err(context: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> SandboxError {
    let context = context.into();
    move |source| {
        SandboxError::Image(ImageError::Docker {
            context,
            source: Box::new(source),
        })
    }
}

/// Copy `dir` (absolute) out of `image` into `into` (an existing, empty directory); returns
/// the copy's path, `into/<last component of dir>`.
pub async fn extract_dir(image: &str, dir: &str, into: &Path) -> Result<PathBuf, SandboxError> {
    let docker = connect().await?.0;
    let progress = |line: &str| tracing::info!(target: "lilypad::sandbox", "{line}");
    super::pull::ensure(&docker, image, &progress).await?;
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(vec![]),
        cmd: Some(vec!["true".into()]),
        network_disabled: Some(true),
        labels: Some(owner_labels("extract")),
        ..Default::default()
    };
    let name = format!("lilypad-extract-{}", crate::sandbox::session_id());
    let opts = CreateContainerOptionsBuilder::default().name(&name).build();
    let created = docker
        .create_container(Some(opts), body)
        .await
        .map_err(docker_err(format!("creating a container from {image}")))?;
    let copied = download(&docker, &created.id, dir, into).await;
    let rm = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    // A failed removal is left to the leftover sweep (the container carries our labels).
    let _ = docker.remove_container(&created.id, Some(rm)).await;
    copied?;
    let last = Path::new(dir)
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let path = into.join(last);
    if !path.is_dir() {
        return Err(SandboxError::NotADirectory {
            path: format!("{image}:{dir}"),
        });
    }
    Ok(path)
}

async fn download(
    docker: &bollard::Docker,
    id: &str,
    dir: &str,
    into: &Path,
) -> Result<(), SandboxError> {
    let opts = DownloadFromContainerOptionsBuilder::default()
        .path(dir)
        .build();
    let mut stream = docker.download_from_container(id, Some(opts));
    let mut tar = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(docker_err(format!("copying {dir} out of the image")))?;
        tar.extend_from_slice(&chunk);
    }
    let dest = into.to_path_buf();
    tokio::task::spawn_blocking(move || crate::sandbox::tarball::unpack(&tar, &dest))
        .await
        .map_err(|e| SandboxError::io("unpacking", dir, std::io::Error::other(e)))??;
    Ok(())
}
