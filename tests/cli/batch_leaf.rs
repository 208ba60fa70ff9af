//! Leaf's scoring of a host-sandbox batch (no Docker): a task whose check passes, one whose
//! check fails and one that cannot run (its repository is missing). `results.jsonl` and
//! `summary.json` hold one row per task and seed with Leaf's statuses, the failed check is
//! unresolved and never retried, the task that cannot run is an error, tried `--max-attempts`
//! times and counted apart; the run's limits are in every session's provenance.

use super::batch::fix_script;
use crate::common::git_repo;
use std::path::Path;
use std::process::Command;

const CHECK: &str = "grep -q 'return 2' src/app.py";

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn leafs_results_and_summary_count_errors_apart_and_retry_only_them() {
    let tmp = tempfile::tempdir().unwrap();
    // The script's edit applies to `returns-1` (the check then passes) and not to
    // `returns-3` (the agent answers without a change; the check fails).
    let good = git_repo(
        &tmp.path().join("returns-1"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let other = git_repo(
        &tmp.path().join("returns-3"),
        &[("src/app.py", "def f():\n    return 3\n")],
    );
    let missing = tmp.path().join("no-such-repo");
    let tasks = tmp.path().join("tasks.jsonl");
    let line = |id: &str, repo: &Path| {
        serde_json::json!({"instance_id": id, "task": "make f return 2", "repo": repo}).to_string()
    };
    std::fs::write(
        &tasks,
        format!(
            "{}\n{}\n{}\n",
            line("passes", &good),
            line("fails", &other),
            line("broken", &missing)
        ),
    )
    .unwrap();
    let script = tmp.path().join("fix.txt");
    std::fs::write(&script, fix_script(2)).unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args([
            "run",
            "--sandbox",
            "host",
            "--allow-host",
            "--max-attempts",
            "2",
        ])
        .args(["--check", CHECK, "--max-steps", "9", "--wall-time", "600"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(1),
        "an attempt could not run: {stderr}"
    );
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "one row per task and seed: {rows:?}");
    let row = |id: &str| rows.iter().find(|r| r["instance_id"] == id).unwrap();
    let keys = |r: &serde_json::Value| {
        let mut k: Vec<String> = r.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    for r in &rows {
        assert_eq!(
            keys(r),
            [
                "attempt",
                "error",
                "exit_reason",
                "instance_id",
                "reward",
                "seed",
                "status"
            ],
            "{r}"
        );
        assert_eq!(r["seed"], 0, "attempt 1 of base seed 0");
    }
    let p = row("passes");
    assert_eq!(
        (
            &p["status"],
            &p["reward"],
            &p["attempt"],
            &p["exit_reason"],
            &p["error"]
        ),
        (
            &"completed".into(),
            &1.0.into(),
            &1.into(),
            &"answered".into(),
            &serde_json::Value::Null
        ),
        "{p}"
    );
    let f = row("fails");
    assert_eq!(
        (&f["status"], &f["reward"], &f["attempt"]),
        (&"completed".into(), &0.0.into(), &1.into()),
        "a failed check is unresolved, not retried: {f}"
    );
    let b = row("broken");
    assert_eq!(
        (&b["status"], &b["reward"], &b["attempt"], &b["exit_reason"]),
        (
            &"error".into(),
            &serde_json::Value::Null,
            &2.into(),
            &serde_json::Value::Null
        ),
        "tried twice: {b}"
    );
    assert!(b["error"].as_str().is_some_and(|e| !e.is_empty()), "{b}");
    let s = read_json(&out.join("summary.json"));
    for (key, want) in [
        ("tasks_selected", 3),
        ("jobs_total", 3),
        ("jobs_recorded", 3),
        ("jobs_completed", 2),
        ("jobs_failed", 1),
        ("resolved", 1),
        ("unresolved", 1),
    ] {
        assert_eq!(s[key], want, "{key}: {s}");
    }
    for key in ["resolve_rate", "error_rate", "pass_at_3"] {
        let got = s[key].as_f64().unwrap();
        assert!((got - 1.0 / 3.0).abs() < 1e-12, "{key}: {s}");
    }
    assert!(s["duration_sec"].as_f64().unwrap() > 0.0, "{s}");
    // Beside Lilypad's own files, which stay: the report counts the error apart too.
    let report = read_json(&out.join("report.json"));
    assert_eq!(report["leaf"]["jobs_failed"], 1, "{report}");
    assert_eq!(report["run"]["max_attempts"], 2, "{report}");
    assert_eq!(
        report["pass_at_k"]["1"], 0.5,
        "the two checked tasks: {report}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("1 errors (counted apart)"), "{md}");
    assert!(out.join("predictions.jsonl").is_file());
    assert!(
        stderr.contains("Leaf's scoring: 1 resolved, 1 unresolved, 1 errors of 3 jobs"),
        "{stderr}"
    );
    let result = read_json(&out.join("results/broken/1/result.json"));
    assert_eq!(result["tries"], 2, "{result}");
    // The limits the run was made under, in the provenance.
    let traj = read_json(&out.join("results/passes/1/trajectory.json"));
    let limits = &traj["provenance"]["limits"];
    assert_eq!(limits["steps"], 9, "{traj}");
    assert_eq!(limits["wall_time_secs"], 600, "{traj}");
    assert_eq!(limits["max_attempts"], 2, "{traj}");
    assert_eq!(limits["seeds"], 1, "{traj}");
    assert!(limits["context"].as_u64().unwrap() > 0, "{traj}");
}
