//! Batch throughput: the same research batch (`lilypad run --tasks`, the scripted engine, a
//! three-turn script that reads, edits and answers) run with 1, 2 and 4 pods at a time in
//! Kubernetes against the same batch with as many Docker containers at a time on this
//! machine, as attempts per hour; and the time from one attempt's end to the next attempt's
//! first model turn (the first `attempt_step` event after an `attempt_finished`, with one at
//! a time), which is the sandbox start-up an attempt waits for.
//!
//! Owns: writing the batch (a small repository, tasks, script) and timing the real binary's
//! JSON events. Does not own: the batch runner (`crate::headless`) or the sandboxes. A
//! sandbox kind whose engine does not answer is left out with a note.

use super::{BenchError, Figure, Report};
use crate::sandbox::SandboxSettings;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const SCRIPT: &str = "=== turn ===
Look first.
</think>

<tool_call>
<function=Read>
<parameter=file_path>
app.py
</parameter>
</function>
</tool_call>
=== turn ===
Change it.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
app.py
</parameter>
<parameter=old_string>
return 1
</parameter>
<parameter=new_string>
return 2
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

f now returns 2.
";

/// One batch's timing.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub attempts: usize,
    pub seconds: f64,
    /// Median seconds from an attempt's end to the next first turn of another attempt.
    pub refill_s: Option<f64>,
}

/// A batch run that did not finish: the sandbox kind is left out of the figures, with this as
/// its note.
#[derive(Debug, thiserror::Error)]
#[error("{kind} x{parallel}: {last_line}")]
pub struct LeftOut {
    pub kind: String,
    pub parallel: usize,
    /// The last line `lilypad run` wrote to its standard error.
    pub last_line: String,
}

impl Timing {
    pub fn per_hour(&self) -> f64 {
        if self.seconds > 0.0 {
            self.attempts as f64 * 3600.0 / self.seconds
        } else {
            0.0
        }
    }
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> BenchError {
    super::suite::io(what)
}

/// Write the batch's files into `dir`: (repository, tasks file, script).
fn write_batch(dir: &Path, tasks: usize) -> Result<(PathBuf, PathBuf, PathBuf), BenchError> {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).map_err(io("writing the bench repository"))?;
    std::fs::write(repo.join("app.py"), "def f():\n    return 1\n")
        .map_err(io("writing the bench repository"))?;
    let lines: String = (1..=tasks)
        .map(|i| format!("{{\"instance_id\": \"b{i}\", \"task\": \"make f return 2\"}}\n"))
        .collect();
    let file = dir.join("tasks.jsonl");
    std::fs::write(&file, lines).map_err(io("writing the bench tasks"))?;
    let script = dir.join("script.txt");
    std::fs::write(&script, SCRIPT).map_err(io("writing the bench script"))?;
    Ok((repo, file, script))
}

/// Run the batch once with `kind` and `parallel`, timing its events.
fn run_once(
    dir: &Path,
    kind: &str,
    parallel: usize,
    tasks: usize,
    s: &SandboxSettings,
) -> Result<Result<Timing, LeftOut>, BenchError> {
    let (repo, file, script) = write_batch(dir, tasks)?;
    let exe = std::env::current_exe().map_err(io("finding the lilypad binary"))?;
    let mut c = Command::new(exe);
    c.env("LILYPAD_SESSION_DIR", dir.join("sessions"))
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--json", "--sandbox", kind])
        .args(["--parallel", &parallel.to_string()])
        .arg("--tasks")
        .arg(&file)
        .arg("--repo")
        .arg(&repo)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(dir.join(format!("out-{kind}-{parallel}")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(i) = &s.image {
        c.args(["--image", i]);
    }
    if let Some(k) = &s.kube.kubeconfig {
        c.arg("--kubeconfig").arg(k);
    }
    let started = Instant::now();
    let mut child = c.spawn().map_err(io("starting lilypad run"))?;
    let mut events: Vec<(f64, serde_json::Value)> = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                events.push((started.elapsed().as_secs_f64(), v));
            }
        }
    }
    let output = child
        .wait_with_output()
        .map_err(io("waiting for lilypad run"))?;
    let seconds = started.elapsed().as_secs_f64();
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Ok(Err(LeftOut {
            kind: kind.to_string(),
            parallel,
            last_line: last.to_string(),
        }));
    }
    Ok(Ok(Timing {
        attempts: tasks,
        seconds,
        refill_s: refill(&events),
    }))
}

/// The median time from each `attempt_finished` to the first `attempt_step` of an attempt
/// that had not stepped before.
fn refill(events: &[(f64, serde_json::Value)]) -> Option<f64> {
    let mut stepped = std::collections::HashSet::new();
    let mut first_steps = Vec::new();
    let mut ends = Vec::new();
    for (t, e) in events {
        let key = (e["instance_id"].to_string(), e["attempt"].to_string());
        match e["event"].as_str() {
            Some("attempt_step") if stepped.insert(key) => first_steps.push(*t),
            Some("attempt_finished") => ends.push(*t),
            _ => {}
        }
    }
    let mut gaps: Vec<f64> = ends
        .iter()
        .filter_map(|end| first_steps.iter().find(|s| **s >= *end).map(|s| s - end))
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied()
}

/// Measure (see the module docs): `tasks` attempts per batch.
pub fn run(quick: bool, s: &SandboxSettings, report: &mut Report) -> Result<(), BenchError> {
    let tasks = if quick { 4 } else { 8 };
    let mut table: Vec<(String, usize, Timing)> = Vec::new();
    for parallel in [1usize, 2, 4] {
        for kind in ["docker", "kube"] {
            eprintln!("bench batch: {tasks} attempts, {kind}, {parallel} at a time...");
            let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
            match run_once(dir.path(), kind, parallel, tasks, s)? {
                Ok(t) => table.push((kind.to_string(), parallel, t)),
                Err(left) => report.notes.push(format!("bench batch left out {left}")),
            }
        }
    }
    let find = |kind: &str, p: usize| {
        table
            .iter()
            .find(|(k, q, _)| k == kind && *q == p)
            .map(|(_, _, t)| *t)
    };
    for parallel in [1usize, 2, 4] {
        if let (Some(k), Some(d)) = (find("kube", parallel), find("docker", parallel)) {
            report.figures.push(Figure {
                bench: "batch".into(),
                name: format!(
                    "attempts per hour, {parallel} pod(s) at a time ({tasks} attempts, scripted)"
                ),
                value: k.per_hour(),
                unit: "attempts/h".into(),
                baseline: format!("{parallel} Docker container(s) at a time"),
                baseline_value: d.per_hour(),
                ratio: super::agent_turns::ratio(k.per_hour(), d.per_hour()),
                better: "higher".into(),
                target: None,
            });
        }
    }
    if let (Some(k), Some(d)) = (find("kube", 1), find("docker", 1)) {
        if let (Some(kr), Some(dr)) = (k.refill_s, d.refill_s) {
            report.figures.push(Figure {
                bench: "batch".into(),
                name: "one attempt's end to the next attempt's first turn, pods (target < 1 s)"
                    .into(),
                value: kr,
                unit: "s".into(),
                baseline: "Docker containers".into(),
                baseline_value: dr,
                ratio: super::agent_turns::ratio(kr, dr),
                better: "lower".into(),
                target: None,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_is_the_median_gap_to_a_new_attempts_first_step() {
        let e = |t: f64, ev: &str, id: &str| {
            (
                t,
                serde_json::json!({ "event": ev, "instance_id": id, "attempt": 1 }),
            )
        };
        let events = vec![
            e(0.0, "attempt_step", "a"),
            e(1.0, "attempt_step", "a"),
            e(2.0, "attempt_finished", "a"),
            e(2.5, "attempt_step", "b"),
            e(3.0, "attempt_step", "b"),
            e(4.0, "attempt_finished", "b"),
            e(4.1, "attempt_step", "c"),
            e(5.0, "attempt_finished", "c"),
            e(9.0, "attempt_step", "d"),
        ];
        // Gaps 0.5, 0.1 and 4.0: the median is 0.5.
        assert_eq!(refill(&events), Some(0.5));
        assert_eq!(
            Timing {
                attempts: 10,
                seconds: 36.0,
                refill_s: None
            }
            .per_hour(),
            1000.0
        );
    }
}
