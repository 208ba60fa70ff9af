//! `lilypad run --reload-weights`: a batch whose check renames a second tiny model over the
//! weight file after the first attempt (as a trainer puts its next round's weights in place);
//! the attempt that runs second has the new weights, and each attempt's provenance and rollout
//! name the weights it ran with.

use crate::common::git_repo;
use std::path::Path;
use std::process::Command;

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn sha256(path: &Path) -> String {
    lilypad::launch::provenance::sha256_file(path).unwrap()
}

#[test]
fn a_renamed_weight_file_is_loaded_before_the_next_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let model = tmp.path().join("model.gguf");
    let next = tmp.path().join("next.gguf");
    lilypad::testmodel::write(&model, &lilypad::testmodel::TinySpec::synthetic()).unwrap();
    let second = lilypad::testmodel::TinySpec {
        seed: 99,
        ..lilypad::testmodel::TinySpec::synthetic()
    };
    lilypad::testmodel::write(&next, &second).unwrap();
    let (first_sha, next_sha) = (sha256(&model), sha256(&next));
    assert_ne!(first_sha, next_sha, "two different weight files");
    std::fs::write(
        tmp.path().join("no-config.toml"),
        "[engine]\nctx = 4096\nthreads = 1\nbatch = 128\nubatch = 64\nmax_turn_tokens = 8\n",
    )
    .unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        "{\"instance_id\": \"t\", \"task\": \"make f return 2\"}\n",
    )
    .unwrap();
    // After each attempt: the next round's weights renamed over the file (a copy, so the
    // second check finds its source again).
    let check = format!(
        "cp {next} {model}.tmp && mv {model}.tmp {model}",
        next = next.display(),
        model = model.display()
    );
    let out = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .args(["run", "--sandbox", "host", "--allow-host", "--uncontained"])
        .args([
            "--attempts",
            "2",
            "--parallel",
            "1",
            "--reload-weights",
            "--rollout",
        ])
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
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The check "passes" (the copy works) or not; either way both attempts must have run.
    for attempt in [1, 2] {
        let dir = out.join("results/t").join(attempt.to_string());
        let result = read_json(&dir.join("result.json"));
        assert!(result.get("error").is_none(), "{result}\n{stderr}");
    }
    let version = |attempt: u32| {
        let dir = out.join("results/t").join(attempt.to_string());
        let traj = read_json(&dir.join("trajectory.json"));
        let rollout = read_json(&dir.join("rollout.json"));
        let sha = traj["provenance"]["model"]["sha256"]
            .as_str()
            .unwrap_or_else(|| panic!("{traj}"))
            .to_string();
        assert_eq!(rollout["weight_version"], format!("sha256:{sha}"));
        sha
    };
    // The batch may start either attempt first (one runs at a time): the first to run had the
    // first weights, the other the renamed-in ones.
    let mut ran = [version(1), version(2)];
    ran.sort();
    let mut want = [first_sha, next_sha];
    want.sort();
    assert_eq!(ran, want, "one attempt on each weight file");
}
