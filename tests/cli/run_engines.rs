//! `lilypad run --parallel N --replicas M`: a batch's attempts spread over several in-process
//! engines (on this CPU-only machine each engine gets its share of the threads; on a GPU
//! machine each its own device). Two attempts held at the same time by their checks (a barrier
//! in the check command) must run on two different engines, and the third engine asked for is
//! not loaded, because at most two attempts run at once.

use crate::common::git_repo;
use std::path::Path;
use std::process::Command;

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn attempts_running_together_go_to_different_engines() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let model = tmp.path().join("model.gguf");
    lilypad::testmodel::write(&model, &lilypad::testmodel::TinySpec::synthetic()).unwrap();
    std::fs::write(
        tmp.path().join("no-config.toml"),
        "[engine]\nctx = 4096\nthreads = 2\nbatch = 128\nubatch = 64\nmax_turn_tokens = 8\n",
    )
    .unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        "{\"instance_id\": \"a\", \"task\": \"make f return 2\"}\n\
         {\"instance_id\": \"b\", \"task\": \"make f return 3\"}\n",
    )
    .unwrap();
    // Each attempt's check waits (up to a minute) until both attempts have reached it, so both
    // hold their engines at once.
    let barrier = tmp.path().join("barrier");
    std::fs::create_dir(&barrier).unwrap();
    let check = format!(
        "touch {b}/$$; for i in $(seq 600); do [ $(ls {b} | wc -l) -ge 2 ] && exit 0; sleep 0.1; done; exit 1",
        b = barrier.display()
    );
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .args(["run", "--sandbox", "host", "--allow-host", "--uncontained"])
        .args(["--parallel", "2", "--replicas", "3", "--json"])
        .arg("--check")
        .arg(&check)
        .arg("--tasks")
        .arg(&tasks)
        .arg("--repo")
        .arg(&repo)
        .arg("--model")
        .arg(&model)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let mut engines = Vec::new();
    for id in ["a", "b"] {
        let result = read_json(&out.join("results").join(id).join("1/result.json"));
        assert!(result.get("error").is_none(), "{result}\n{stderr}");
        assert_eq!(
            result["check"]["passed"], true,
            "both attempts met at the barrier: {result}\n{stderr}"
        );
        engines.push(
            result["engine"]
                .as_u64()
                .unwrap_or_else(|| panic!("{result}")),
        );
    }
    engines.sort_unstable();
    assert_eq!(engines, vec![0, 1], "one attempt on each engine\n{stderr}");
    // Two engines loaded, not the three asked for: no more than --parallel.
    let report = read_json(&out.join("report.json"));
    assert_eq!(report["run"]["engines"], 2, "{report}");
    // The progress events name each attempt's engine.
    let mut started: Vec<u64> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "attempt_started")
        .map(|e| e["engine"].as_u64().unwrap_or_else(|| panic!("{e}")))
        .collect();
    started.sort_unstable();
    assert_eq!(started, vec![0, 1], "{stdout}");
}
