//! A finished batch logged to Weights & Biases as Leaf logs its runs, through the official
//! client: Lilypad computes Leaf's metrics from `results.jsonl`'s rows ([`metrics`]:
//! `overall/completed_percent`, `overall/error_percent`, `overall/resolve_rate_percent`,
//! `overall/unresolve_rate_percent`, `overall/pass_at_3_percent`, and per seed
//! `seed-N/error_percent`, `seed-N/resolve_rate_percent`, `seed-N/unresolve_rate_percent`),
//! the result and stop-reason totals as bar charts, and hands them with the run's header to
//! `assets/wandb/log_run.py`, run with the configured Python, which logs them, saves
//! `results.jsonl`, `summary.json` and `report.json`, and finishes the run. The run's id is
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

/// Log the finished batch in `out` (see the module docs); returns the run's id. Nothing is
/// done without a project.
pub fn log_run(
    s: &WandbSettings,
    out: &Path,
    header: &serde_json::Value,
    rows: &[Row],
    summary: &Summary,
    seeds: usize,
) -> Result<Option<String>, WandbError> {
    let Some(project) = &s.project else {
        return Ok(None);
    };
    let id = run_id(out, s)?;
    let files: Vec<PathBuf> = ["results.jsonl", "summary.json", "report.json"]
        .iter()
        .map(|f| out.join(f))
        .filter(|p| p.is_file())
        .collect();
    let spec = serde_json::json!({
        "entity": s.entity, "project": project, "name": s.name, "group": s.group,
        "tags": s.tags, "base_url": s.base_url, "run_id": id,
        "config": header, "metrics": metrics(rows, summary, seeds), "charts": charts(rows),
        "files": files, "base_path": out, "dir": out,
    });
    let tmp = tempfile::tempdir().map_err(|source| WandbError::Io {
        what: "creating a temporary folder".into(),
        source,
    })?;
    let (script, spec_path) = (tmp.path().join("log_run.py"), tmp.path().join("run.json"));
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
    let out_run = std::process::Command::new(&python)
        .arg(&script)
        .arg(&spec_path)
        .output()
        .map_err(|source| WandbError::Spawn {
            python: python.display().to_string(),
            source,
        })?;
    if !out_run.status.success() {
        let stderr = String::from_utf8_lossy(&out_run.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
        return Err(WandbError::Client {
            code: out_run.status.code(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    Ok(Some(id))
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
