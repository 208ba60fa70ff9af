//! The door into a session, through the real binary: options are checked when the command line
//! is read (a typo in `--approve` or `--engine` fails at once, before any model loads or any
//! sandbox starts), and a resumed log whose header records a policy that cannot be read fails
//! with an error naming it, never with a default policy.

use crate::common::git_repo;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ANSWER: &str = "=== turn ===
Nothing to change.
</think>

Done.
";

fn lilypad(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    c.env("LILYPAD_CONFIG", dir.join("no-config.toml"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("LILYPAD_SESSION_DIR", dir.join("sessions"))
        .env_remove("LILYPAD_MODEL");
    c
}

#[test]
fn a_typo_in_approve_fails_before_any_model_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-model.gguf");
    for args in [
        vec!["run", "--task", "t", "--approve", "edits=sometimes"],
        vec!["--approve", "edits=sometimes", "t"],
        vec!["resume", "--last", "--approve", "edits=sometimes"],
    ] {
        let started = Instant::now();
        let out = lilypad(tmp.path())
            .args(&args)
            .arg("--model")
            .arg(&missing)
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("approval policy"), "{args:?}: {err}");
        assert!(err.contains("sometimes"), "{args:?}: {err}");
        assert!(!err.contains("no-such-model"), "{args:?}: {err}");
        assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
    }
    // An engine that does not exist fails the same way.
    let out = lilypad(tmp.path())
        .args(["run", "--task", "t", "--engine", "lama"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown engine"), "{err}");
}

#[test]
fn a_policy_in_a_session_header_that_cannot_be_read_fails_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_repo(&tmp.path().join("repo"), &[("a.txt", "a\n")]);
    let script = tmp.path().join("answer.script");
    std::fs::write(&script, ANSWER).unwrap();
    let engine = format!("script:{}", script.display());
    let out = lilypad(tmp.path())
        .args(["run", "--task", "look", "--json", "--sandbox", "host"])
        .args(["--allow-host", "--engine", &engine])
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(first).unwrap();
    header["policy"] = "edits=sometimes".into();
    std::fs::write(&log, format!("{header}\n{rest}")).unwrap();
    let out = lilypad(tmp.path())
        .args(["resume", "--last", "--json", "--message", "again"])
        .args(["--engine", &engine])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("approval policy"), "{err}");
    assert!(err.contains("sometimes"), "{err}");
    assert!(err.contains(&log.display().to_string()), "{err}");
}
