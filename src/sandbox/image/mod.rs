//! Where a sandbox's image comes from, and making it ready before the session starts: a named
//! image, a Dockerfile (named in the config, or by the repository's
//! `.devcontainer/devcontainer.json`) built through the Docker engine, and the setup command
//! committed on top of it; then the check that the image holds what the repository needs.
//!
//! Owns: choosing the source ([`prepare`], [`kube_image`]), the typed errors of building and
//! setting up ([`ImageError`]), and progress reporting ([`Progress`]). The parts: devcontainer
//! files (`devcontainer`), build contexts and their digests (`context`), the cached build
//! (`build`), the cached setup (`setup`), pulling a named image the engine lacks (`pull`), the
//! toolchain check (`check`), image references and registry prefixes (`reference`), and digest
//! locks (`lock`).
//!
//! Does not own: the session's container or pod (`crate::sandbox::container`), the settings
//! section (`crate::sandbox::settings`).
//!
//! Invariant: the network is on only while an image is built or set up (`build_network`); the
//! session's container always gets the sandbox's own network setting (`none` by default).

pub mod build;
pub mod check;
pub mod context;
pub mod devcontainer;
pub mod extract;
pub mod lock;
pub mod pull;
pub mod reference;
pub mod setup;

use crate::sandbox::docker::{DockerClient, DockerSettings};
use crate::sandbox::kube::KubeSettings;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Receives one line of progress at a time (build steps, pull progress, setup output).
pub type Progress<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A Dockerfile and its build context (absolute paths).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageBuild {
    pub dockerfile: PathBuf,
    pub context: PathBuf,
}

/// Why the sandbox image could not be made ready.
#[derive(Debug, Error)]
pub enum ImageError {
    /// The repository's top-level entries could not be listed for the toolchain check.
    #[error("cannot list the repository {path} to check the image against it: {source}")]
    Listing {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Devcontainer {
        path: PathBuf,
        #[source]
        source: devcontainer::DevcontainerError,
    },
    #[error("{path}: bad .dockerignore pattern {pattern:?}: {source}")]
    Ignore {
        path: PathBuf,
        pattern: String,
        #[source]
        source: globset::Error,
    },
    #[error("packing {path}: {source}")]
    Context {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("copying {path} for the setup: {source}")]
    Copy {
        path: PathBuf,
        #[source]
        source: Box<crate::sandbox::SandboxError>,
    },
    #[error("the image {image} is not on the Docker engine\n  hint: pull or build it first (`docker pull {image}`), or choose another with --image or sandbox.image")]
    NoImage { image: String },
    #[error("the image {image} is not on the Docker engine, and pulling it failed: {source}\n  hint: pull or build it first (`docker pull {image}`), or choose another with --image or sandbox.image")]
    PullFailed {
        image: String,
        #[source]
        source: Box<bollard::errors::Error>,
    },
    #[error("building the sandbox image from {} failed: {message}\n--- last lines of the build log ---\n{tail}", dockerfile.display())]
    BuildFailed {
        dockerfile: PathBuf,
        message: String,
        tail: String,
    },
    #[error("the setup command `{command}` {how}\n--- last lines of its output ---\n{tail}\n  hint: fix sandbox.setup in the config file (or --setup)")]
    SetupFailed {
        command: String,
        how: String,
        tail: String,
    },
    #[error("the kube sandbox cannot build images ({what})\n  hint: build and push the image where the cluster's nodes can pull it, then set sandbox.image (or --image)")]
    KubeCannotBuild { what: String },
    /// Boxed, as in [`crate::sandbox::RuntimeError`]: bollard's error is large.
    #[error("docker: {context}: {source}")]
    Docker {
        context: String,
        #[source]
        source: Box<bollard::errors::Error>,
    },
}

/// Where a Docker sandbox's image comes from, before the setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Used as it is.
    Named(String),
    /// Built from a Dockerfile; `from` says who asked (the config, or a devcontainer.json).
    Build { build: ImageBuild, from: String },
}

/// The source the settings and the repository name: `build`, else (when `devcontainer` is on)
/// the repository's devcontainer.json, else `image`.
pub fn source(repo: &Path, s: &DockerSettings) -> Result<Source, ImageError> {
    if let Some(b) = &s.build {
        return Ok(Source::Build {
            build: b.clone(),
            from: "sandbox.dockerfile".into(),
        });
    }
    if s.devcontainer {
        if let Some(path) = devcontainer::find(repo) {
            let from = path.display().to_string();
            return Ok(match devcontainer::load(&path)? {
                devcontainer::Devcontainer::Image(i) => Source::Named(i),
                devcontainer::Devcontainer::Build {
                    dockerfile,
                    context,
                } => Source::Build {
                    build: ImageBuild {
                        dockerfile,
                        context,
                    },
                    from,
                },
            });
        }
    }
    Ok(Source::Named(s.image.clone()))
}

/// Make the Docker sandbox's image ready: pull a named image the engine lacks, build it if it
/// comes from a Dockerfile, run the setup on it if there is one (builds and setups cached);
/// returns the image the session starts from.
pub async fn prepare(
    docker: &DockerClient,
    repo: &Path,
    s: &DockerSettings,
    progress: Progress<'_>,
) -> Result<String, ImageError> {
    let image = match source(repo, s)? {
        Source::Named(i) => {
            pull::ensure(&docker.0, &i, progress).await?;
            i
        }
        Source::Build { build: b, .. } => {
            build::build(docker, &b, &s.build_network, progress).await?
        }
    };
    match s.setup.as_deref().map(str::trim) {
        Some(cmd) if !cmd.is_empty() => setup::run(&docker.0, &image, repo, cmd, s, progress).await,
        _ => Ok(image),
    }
}

/// What `lilypad doctor` can say about the image without building anything: the image a
/// session would start from if it is ready, or a line on what the first session will do.
pub async fn describe_ready(
    docker: &DockerClient,
    repo: &Path,
    s: &DockerSettings,
) -> Result<(Option<String>, String), ImageError> {
    let docker = &docker.0;
    let (image, from) = match source(repo, s)? {
        Source::Named(i) => {
            if !build::present(docker, &i).await? {
                return Ok((
                    None,
                    format!("image {i} missing: the first session pulls it"),
                ));
            }
            (i.clone(), format!("image {i}"))
        }
        Source::Build { build: b, from } => {
            let tag = build::tag_for(&b)?;
            if !build::present(docker, &tag).await? {
                return Ok((
                    None,
                    format!(
                        "image from {} ({from}): not built yet, the first session builds {tag}",
                        b.dockerfile.display()
                    ),
                ));
            }
            (
                tag.clone(),
                format!("image {tag} built from {}", b.dockerfile.display()),
            )
        }
    };
    match s.setup.as_deref().map(str::trim) {
        Some(cmd) if !cmd.is_empty() => {
            let (tag, there) = setup::cached(docker, &image, repo, cmd).await?;
            if there {
                Ok((
                    Some(tag.clone()),
                    format!("{from}, setup `{cmd}` committed as {tag}"),
                ))
            } else {
                Ok((
                    Some(image),
                    format!("{from}; setup `{cmd}` not run yet for these files (the first session runs it)"),
                ))
            }
        }
        _ => Ok((Some(image), from)),
    }
}

/// The Kubernetes sandbox's image: `image`, or the one the repository's devcontainer.json names
/// (when `devcontainer` is on). A devcontainer that must be built, or a setup command, cannot
/// be honoured there.
pub fn kube_image(repo: &Path, s: &KubeSettings) -> Result<String, ImageError> {
    if let Some(cmd) = s.setup.as_deref().filter(|c| !c.trim().is_empty()) {
        return Err(ImageError::KubeCannotBuild {
            what: format!("sandbox.setup `{cmd}` runs only for docker"),
        });
    }
    if let Some(df) = &s.dockerfile {
        return Err(ImageError::KubeCannotBuild {
            what: format!(
                "sandbox.dockerfile {} is built only for docker",
                df.display()
            ),
        });
    }
    if s.devcontainer {
        if let Some(path) = devcontainer::find(repo) {
            return match devcontainer::load(&path)? {
                devcontainer::Devcontainer::Image(i) => Ok(i),
                devcontainer::Devcontainer::Build { dockerfile, .. } => {
                    Err(ImageError::KubeCannotBuild {
                        what: format!(
                            "{} asks for a build of {}",
                            path.display(),
                            dockerfile.display()
                        ),
                    })
                }
            };
        }
    }
    Ok(s.image.clone())
}

/// A task's own image (a Harbor task's environment) and the directory it works in.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskImage {
    pub image: String,
    /// The image's `WORKDIR` (`None` when it sets none, or `/`).
    pub workdir: Option<String>,
}

/// Build a task's image from its Dockerfile and context (cached by their files, see
/// [`build`]) on the Docker engine, with the build's `network`, and read where it works.
pub async fn task_image(
    b: &ImageBuild,
    network: &str,
) -> Result<TaskImage, crate::sandbox::SandboxError> {
    let docker = super::docker::connect().await?;
    let image = build::build(&docker, b, network, &|_| {}).await?;
    // An image that cannot be inspected right after its build has no workdir to offer; the
    // task then works at the default one.
    let workdir = docker
        .image_workdir(&image)
        .await
        .ok()
        .flatten()
        .filter(|w| w.starts_with('/') && w.len() > 1);
    Ok(TaskImage { image, workdir })
}
