//! A batch's task: what every task has ([`BatchTask`]: its id and its text) and what its kind
//! adds ([`TaskKind`]): a line of a tasks file in Lilypad's form or as SWE-bench publishes it
//! ([`super::sources`]), a Harbor task folder ([`super::harbor`]) or a CVE of PatchEval's
//! dataset ([`super::patcheval`]). Each kind owns the three things that differ between them:
//! the preparation of an attempt (its repository, its sandbox's image and settings, what is
//! hidden from the agent), its verification after the agent and the reward that verification
//! gives ([`super::verify`]). Tasks mined from a repository's history (`lilypad tasks mine`)
//! are a kind of their own ([`super::mined`]): SWE-bench lines whose extra fields (`test_cmd`,
//! the tests and the test patch) give them a verifier, which plain SWE-bench lines lack here.
//!
//! Owns: the kinds, which image a task names, and dispatching an attempt's preparation to its
//! kind. Does not own: reading the sources (each kind's module) or running the attempt
//! (`super::batch`, `super::run_task`).

use super::harbor::HarborTask;
use super::mined::MinedTask;
use super::patcheval::{PatchEvalError, PatchEvalTask};
use super::sources::{LilypadLine, SourceError, SweBenchLine, TaskRepo};
use super::verify::Verification;
use crate::config::Settings;
use crate::launch::SessionOptions;
use crate::sandbox::SandboxError;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// One task of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchTask {
    /// The task's key in the results (unique in the batch, usable as a folder name).
    pub instance_id: String,
    /// The task text, sent as the first user message.
    pub task: String,
    pub kind: TaskKind,
}

/// What a task is besides its id and text, by where it came from.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskKind {
    /// A line in Lilypad's form: a local repository (or a clone under `--repos-dir`).
    Lilypad(LilypadLine),
    /// A SWE-bench instance: "owner/name" checked out at `base_commit`, or its image's checkout.
    SweBench(SweBenchLine),
    /// A Harbor task folder: its own image, and its verifier in the agent's sandbox.
    Harbor(HarborTask),
    /// A PatchEval CVE: its image's `/workspace`, and its verifier in a fresh sandbox.
    PatchEval(PatchEvalTask),
    /// A task mined from a repository's history: a SWE-bench instance at `base_commit`, its
    /// tests run over the attempt in a fresh sandbox.
    Mined(MinedTask),
}

/// What an attempt's preparation needs of its batch.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The repository of tasks that name none (`--repo`).
    pub default_repo: &'a Path,
    /// Local clones of "owner/name" repositories (`--repos-dir`).
    pub repos_dir: Option<&'a Path>,
    /// Where a task's image holds its repository (`--image-workdir`, with `--image-template`
    /// and without `--repos-dir`).
    pub image_workdir: Option<&'a str>,
    /// Whether the run set its own wall time, which then holds over a task's.
    pub run_wall_time: bool,
}

/// An attempt made ready to run: its repository, and how it is verified afterwards.
#[derive(Debug)]
pub struct Prepared {
    pub repo: TaskRepo,
    pub verification: Verification,
}

/// Why an attempt could not be prepared (the attempt is recorded with this error).
#[derive(Debug, Error)]
pub enum PrepareError {
    /// The repository was not found or not checked out.
    #[error(transparent)]
    Repository(#[from] SourceError),
    #[error("preparing the repository: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("a folder for {what}: {source}")]
    Scratch {
        what: &'static str,
        #[source]
        source: SandboxError,
    },
    #[error("{dir} in {image}: {source}")]
    Extract {
        image: String,
        dir: String,
        #[source]
        source: SandboxError,
    },
    /// A Harbor task's image could not be built or read.
    #[error("Harbor task {}: {source}", task.display())]
    HarborImage {
        task: PathBuf,
        #[source]
        source: SandboxError,
    },
    #[error("Harbor task {}: an empty workspace: {source}", task.display())]
    HarborWorkspace {
        task: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("PatchEval image {image}: {source}")]
    PatchEval {
        image: String,
        #[source]
        source: PatchEvalError,
    },
}

impl BatchTask {
    /// A task in Lilypad's form on the run's repository (`--repo`).
    pub fn lilypad(instance_id: impl Into<String>, task: impl Into<String>) -> Self {
        Self {
            instance_id: instance_id.into(),
            task: task.into(),
            kind: TaskKind::Lilypad(LilypadLine::default()),
        }
    }

    /// The image the task names: its own, else (for a line) the one `--image-template` makes
    /// for it; none for a Harbor task, which builds its own.
    pub fn image(&self, template: Option<&str>) -> Option<String> {
        let own = match &self.kind {
            TaskKind::Lilypad(l) => l.image.as_ref(),
            TaskKind::SweBench(l) => l.image.as_ref(),
            TaskKind::Mined(m) => m.line.image.as_ref(),
            TaskKind::PatchEval(p) => return Some(p.image.clone()),
            TaskKind::Harbor(_) => return None,
        };
        own.cloned()
            .or_else(|| template.map(|t| super::sources::image_for(t, &self.instance_id)))
    }

    /// Replace the image the task names by `image` (its pinned reference); a Harbor task
    /// names none, and keeps the one it builds.
    pub fn pin_image(&mut self, image: String) {
        match &mut self.kind {
            TaskKind::Lilypad(l) => l.image = Some(image),
            TaskKind::SweBench(l) => l.image = Some(image),
            TaskKind::Mined(m) => m.line.image = Some(image),
            TaskKind::PatchEval(p) => p.image = image,
            TaskKind::Harbor(_) => {}
        }
    }

    /// Whether the task runs in a sandbox of its own making (an image it names or builds),
    /// not in one like every other attempt's.
    pub fn own_sandbox(&self, template: Option<&str>) -> bool {
        matches!(self.kind, TaskKind::Harbor(_)) || self.image(template).is_some()
    }

    /// Prepare an attempt at the task: its kind puts its repository in place and tells
    /// `settings` and `opts` how its sandbox and session run. `image` is the image the task
    /// names (see [`BatchTask::image`]) as the sandbox runs it (under `--image-registry`).
    pub async fn prepare(
        &self,
        image: Option<&str>,
        place: &Place<'_>,
        settings: &mut Settings,
        opts: &mut SessionOptions,
    ) -> Result<Prepared, PrepareError> {
        let (repo, verification) = match &self.kind {
            TaskKind::Lilypad(l) => {
                let repo = super::sources::prepare_line(
                    &self.instance_id,
                    l.repo.as_deref(),
                    None,
                    image,
                    place,
                    settings,
                )
                .await?;
                (repo, Verification::None)
            }
            TaskKind::SweBench(l) => {
                let repo = super::sources::prepare_line(
                    &self.instance_id,
                    Some(&l.repo),
                    Some(&l.base_commit),
                    image,
                    place,
                    settings,
                )
                .await?;
                (repo, Verification::None)
            }
            TaskKind::Mined(m) => m.prepare(&self.instance_id, image, place, settings).await?,
            TaskKind::Harbor(h) => {
                let repo = h.prepare(place.run_wall_time, settings, opts).await?;
                (repo, Verification::Harbor(h.clone()))
            }
            TaskKind::PatchEval(p) => {
                // The image as the sandbox runs it, for the agent and the verifier alike.
                let image = image.unwrap_or(&p.image).to_string();
                let repo = p
                    .prepare(&image, place.run_wall_time, settings, opts)
                    .await?;
                (repo, Verification::PatchEval { image })
            }
        };
        Ok(Prepared { repo, verification })
    }
}

/// Copy the directory `dir` of `image` out of it for one attempt, into a scratch folder
/// removed with the returned repository (see [`crate::sandbox::image::extract`]).
pub async fn extract(image: &str, dir: &str, what: &'static str) -> Result<TaskRepo, PrepareError> {
    let tmp = crate::sandbox::workspace::scratch_dir()
        .map_err(|source| PrepareError::Scratch { what, source })?;
    let path = crate::sandbox::image::extract::extract_dir(image, dir, tmp.path())
        .await
        .map_err(|source| PrepareError::Extract {
            image: image.to_string(),
            dir: dir.to_string(),
            source,
        })?;
    Ok(TaskRepo::in_temp(path, tmp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swebench(image: Option<&str>) -> BatchTask {
        BatchTask {
            instance_id: "o__n-1".into(),
            task: "t".into(),
            kind: TaskKind::SweBench(SweBenchLine {
                repo: "o/n".into(),
                base_commit: "abc".into(),
                image: image.map(str::to_string),
            }),
        }
    }

    #[test]
    fn a_task_names_its_own_image_before_the_template() {
        let t = "r/{instance}:1";
        assert_eq!(
            swebench(None).image(Some(t)).as_deref(),
            Some("r/o_1776_n-1:1")
        );
        assert_eq!(
            swebench(Some("own:2")).image(Some(t)).as_deref(),
            Some("own:2")
        );
        assert_eq!(swebench(None).image(None), None);
        assert!(!BatchTask::lilypad("a", "t").own_sandbox(None));
        assert!(BatchTask::lilypad("a", "t").own_sandbox(Some(t)));
        let mut pinned = swebench(None);
        pinned.pin_image("r@sha256:00".into());
        assert_eq!(pinned.image(Some(t)).as_deref(), Some("r@sha256:00"));
    }
}
