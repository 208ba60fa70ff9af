//! A batch's results on disk, crash-safe: each attempt has its folder
//! `{out}/results/<instance_id>/<attempt>/` holding `patch.diff`, `trajectory.json` and, written
//! last, `result.json` (finish reason, check, figures). Every file is written to a temporary
//! name, synced and renamed into place, so a kill at any moment leaves either the old file or
//! the new one; an attempt is finished once its `result.json` exists and records no error.
//! `predictions.jsonl` is rebuilt from these folders; a recorded patch that cannot be read
//! stops that ([`ResultsError::Patch`]), since an empty `model_patch` would say the agent
//! changed nothing. Owns the layout and the formats; not running attempts (`super::batch`) or
//! the report (`super::report`).

use crate::launch::check::CheckOutcome;
use crate::protocol::FinishReason;
use crate::session::SessionError;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A batch's recorded results that cannot be read back or written.
#[derive(Debug, Error)]
pub enum ResultsError {
    /// An attempt's `patch.diff` cannot be read: its predictions line would say the agent
    /// changed nothing.
    #[error("the patch of {instance_id} attempt {attempt}, {}, cannot be read: {source}", path.display())]
    Patch {
        instance_id: String,
        attempt: u32,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the predictions line of {instance_id} attempt {attempt}: {source}")]
    Line {
        instance_id: String,
        attempt: u32,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Write(#[from] SessionError),
}

/// One attempt's recorded result (`result.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptResult {
    pub instance_id: String,
    /// 1-based.
    pub attempt: u32,
    pub seed: u32,
    pub model_name_or_path: String,
    /// How the agent's task ended (absent when the attempt failed before it could run).
    pub finish_reason: Option<FinishReason>,
    /// Why the attempt could not run (a sandbox that did not start, a missing repository);
    /// such an attempt is run again by the next run of the batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The check command's outcome, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckOutcome>,
    /// The reward a Harbor task's verifier wrote (its run is `check`, passed when the
    /// reward is at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    /// A Harbor task's verifier ran (so a missing reward is an error, not a failed check).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verified: bool,
    /// Tries this attempt took in its run: an attempt that ended in an error is run again
    /// from scratch, up to the run's `max_attempts` (absent in older results: 1).
    #[serde(default = "one")]
    pub tries: u32,
    /// Model turns.
    pub steps: u32,
    /// Prompt tokens the engine read (reused ones not counted), over all turns.
    pub prompt_tokens: u64,
    /// Tokens generated, over all turns.
    pub generated_tokens: u64,
    /// The context at the last turn, in tokens.
    pub context_tokens: u64,
    /// Wall time of the attempt, sandbox start and check included.
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Bytes of `patch.diff`.
    pub patch_bytes: u64,
    /// The sandbox image the attempt ran on (as the session's provenance names it, else as
    /// the task named it), and its `sha256:` digest where the runtime told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    /// The in-process engine the attempt ran on (0-based), when the batch had several (one
    /// per GPU device, or `--replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<usize>,
}

fn one() -> u32 {
    1
}

impl AttemptResult {
    /// Ran to an end (any finish reason); errored attempts are run again.
    pub fn finished(&self) -> bool {
        self.error.is_none()
    }

    /// The check's verdict, if a check ran.
    pub fn passed(&self) -> Option<bool> {
        self.check.as_ref().map(|c| c.passed)
    }
}

/// One line of `predictions.jsonl` (the SWE-bench predictions format, plus the attempt).
#[derive(Debug, Serialize)]
struct Prediction<'a> {
    instance_id: &'a str,
    attempt: u32,
    model_name_or_path: &'a str,
    model_patch: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_passed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reward: Option<f64>,
    finish_reason: Option<FinishReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// The results folder of a batch.
#[derive(Debug, Clone)]
pub struct ResultStore {
    out: PathBuf,
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Write `bytes` to `path` atomically: a temporary file beside it, synced, then renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.map_err(write_err(path))
}

impl ResultStore {
    pub fn new(out: &Path) -> Self {
        Self {
            out: out.to_path_buf(),
        }
    }

    /// The folder of one attempt.
    pub fn dir(&self, instance_id: &str, attempt: u32) -> PathBuf {
        self.out
            .join("results")
            .join(instance_id)
            .join(attempt.to_string())
    }

    /// The attempt's recorded result, if it has one that reads.
    pub fn load(&self, instance_id: &str, attempt: u32) -> Option<AttemptResult> {
        let text =
            std::fs::read_to_string(self.dir(instance_id, attempt).join("result.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Forget an attempt's earlier (errored) result before running it again, so that a kill
    /// mid-run never leaves the old result beside the new run's files.
    pub fn clear(&self, instance_id: &str, attempt: u32) {
        let _ = std::fs::remove_file(self.dir(instance_id, attempt).join("result.json"));
    }

    /// Forget what an attempt's earlier try left (its session, which the next try would
    /// otherwise continue, and its trajectory), so that the next try starts from scratch.
    pub fn forget_try(&self, instance_id: &str, attempt: u32) {
        let dir = self.dir(instance_id, attempt);
        for name in ["session.json", "trajectory.json"] {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }

    /// Record a result: its patch and trajectory first, `result.json` last.
    pub fn save(
        &self,
        result: &AttemptResult,
        patch: &[u8],
        trajectory: Option<&[u8]>,
    ) -> Result<(), SessionError> {
        let dir = self.dir(&result.instance_id, result.attempt);
        write_atomic(&dir.join("patch.diff"), patch)?;
        if let Some(t) = trajectory {
            write_atomic(&dir.join("trajectory.json"), t)?;
        }
        let json = serde_json::to_vec_pretty(result).map_err(|e| SessionError::Write {
            path: dir.join("result.json"),
            source: e.into(),
        })?;
        write_atomic(&dir.join("result.json"), &json)
    }

    /// Write an attempt's rollout files (`rollout.json`, `trajectory.atif.json`), before its
    /// `result.json` says it finished.
    pub fn save_rollout(
        &self,
        result: &AttemptResult,
        rollout: Option<&super::RolloutFiles>,
    ) -> Result<(), SessionError> {
        let Some(r) = rollout else { return Ok(()) };
        let dir = self.dir(&result.instance_id, result.attempt);
        write_atomic(&dir.join("rollout.json"), &r.rollout)?;
        write_atomic(&dir.join("trajectory.atif.json"), &r.atif)
    }

    /// The predictions line of a recorded result; its patch is read from `patch.diff`.
    pub fn prediction_line(&self, r: &AttemptResult) -> Result<String, ResultsError> {
        let path = self.dir(&r.instance_id, r.attempt).join("patch.diff");
        let patch = std::fs::read(&path).map_err(|source| ResultsError::Patch {
            instance_id: r.instance_id.clone(),
            attempt: r.attempt,
            path,
            source,
        })?;
        let line = Prediction {
            instance_id: &r.instance_id,
            attempt: r.attempt,
            model_name_or_path: &r.model_name_or_path,
            model_patch: String::from_utf8_lossy(&patch).into_owned(),
            check_passed: r.passed(),
            reward: r.reward,
            finish_reason: r.finish_reason,
            error: r.error.as_deref(),
        };
        serde_json::to_string(&line).map_err(|source| ResultsError::Line {
            instance_id: r.instance_id.clone(),
            attempt: r.attempt,
            source,
        })
    }

    /// Rewrite `predictions.jsonl` from `results` (in their order), atomically.
    pub fn write_predictions(&self, results: &[AttemptResult]) -> Result<(), ResultsError> {
        let mut text = String::new();
        for r in results {
            text.push_str(&self.prediction_line(r)?);
            text.push('\n');
        }
        Ok(write_atomic(&self.predictions_path(), text.as_bytes())?)
    }

    pub fn predictions_path(&self) -> PathBuf {
        self.out.join("predictions.jsonl")
    }
}

/// Appends predictions lines while a batch runs (after [`ResultStore::write_predictions`]
/// wrote those of the attempts finished before), each synced; the batch rewrites the file in
/// order at its end.
#[derive(Debug)]
pub struct PredictionsAppender {
    file: std::fs::File,
    path: PathBuf,
}

impl PredictionsAppender {
    pub fn open(path: &Path) -> Result<Self, SessionError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(write_err(path))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn append(&mut self, line: &str) -> Result<(), SessionError> {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.file
            .write_all(&bytes)
            .and_then(|()| self.file.sync_data())
            .map_err(write_err(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, attempt: u32) -> AttemptResult {
        AttemptResult {
            instance_id: id.into(),
            attempt,
            seed: attempt - 1,
            model_name_or_path: "m".into(),
            finish_reason: Some(FinishReason::Answered),
            error: None,
            check: None,
            reward: None,
            verified: false,
            tries: 1,
            steps: 2,
            prompt_tokens: 10,
            generated_tokens: 5,
            context_tokens: 15,
            seconds: 1.5,
            session_id: None,
            patch_bytes: 3,
            image: None,
            image_digest: None,
            engine: None,
        }
    }

    #[test]
    fn saved_results_load_back_and_make_predictions() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path());
        assert!(store.load("a", 1).is_none());
        store.save(&result("a", 1), b"+x\n", Some(b"{}")).unwrap();
        assert_eq!(store.load("a", 1), Some(result("a", 1)));
        store
            .write_predictions(&[result("a", 1), result("a", 1)])
            .unwrap();
        let text = std::fs::read_to_string(store.predictions_path()).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["model_patch"], "+x\n");
        assert_eq!(first["attempt"], 1);
        assert!(first.get("check_passed").is_none());
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(store.dir("a", 1))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        store.clear("a", 1);
        assert!(store.load("a", 1).is_none());
    }

    #[test]
    fn an_unreadable_patch_is_an_error_naming_it_never_an_empty_prediction() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path());
        store.save(&result("a", 1), b"+x\n", None).unwrap();
        let patch = store.dir("a", 1).join("patch.diff");
        std::fs::remove_file(&patch).unwrap();
        let e = store.write_predictions(&[result("a", 1)]).unwrap_err();
        assert!(matches!(e, ResultsError::Patch { .. }), "{e:?}");
        assert!(e.to_string().contains(&patch.display().to_string()), "{e}");
        assert!(!store.predictions_path().exists(), "nothing written");
    }
}
