//! Mined tasks in a batch (lines written by `lilypad tasks mine`, `crate::tasks`): a SWE-bench
//! instance plus `test_cmd`. The agent works on a checkout of the repository at `base_commit`
//! (the clone under `--repos-dir`, else `repo` as a local path), without the test patch; its
//! sandbox runs the task's image (`image_name`). Verification ([`verify`]) is in a fresh
//! sandbox of the same image on a fresh checkout, never the agent's: the agent's patch, the
//! test files put back as they were, the test patch, then `FAIL_TO_PASS` and `PASS_TO_PASS`
//! (`crate::tasks::score`); all passing is a reward of 1.0, anything else 0.0.
//!
//! Owns: the kind's preparation and its verifier's reward. Does not own: the scoring rule
//! (`crate::tasks::score`) or running the agent (`super::batch`).

use super::kind::{Place, PrepareError};
use super::sources::{checkout_at, find_clone, SourceError, SweBenchLine, TaskRepo};
use super::verify::{Verification, Verified};
use crate::config::Settings;
use crate::launch::check::CheckOutcome;
use crate::sandbox::{SandboxKind, SandboxSettings};
use crate::tasks::score::{score, TaskTests};
use crate::tasks::{MineError, TestRunner};
use std::path::PathBuf;
use std::time::Duration;

/// How long the verifier's test run may take.
pub const VERIFIER_SECS: u64 = 1800;

/// A mined task: its SWE-bench fields and its tests.
#[derive(Debug, Clone, PartialEq)]
pub struct MinedTask {
    pub line: SweBenchLine,
    pub tests: TaskTests,
}

/// What the verifier needs: the repository (the clone the attempt was checked out from), the
/// base and the tests.
#[derive(Debug, Clone, PartialEq)]
pub struct TestsCheck {
    pub repository: PathBuf,
    pub base_commit: String,
    pub tests: TaskTests,
}

impl MinedTask {
    /// An attempt's repository (the base commit checked out) and its verification; `image`
    /// is the task's image as the sandbox runs it.
    pub async fn prepare(
        &self,
        id: &str,
        image: Option<&str>,
        place: &Place<'_>,
        settings: &mut Settings,
    ) -> Result<(TaskRepo, Verification), PrepareError> {
        if let Some(named) = image {
            let s = &mut settings.sandbox;
            // Already the reference the sandbox runs (under `--image-registry`).
            s.image = Some(named.to_string());
            s.image_registry = None;
            s.dockerfile = None;
            s.devcontainer = false;
        }
        let clone = match place.repos_dir {
            Some(dir) => find_clone(dir, &self.line.repo).ok_or_else(|| SourceError::NoClone {
                id: id.to_string(),
                repo: self.line.repo.clone(),
                dir: dir.to_path_buf(),
                flat: self.line.repo.replace('/', "__"),
            })?,
            None => {
                let path = PathBuf::from(&self.line.repo);
                if !path.is_dir() {
                    return Err(SourceError::NotLocal {
                        id: id.to_string(),
                        repo: self.line.repo.clone(),
                        flat: self.line.repo.replace('/', "__"),
                    }
                    .into());
                }
                path
            }
        };
        let (i, c, b) = (id.to_string(), clone.clone(), self.line.base_commit.clone());
        let repo = tokio::task::spawn_blocking(move || checkout_at(&i, &c, &b)).await??;
        let check = TestsCheck {
            repository: clone,
            base_commit: self.line.base_commit.clone(),
            tests: self.tests.clone(),
        };
        Ok((repo, Verification::Tests(Box::new(check))))
    }
}

/// Verify `patch` at `check`'s task in a fresh sandbox of `kind` with the agent's settings
/// `base` (see the module docs).
pub async fn verify(
    check: &TestsCheck,
    patch: &[u8],
    kind: SandboxKind,
    base: &SandboxSettings,
) -> Result<Verified, MineError> {
    let runner = TestRunner {
        settings: base.clone(),
        kind: Some(kind),
        test_cmd: check.tests.test_cmd.clone(),
        timeout: Duration::from_secs(VERIFIER_SECS),
        pool: None,
        closing: Default::default(),
    };
    let scored = score(
        &check.repository,
        &check.base_commit,
        patch,
        &check.tests,
        &runner,
    )
    .await?;
    let mut tail = scored.output_tail;
    if !scored.resolved {
        tail = format!("not resolved: {}\n{tail}", scored.why_not);
    }
    Ok(Verified {
        run: CheckOutcome {
            passed: scored.resolved,
            exit_code: scored.exit_code,
            timed_out: scored.timed_out,
            output_tail: tail,
            seconds: scored.seconds,
        },
        reward: Some(if scored.resolved { 1.0 } else { 0.0 }),
    })
}
