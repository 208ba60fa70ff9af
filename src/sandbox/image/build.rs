//! Building a sandbox image from a Dockerfile through the Docker engine (bollard), cached.
//!
//! Owns: the cache key (the Dockerfile's path in the context and the digest of the context
//! with the Dockerfile, see `super::context`), the tag `lilypad-build:<first 16 hex digits>`,
//! reusing an image that already carries it, the build itself (the engine's classic builder,
//! network mode `build_network` while building, intermediate containers removed), progress
//! lines, and the tail of the build log in a failure. Does not own: where the Dockerfile comes
//! from (`super`), the session container (`crate::sandbox::docker`).

use super::context::{self, DockerIgnore};
use super::{ImageBuild, ImageError, Progress};
use crate::sandbox::docker::DockerClient;
use bollard::query_parameters::BuildImageOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::{HashMap, VecDeque};

/// Repository part of every built image's name.
pub const BUILD_REPO: &str = "lilypad-build";
/// Lines of the build log kept for an error.
const TAIL_LINES: usize = 30;
/// Name the Dockerfile gets in the context when it lives outside it.
const OUTSIDE_DOCKERFILE: &str = ".lilypad.Dockerfile";

/// The last lines of a log.
#[derive(Debug, Default)]
pub(super) struct Tail(VecDeque<String>);

impl Tail {
    pub(super) fn push(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            if self.0.len() == TAIL_LINES {
                self.0.pop_front();
            }
            self.0.push_back(line.to_string());
        }
    }

    pub(super) fn text(&self) -> String {
        self.0.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// The tag `b` builds to and the context to send.
fn plan(b: &ImageBuild) -> Result<(String, String, Vec<u8>), ImageError> {
    let dockerfile = std::fs::read(&b.dockerfile).map_err(|source| ImageError::Read {
        path: b.dockerfile.clone(),
        source,
    })?;
    let ignore = DockerIgnore::load(&b.context)?;
    let (name, extra) = match b.dockerfile.strip_prefix(&b.context) {
        Ok(rel) => {
            let rel = rel.to_string_lossy().replace('\\', "/");
            // Docker sends the Dockerfile even when .dockerignore leaves it out.
            let extra = match ignore.excludes(&rel) {
                true => vec![(rel.clone(), dockerfile.clone())],
                false => Vec::new(),
            };
            (rel, extra)
        }
        Err(_) => (
            OUTSIDE_DOCKERFILE.to_string(),
            vec![(OUTSIDE_DOCKERFILE.to_string(), dockerfile.clone())],
        ),
    };
    let packed = context::pack(&b.context, "", &ignore, &extra)?;
    let key = context::digest_of(&[name.as_bytes(), &dockerfile, packed.digest.as_bytes()]);
    Ok((format!("{BUILD_REPO}:{}", &key[..16]), name, packed.tar))
}

/// The tag `b` would build to, without building (for `lilypad doctor`).
pub fn tag_for(b: &ImageBuild) -> Result<String, ImageError> {
    plan(b).map(|(tag, _, _)| tag)
}

/// Whether the engine has `image`.
pub(super) async fn present(docker: &Docker, image: &str) -> Result<bool, ImageError> {
    match docker.inspect_image(image).await {
        Ok(_) => Ok(true),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(false),
        Err(source) => Err(ImageError::Docker {
            context: format!("inspecting image {image}"),
            source: Box::new(source),
        }),
    }
}

/// Build `b` (or reuse the image built from the same files) and return its tag.
pub async fn build(
    docker: &DockerClient,
    b: &ImageBuild,
    network: &str,
    progress: Progress<'_>,
) -> Result<String, ImageError> {
    let docker = &docker.0;
    let (tag, dockerfile, tar) = plan(b)?;
    if present(docker, &tag).await? {
        progress(&format!(
            "using {tag}, built earlier from {}",
            b.dockerfile.display()
        ));
        return Ok(tag);
    }
    progress(&format!(
        "building the sandbox image from {} (network {network} while building)",
        b.dockerfile.display()
    ));
    let labels = HashMap::from([("dev.lilypad.build", "1")]);
    let opts = BuildImageOptionsBuilder::default()
        .dockerfile(&dockerfile)
        .t(&tag)
        .rm(true)
        .forcerm(true)
        .networkmode(network)
        .labels(&labels)
        .build();
    let mut stream = docker.build_image(opts, None, Some(bollard::body_full(tar.into())));
    let mut tail = Tail::default();
    let fail = |message: String, tail: &Tail| ImageError::BuildFailed {
        dockerfile: b.dockerfile.clone(),
        message,
        tail: tail.text(),
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                if let Some(text) = &info.stream {
                    tail.push(text);
                    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                        progress(line);
                    }
                }
                if let Some(d) = info.error_detail {
                    return Err(fail(d.message.unwrap_or_default(), &tail));
                }
            }
            Err(e) => return Err(fail(e.to_string(), &tail)),
        }
    }
    if !present(docker, &tag).await? {
        return Err(fail("the engine reported no image".into(), &tail));
    }
    progress(&format!("built {tag}"));
    Ok(tag)
}
