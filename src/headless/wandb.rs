//! A batch logged to Weights & Biases as Leaf logs its runs, through the official client,
//! from its start (a missing client or a refused key stops the batch before any attempt runs)
//! to its end, Leaf's metrics logged after every result: Lilypad computes them from
//! `results.jsonl`'s rows ([`metrics`]:
//! `overall/completed_percent`, `overall/error_percent`, `overall/resolve_rate_percent`,
//! `overall/unresolve_rate_percent`, `overall/pass_at_3_percent`, and per seed
//! `seed-N/error_percent`, `seed-N/resolve_rate_percent`, `seed-N/unresolve_rate_percent`),
//! and at the end the result and stop-reason totals as bar charts, and hands them with the
//! run's header to `assets/wandb/log_run.py`, run with the configured Python for the whole
//! batch, which logs them, saves `results.jsonl`, `summary.json` and `report.json`, and
//! finishes the run. The run's id is
//! kept in `wandb.json` in the output folder, so a batch run again resumes the same W&B run.
//!
//! Owns: the metrics, the hand-over and the run id. Does not own: the client (the user's
//! `wandb` package) or its environment (`WANDB_API_KEY`, `WANDB_MODE=offline`, ...).

use super::leaf::{Row, Status, Summary};
use crate::config::WandbSettings;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The bridge script, written to a temporary file for each run.
const SCRIPT: &str = include_str!("../../assets/wandb/log_run.py");

/// Why a run could not be logged.
#[derive(Debug, Error)]
pub enum WandbError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("running {python} for W&B: {source} (set [wandb] python to a Python with the wandb package)")]
    Spawn {
        python: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the W&B client failed (exit {code:?}): {stderr}")]
    Client { code: Option<i32>, stderr: String },
}

fn percent(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// Leaf's metrics for `rows` of a run of `jobs_total` jobs over `seeds` seeds (see the module
/// docs). Seeds are numbered from 0 in the order of their values.
pub fn metrics(rows: &[Row], summary: &Summary, seeds: usize) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let done = |r: &&Row| r.status == Status::Completed;
    let completed = rows.iter().filter(done).count();
    let resolved = rows.iter().filter(|r| r.resolved()).count();
    let jobs = summary.jobs_total;
    m.insert("overall/completed_percent".into(), percent(completed, jobs));
    m.insert(
        "overall/error_percent".into(),
        percent(rows.len() - completed, jobs),
    );
    m.insert(
        "overall/resolve_rate_percent".into(),
        percent(resolved, completed),
    );
    m.insert(
        "overall/unresolve_rate_percent".into(),
        percent(completed - resolved, completed),
    );
    m.insert(
        "overall/pass_at_3_percent".into(),
        100.0 * summary.pass_at_3,
    );
    let values: BTreeSet<u32> = rows.iter().map(|r| r.seed).collect();
    let per_seed_jobs = jobs / seeds.max(1);
    for (n, value) in values.iter().enumerate().take(seeds.max(1)) {
        let of: Vec<&Row> = rows.iter().filter(|r| r.seed == *value).collect();
        let c = of.iter().filter(|r| r.status == Status::Completed).count();
        let res = of.iter().filter(|r| r.resolved()).count();
        m.insert(
            format!("seed-{n}/error_percent"),
            percent(of.len() - c, per_seed_jobs),
        );
        m.insert(format!("seed-{n}/resolve_rate_percent"), percent(res, c));
        m.insert(
            format!("seed-{n}/unresolve_rate_percent"),
            percent(c - res, c),
        );
    }
    m
}

/// The bar charts' rows: result totals (resolved, unresolved, error) and stop-reason totals.
fn charts(rows: &[Row]) -> serde_json::Value {
    let mut results: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        let outcome = match (r.status, r.resolved()) {
            (Status::Error, _) => "error",
            (_, true) => "resolved",
            _ => "unresolved",
        };
        *results.entry(outcome).or_default() += 1;
        let reason = match (&r.exit_reason, r.status) {
            (Some(e), _) => e.clone(),
            (None, Status::Error) => "infrastructure_error".into(),
            (None, _) => "unknown".into(),
        };
        *reasons.entry(reason).or_default() += 1;
    }
    let result_rows: Vec<serde_json::Value> = ["resolved", "unresolved", "error"]
        .iter()
        .filter(|k| results.get(**k).is_some_and(|n| *n > 0) || **k == "error")
        .map(|k| serde_json::json!([k, results.get(k).copied().unwrap_or(0)]))
        .collect();
    let reason_rows: Vec<serde_json::Value> = reasons
        .iter()
        .map(|(k, n)| serde_json::json!([k, n]))
        .collect();
    serde_json::json!([
        { "key": "overall/result_totals", "title": "Result totals", "column": "result",
          "rows": result_rows },
        { "key": "overall/stop_reason_totals", "title": "Stop reason totals",
          "column": "stop_reason", "rows": reason_rows },
    ])
}

/// The run id kept in `out/wandb.json`, or a new one (written there).
fn run_id(out: &Path, s: &WandbSettings) -> Result<String, WandbError> {
    let path = out.join("wandb.json");
    let kept = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["run_id"].as_str().map(str::to_string))
        .filter(|id| !id.is_empty());
    if let Some(id) = kept {
        return Ok(id);
    }
    let id = format!(
        "lilypad-{:x}-{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        std::process::id()
    );
    let state = serde_json::json!({
        "entity": s.entity, "project": s.project, "base_url": s.base_url, "run_id": id,
    });
    let text = serde_json::to_string_pretty(&state).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(|source| WandbError::Io {
        what: format!("writing {}", path.display()),
        source,
    })?;
    Ok(id)
}

/// A batch's run on W&B, open from the batch's start to its end: the bridge script running
/// with the configured Python, fed one JSON line per message by a thread of its own (so that a
/// slow client never holds the batch up).
pub struct WandbRun {
    id: String,
    child: std::process::Child,
    lines: Option<std::sync::mpsc::Sender<String>>,
    writer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    stderr: Option<std::thread::JoinHandle<String>>,
    seeds: usize,
    out: PathBuf,
    /// The script and its starting spec, kept while the client runs.
    _files: tempfile::TempDir,
}

/// The last lines of the client's standard error, for an error message.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().rev().take(12).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}

impl WandbRun {
    /// Open the batch's run in `out` (see the module docs), with the run's `header` as its
    /// config so far, for a batch of `seeds` attempts per task; `None` without a project.
    /// Blocks until the client has opened the run, so that a missing client or a refused key
    /// stops the batch before any attempt runs.
    pub fn start(
        s: &WandbSettings,
        out: &Path,
        header: &serde_json::Value,
        seeds: usize,
    ) -> Result<Option<Self>, WandbError> {
        use std::io::{BufRead, Read, Write};
        let Some(project) = &s.project else {
            return Ok(None);
        };
        let id = run_id(out, s)?;
        let spec = serde_json::json!({
            "entity": s.entity, "project": project, "name": s.name, "group": s.group,
            "tags": s.tags, "base_url": s.base_url, "run_id": id, "config": header, "dir": out,
        });
        let files = tempfile::tempdir().map_err(|source| WandbError::Io {
            what: "creating a temporary folder".into(),
            source,
        })?;
        let (script, spec_path) = (
            files.path().join("log_run.py"),
            files.path().join("run.json"),
        );
        for (path, text) in [
            (&script, SCRIPT.to_string()),
            (&spec_path, spec.to_string()),
        ] {
            std::fs::write(path, text).map_err(|source| WandbError::Io {
                what: format!("writing {}", path.display()),
                source,
            })?;
        }
        let python = s.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
        let mut child = std::process::Command::new(&python)
            .arg(&script)
            .arg(&spec_path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|source| WandbError::Spawn {
                python: python.display().to_string(),
                source,
            })?;
        // Read apart, or a chatty client could fill the pipe and stall.
        let stderr = child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = e.read_to_string(&mut text);
                text
            })
        });
        let mut ready = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = std::io::BufReader::new(stdout).read_line(&mut ready);
        }
        if ready.trim().is_empty() {
            let code = child.wait().ok().and_then(|s| s.code());
            let text = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
            return Err(WandbError::Client {
                code,
                stderr: tail(&text),
            });
        }
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let mut stdin = child.stdin.take();
        let writer = std::thread::spawn(move || {
            for line in rx {
                if let Some(w) = stdin.as_mut() {
                    w.write_all(line.as_bytes())?;
                    w.write_all(b"\n")?;
                    w.flush()?;
                }
            }
            // Dropping standard input here tells the client no more lines come.
            Ok(())
        });
        Ok(Some(Self {
            id,
            child,
            lines: Some(tx),
            writer: Some(writer),
            stderr,
            seeds,
            out: out.to_path_buf(),
            _files: files,
        }))
    }

    /// Log Leaf's metrics over the results so far (`rows`, summarised as `summary`). A client
    /// that has stopped is not waited for: [`Self::finish`] reports it.
    pub fn log(&self, rows: &[Row], summary: &Summary) {
        let line = serde_json::json!({ "log": metrics(rows, summary, self.seeds) });
        if let Some(tx) = &self.lines {
            let _ = tx.send(line.to_string());
        }
    }

    /// Finish the run with the batch's final `header`, metrics and charts, saving the result
    /// files; waits for the client. Returns the run's id.
    pub fn finish(
        mut self,
        header: &serde_json::Value,
        rows: &[Row],
        summary: &Summary,
    ) -> Result<String, WandbError> {
        let files: Vec<PathBuf> = ["results.jsonl", "summary.json", "report.json"]
            .iter()
            .map(|f| self.out.join(f))
            .filter(|p| p.is_file())
            .collect();
        let end = serde_json::json!({ "finish": {
            "config": header, "metrics": metrics(rows, summary, self.seeds),
            "charts": charts(rows), "files": files, "base_path": self.out,
        }});
        if let Some(tx) = self.lines.take() {
            let _ = tx.send(end.to_string());
        }
        let written = self.writer.take().map(|h| h.join());
        let status = self.child.wait().map_err(|source| WandbError::Io {
            what: "waiting for the W&B client".into(),
            source,
        })?;
        let text = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let lost = matches!(written, Some(Ok(Err(_))) | Some(Err(_)));
        if !status.success() || lost {
            return Err(WandbError::Client {
                code: status.code(),
                stderr: tail(&text),
            });
        }
        Ok(self.id.clone())
    }
}

impl Drop for WandbRun {
    /// A run dropped unfinished (the batch failed): standard input closes, and the client
    /// marks the run failed and exits; it is waited for so that no process is left behind.
    fn drop(&mut self) {
        self.lines.take();
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, seed: u32, status: Status, reward: Option<f64>) -> Row {
        Row {
            instance_id: id.into(),
            seed,
            attempt: 1,
            status,
            reward,
            exit_reason: (status == Status::Completed).then(|| "answered".into()),
            error: None,
        }
    }

    #[test]
    fn leafs_metrics_count_errors_apart_and_per_seed() {
        let rows = vec![
            row("a", 7, Status::Completed, Some(1.0)),
            row("b", 7, Status::Completed, Some(0.0)),
            row("a", 9, Status::Completed, Some(1.0)),
            row("b", 9, Status::Error, None),
        ];
        let summary = crate::headless::leaf::summarize(2, 4, &rows, 1.0);
        let m = metrics(&rows, &summary, 2);
        assert_eq!(m["overall/completed_percent"], 75.0);
        assert_eq!(m["overall/error_percent"], 25.0);
        // Over the completed jobs, as Leaf divides.
        assert!((m["overall/resolve_rate_percent"] - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(m["overall/pass_at_3_percent"], 50.0);
        assert_eq!(m["seed-0/resolve_rate_percent"], 50.0);
        assert_eq!(m["seed-1/error_percent"], 50.0);
        assert_eq!(m["seed-1/resolve_rate_percent"], 100.0);
        let c = charts(&rows);
        assert_eq!(
            c[0]["rows"],
            serde_json::json!([["resolved", 2], ["unresolved", 1], ["error", 1]])
        );
    }
}
