//! `lilypad run --wandb ENTITY/PROJECT` logs a batch to Weights & Biases through the official
//! client, in its offline mode (no network here): two tasks, two attempts each, one task fixed
//! and one not; the offline run read back holds Leaf's metrics (logged after each result and
//! at the end), the run's header as config,
//! and the saved `results.jsonl` and `summary.json`; a second run of the same batch logs to the
//! same W&B run. Needs the client (scripts/fetch-test-wandb.sh, LILYPAD_TEST_WANDB_PYTHON):
//! without it the test skips loudly, unless LILYPAD_TEST_STRICT=1, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::batch::fix_script;
use crate::common::git_repo;

const IDLE: &str = "=== turn ===
Nothing to do.
</think>

Nothing changed.
";

fn wandb_python() -> Option<PathBuf> {
    match std::env::var_os("LILYPAD_TEST_WANDB_PYTHON").map(PathBuf::from) {
        Some(p) if p.exists() => Some(p),
        _ => {
            let strict = std::env::var("LILYPAD_TEST_STRICT").is_ok_and(|v| v == "1");
            assert!(
                !strict,
                "LILYPAD_TEST_STRICT=1 but LILYPAD_TEST_WANDB_PYTHON names no Python with wandb \
                 (scripts/fetch-test-wandb.sh)"
            );
            eprintln!("!!!!! SKIPPED: the W&B test: no LILYPAD_TEST_WANDB_PYTHON");
            None
        }
    }
}

/// The only offline run folder under `out/wandb`.
fn offline_run(out: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("wandb"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("offline-run-"))
        })
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn a_batch_is_logged_to_wandb_offline_with_leafs_metrics_and_files() {
    let Some(python) = wandb_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let fixed = git_repo(
        &tmp.path().join("fixed"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        format!(
            "{}\n{}\n",
            serde_json::json!({"instance_id": "t1", "task": "make f return 2", "repo": fixed}),
            serde_json::json!({"instance_id": "t2", "task": "make f return 2", "repo": fixed}),
        ),
    )
    .unwrap();
    // Attempt 1 fixes it, attempt 2 does nothing: half the jobs resolved.
    let scripts = tmp.path().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(scripts.join("1.txt"), fix_script(2)).unwrap();
    std::fs::write(scripts.join("2.txt"), IDLE).unwrap();
    std::fs::write(
        tmp.path().join("config.toml"),
        format!(
            "[wandb]\npython = \"{}\"\ngroup = \"nightly\"\ntags = [\"lilypad\"]\n",
            python.display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("batch");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_lilypad"))
            .env("LILYPAD_CONFIG", tmp.path().join("config.toml"))
            .env("XDG_CONFIG_HOME", tmp.path().join("xdg"))
            .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
            .env("WANDB_MODE", "offline")
            .env("WANDB_SILENT", "true")
            .env_remove("LILYPAD_MODEL")
            .env_remove("LILYPAD_SCRIPT_DELAY_MS")
            .args([
                "run",
                "--sandbox",
                "host",
                "--allow-host",
                "--attempts",
                "2",
            ])
            .arg("--tasks")
            .arg(&tasks)
            .arg("--engine")
            .arg(format!("script:{}/{{attempt}}.txt", scripts.display()))
            .args(["--check", "grep -q 'return 2' src/app.py"])
            .args(["--wandb", "acme/evals"])
            .arg("--out")
            .arg(&out)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("wandb.json")).unwrap()).unwrap();
    assert_eq!(state["project"], "evals");
    assert_eq!(state["entity"], "acme");
    let id = state["run_id"].as_str().unwrap().to_string();
    let dir = offline_run(&out);
    assert!(dir.to_string_lossy().ends_with(&id), "{}", dir.display());
    let log = dir.join(format!("run-{id}.wandb"));
    let read = Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/wandb_read.py"
        ))
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let back: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(back["run_id"], id.as_str());
    assert_eq!(back["entity"], "acme");
    assert_eq!(back["project"], "evals");
    assert_eq!(back["group"], "nightly");
    assert_eq!(back["tags"], serde_json::json!(["lilypad"]));
    let summary = &back["summary"];
    assert_eq!(summary["overall/completed_percent"], 100.0, "{summary}");
    assert_eq!(summary["overall/error_percent"], 0.0);
    assert_eq!(summary["overall/resolve_rate_percent"], 50.0);
    assert_eq!(summary["overall/pass_at_3_percent"], 100.0);
    assert_eq!(summary["seed-0/resolve_rate_percent"], 100.0);
    assert_eq!(summary["seed-1/resolve_rate_percent"], 0.0);
    // Leaf's metrics were logged after every result (the jobs completed so far, one more each
    // time), then once more at the end.
    let completed: Vec<f64> = back["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["overall/completed_percent"].as_f64())
        .collect();
    assert_eq!(
        completed,
        vec![25.0, 50.0, 75.0, 100.0, 100.0],
        "{}",
        back["history"]
    );
    assert_eq!(back["config"]["max_attempts"], 1, "{}", back["config"]);
    assert_eq!(back["config"]["attempts"], 2);
    let saved = back["files"].as_array().unwrap();
    for name in ["results.jsonl", "summary.json"] {
        assert!(saved.iter().any(|f| f == name), "{saved:?}");
        let copy = std::fs::read_to_string(dir.join("files").join(name)).unwrap();
        assert_eq!(
            copy,
            std::fs::read_to_string(out.join(name)).unwrap(),
            "{name}"
        );
    }
    // Run again: every attempt is skipped, and the same W&B run is logged to.
    let again = run();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let state2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("wandb.json")).unwrap()).unwrap();
    assert_eq!(state2["run_id"], id.as_str());
}

#[test]
fn a_missing_client_stops_the_batch_before_any_attempt_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        format!(
            "{}\n",
            serde_json::json!({"instance_id": "t1", "task": "make f return 2", "repo": repo})
        ),
    )
    .unwrap();
    let script = tmp.path().join("fix.txt");
    std::fs::write(&script, fix_script(2)).unwrap();
    let python = tmp.path().join("no-such-python");
    std::fs::write(
        tmp.path().join("config.toml"),
        format!("[wandb]\npython = \"{}\"\n", python.display()),
    )
    .unwrap();
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("config.toml"))
        .env("XDG_CONFIG_HOME", tmp.path().join("xdg"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .args(["run", "--sandbox", "host", "--allow-host"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .args(["--wandb", "acme/evals"])
        .arg("--out")
        .arg(&out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(stderr.contains("no-such-python"), "{stderr}");
    assert!(stderr.contains("[wandb] python"), "{stderr}");
    // No attempt ran: nothing was recorded for the task.
    assert!(!out.join("results/t1").exists(), "{stderr}");
}
