//! Leaf's scoring and its two files, written beside Lilypad's predictions and report:
//! `results.jsonl` (one row per task and seed) and `summary.json` (the run's totals and
//! rates). Owns how a recorded attempt reads in Leaf's terms ([`judge`]) and the arithmetic
//! of the summary ([`summarize`]); the attempts themselves are `super::results`'.
//!
//! Leaf's terms: an attempt is `completed` or an `error`. An error is an attempt that could
//! not run (a sandbox or repository failure), whose agent ended in an error (a model call
//! that failed after its retries), or whose verifier wrote no reward or a negative one; it is
//! retried inside the run up to `max_attempts` tries and counted apart, never as unresolved.
//! A completed attempt is `resolved` when its reward is at least 1. Where there is no
//! verifier, a `--check` gives the reward: 1.0 when it passed, 0.0 when it failed; with
//! neither, the reward is null and the attempt completed (and unresolved).

use super::results::{write_atomic, AttemptResult};
use crate::protocol::FinishReason;
use crate::session::SessionError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// How an attempt ended, in Leaf's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Completed,
    Error,
}

/// One row of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub instance_id: String,
    /// The seed the attempt sampled with.
    pub seed: u32,
    /// Tries it took (1 unless an error was retried).
    pub attempt: u32,
    pub status: Status,
    pub reward: Option<f64>,
    /// How the agent's task ended (`answered`, `step_limit`, ...); null when it never ran.
    pub exit_reason: Option<String>,
    pub error: Option<String>,
}

impl Row {
    /// Completed with a reward of at least 1.
    pub fn resolved(&self) -> bool {
        self.status == Status::Completed && self.reward.is_some_and(|r| r >= 1.0)
    }
}

/// The verdict on one recorded attempt: its status, reward and error.
pub fn judge(r: &AttemptResult) -> (Status, Option<f64>, Option<String>) {
    if let Some(e) = &r.error {
        return (Status::Error, None, Some(e.clone()));
    }
    match r.finish_reason {
        None | Some(FinishReason::Error) => {
            return (
                Status::Error,
                None,
                Some(
                    "the agent's task ended in an error (a model call or the sandbox failed)"
                        .into(),
                ),
            );
        }
        Some(_) => {}
    }
    if r.verified || r.reward.is_some() {
        return match r.reward {
            Some(x) if x >= 0.0 => (Status::Completed, Some(x), None),
            Some(x) => (
                Status::Error,
                Some(x),
                Some(format!("the verifier's reward {x} is negative")),
            ),
            None => (
                Status::Error,
                None,
                Some("the verifier wrote no reward".into()),
            ),
        };
    }
    let reward = r.passed().map(|p| if p { 1.0 } else { 0.0 });
    (Status::Completed, reward, None)
}

/// The `results.jsonl` row of a recorded attempt.
pub fn row(r: &AttemptResult) -> Row {
    let (status, reward, error) = judge(r);
    let exit_reason = r.finish_reason.and_then(|f| {
        serde_json::to_value(f)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
    });
    Row {
        instance_id: r.instance_id.clone(),
        seed: r.seed,
        attempt: r.tries,
        status,
        reward,
        exit_reason,
        error,
    }
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Tasks in the run.
    pub tasks_selected: usize,
    /// Tasks times seeds.
    pub jobs_total: usize,
    /// Jobs with a row in `results.jsonl`.
    pub jobs_recorded: usize,
    pub jobs_completed: usize,
    /// Jobs whose status is `error`.
    pub jobs_failed: usize,
    pub resolved: usize,
    /// Completed, not resolved.
    pub unresolved: usize,
    /// `resolved / jobs_total`.
    pub resolve_rate: f64,
    /// `jobs_failed / jobs_total`.
    pub error_rate: f64,
    /// Tasks with any resolved seed, over the tasks selected.
    pub pass_at_3: f64,
    /// Wall time of this run, in seconds.
    pub duration_sec: f64,
}

fn ratio(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

/// The summary of `rows`, out of `tasks_selected` tasks and `jobs_total` jobs.
pub fn summarize(
    tasks_selected: usize,
    jobs_total: usize,
    rows: &[Row],
    duration_sec: f64,
) -> Summary {
    let completed = rows
        .iter()
        .filter(|r| r.status == Status::Completed)
        .count();
    let resolved = rows.iter().filter(|r| r.resolved()).count();
    let failed = rows.len() - completed;
    let solved_tasks: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.resolved())
        .map(|r| r.instance_id.as_str())
        .collect();
    Summary {
        tasks_selected,
        jobs_total,
        jobs_recorded: rows.len(),
        jobs_completed: completed,
        jobs_failed: failed,
        resolved,
        unresolved: completed - resolved,
        resolve_rate: ratio(resolved, jobs_total),
        error_rate: ratio(failed, jobs_total),
        pass_at_3: ratio(solved_tasks.len(), tasks_selected),
        duration_sec,
    }
}

/// Write `results.jsonl` and `summary.json` into `out`, each atomically.
pub fn write(out: &Path, rows: &[Row], summary: &Summary) -> Result<(), SessionError> {
    let encode = |name: &str, e: serde_json::Error| SessionError::Write {
        path: out.join(name),
        source: e.into(),
    };
    let mut text = String::new();
    for r in rows {
        text.push_str(&serde_json::to_string(r).map_err(|e| encode("results.jsonl", e))?);
        text.push('\n');
    }
    write_atomic(&out.join("results.jsonl"), text.as_bytes())?;
    let json = serde_json::to_vec_pretty(summary).map_err(|e| encode("summary.json", e))?;
    write_atomic(&out.join("summary.json"), &json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::check::CheckOutcome;

    fn attempt(id: &str) -> AttemptResult {
        AttemptResult {
            instance_id: id.into(),
            attempt: 1,
            seed: 7,
            model_name_or_path: "m".into(),
            finish_reason: Some(FinishReason::Answered),
            error: None,
            check: None,
            reward: None,
            verified: false,
            tries: 1,
            steps: 1,
            prompt_tokens: 1,
            generated_tokens: 1,
            context_tokens: 1,
            seconds: 1.0,
            session_id: None,
            patch_bytes: 0,
            image: None,
            image_digest: None,
            engine: None,
        }
    }

    fn checked(id: &str, passed: bool) -> AttemptResult {
        AttemptResult {
            check: Some(CheckOutcome {
                passed,
                exit_code: Some(if passed { 0 } else { 1 }),
                timed_out: false,
                output_tail: String::new(),
                seconds: 0.0,
            }),
            ..attempt(id)
        }
    }

    fn verified(id: &str, reward: Option<f64>) -> AttemptResult {
        AttemptResult {
            verified: true,
            reward,
            ..checked(id, reward.is_some_and(|r| r >= 1.0))
        }
    }

    #[test]
    fn attempts_read_in_leafs_terms() {
        assert_eq!(
            judge(&checked("a", true)),
            (Status::Completed, Some(1.0), None)
        );
        assert_eq!(
            judge(&checked("a", false)),
            (Status::Completed, Some(0.0), None)
        );
        assert_eq!(judge(&attempt("a")), (Status::Completed, None, None));
        assert_eq!(judge(&verified("a", Some(0.5))).1, Some(0.5));
        assert_eq!(judge(&verified("a", None)).0, Status::Error);
        assert_eq!(judge(&verified("a", Some(-1.0))).0, Status::Error);
        let broken = AttemptResult {
            error: Some("no repository".into()),
            finish_reason: None,
            ..attempt("a")
        };
        assert_eq!(judge(&broken).2.as_deref(), Some("no repository"));
        let model = AttemptResult {
            finish_reason: Some(FinishReason::Error),
            ..attempt("a")
        };
        assert_eq!(judge(&model).0, Status::Error);
        // A step limit is an ending, not an error.
        let limited = AttemptResult {
            finish_reason: Some(FinishReason::StepLimit),
            tries: 2,
            ..checked("a", false)
        };
        let r = row(&limited);
        assert_eq!(
            (r.status, r.attempt, r.exit_reason.as_deref()),
            (Status::Completed, 2, Some("step_limit"))
        );
    }

    #[test]
    fn the_summary_counts_errors_apart_and_pass_at_3_over_selected_tasks() {
        // Task a: seeds resolved, unresolved, error. Task b: unresolved, error, error.
        // Task c: resolved at 1.0 on one seed. Task d: selected, never recorded.
        let rows: Vec<Row> = [
            verified("a", Some(1.0)),
            verified("a", Some(0.5)),
            verified("a", None),
            checked("b", false),
            verified("b", Some(-0.5)),
            AttemptResult {
                error: Some("sandbox".into()),
                ..attempt("b")
            },
            verified("c", Some(1.0)),
        ]
        .iter()
        .map(row)
        .collect();
        let s = summarize(4, 12, &rows, 3.5);
        assert_eq!(s.jobs_recorded, 7);
        assert_eq!((s.jobs_completed, s.jobs_failed), (4, 3));
        assert_eq!((s.resolved, s.unresolved), (2, 2));
        assert_eq!(s.resolve_rate, 2.0 / 12.0);
        assert_eq!(s.error_rate, 3.0 / 12.0);
        assert_eq!(s.pass_at_3, 2.0 / 4.0);
        assert_eq!(s.duration_sec, 3.5);
        // Nothing selected: rates of zero, not NaN.
        let empty = summarize(0, 0, &[], 0.0);
        assert_eq!(
            (empty.resolve_rate, empty.error_rate, empty.pass_at_3),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn the_files_are_written_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![row(&checked("a", true))];
        let s = summarize(1, 1, &rows, 1.0);
        write(dir.path(), &rows, &s).unwrap();
        let text = std::fs::read_to_string(dir.path().join("results.jsonl")).unwrap();
        let back: Row = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(back, rows[0]);
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(v["resolve_rate"], 1.0);
        assert_eq!(v["status"], serde_json::Value::Null);
        assert!(text.contains("\"status\":\"completed\""), "{text}");
    }
}
