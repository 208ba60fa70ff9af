//! What verifies an attempt after its agent has finished, as the task's kind says
//! ([`Verification`]), and how the verifier's run and reward become the attempt's check
//! ([`Verified::score`]). A kind verifies either in the agent's own sandbox (Harbor: its tests
//! copied in only then) or in a fresh sandbox of the task's image (PatchEval: the patch run by
//! the image's own script; a mined task: its tests over the patch, `super::mined`); a task
//! with neither is judged by the run's `--check` alone.
//!
//! Owns: choosing where the verifier runs, closing the agent's sandbox at the right moment
//! around it, and the rule that a verified attempt passes at a reward of 1 or more (Leaf's
//! `resolved`). Does not own: what each verifier does and how it reads its reward
//! (`super::harbor::verify`, `super::patcheval::verify`), or the generic check
//! (`crate::launch::check`).

use super::harbor::HarborTask;
use crate::launch::check::CheckOutcome;
use crate::sandbox::{Sandbox, SandboxKind, SandboxSettings};

/// How an attempt is verified after its agent (each kind's preparation says).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Verification {
    /// No verifier of the task's own: the run's `--check`, if any, decides.
    #[default]
    None,
    /// Harbor's `tests/test.sh`, in the agent's sandbox after the agent.
    Harbor(HarborTask),
    /// PatchEval's `fix-run.sh`, in a fresh sandbox of `image` (the reference the agent's
    /// sandbox ran, pinned and under `--image-registry`).
    PatchEval { image: String },
    /// A mined task's `FAIL_TO_PASS` and `PASS_TO_PASS` over the patch and the test patch, in
    /// a fresh sandbox of the agent's image.
    Tests(Box<super::mined::TestsCheck>),
}

/// A verifier's run (its exit status and output) and the reward it gave.
#[derive(Debug, Clone)]
pub struct Verified {
    pub run: CheckOutcome,
    /// `None`: the verifier gave no reward (or none that reads as a number).
    pub reward: Option<f64>,
}

impl Verified {
    /// The verifier's run as the attempt's check: passed at a reward of 1 or more, as Leaf
    /// counts `resolved`, whatever the verifier's exit status.
    pub fn score(self) -> CheckOutcome {
        CheckOutcome {
            passed: self.reward.is_some_and(|r| r >= 1.0),
            ..self.run
        }
    }
}

impl Verification {
    /// Verify the agent's `patch`, closing the agent's `sandbox` (before a fresh sandbox
    /// starts, after a verifier that runs in it); `None` when the task has no verifier.
    /// `kind` and `base` are the sandbox's kind and settings, for a fresh sandbox.
    pub async fn run(
        &self,
        sandbox: &dyn Sandbox,
        patch: &[u8],
        kind: SandboxKind,
        base: &SandboxSettings,
    ) -> Option<Result<Verified, super::TaskError>> {
        match self {
            Self::None => {
                close(sandbox).await;
                None
            }
            Self::Harbor(task) => {
                let verified = super::harbor::verify(sandbox, task).await;
                close(sandbox).await;
                Some(verified.map_err(Into::into))
            }
            Self::PatchEval { image } => {
                close(sandbox).await;
                Some(
                    super::patcheval::verify(image, patch, kind, base)
                        .await
                        .map_err(Into::into),
                )
            }
            Self::Tests(check) => {
                close(sandbox).await;
                Some(
                    super::mined::verify(check, patch, kind, base)
                        .await
                        .map_err(Into::into),
                )
            }
        }
    }
}

/// Close the agent's sandbox; a sandbox that does not close leaves a leftover the next
/// batch sweeps, and changes no result.
pub async fn close(sandbox: &dyn Sandbox) {
    if let Err(e) = sandbox.close().await {
        tracing::warn!(error = %e, "the attempt's sandbox did not close");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verified_attempt_passes_on_its_reward_not_its_exit_status() {
        let run = |passed| CheckOutcome {
            passed,
            exit_code: Some(if passed { 0 } else { 1 }),
            timed_out: false,
            output_tail: String::new(),
            seconds: 0.0,
        };
        let scored = |passed, reward| {
            Verified {
                run: run(passed),
                reward,
            }
            .score()
            .passed
        };
        assert!(scored(false, Some(1.0)));
        assert!(!scored(true, Some(0.5)));
        assert!(!scored(true, None));
    }
}
