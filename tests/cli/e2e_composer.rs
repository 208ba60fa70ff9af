//! The message line through a real terminal: a three-line bracketed paste (tmux's
//! `paste-buffer -p`, whose line ends arrive as CR) reaches the model with its lines; Ctrl-J
//! starts a second line; and in a new session of the same repository Up brings back the
//! messages of the first, oldest last. The session logs and the history file are checked.
//! Scripted engine (a mock of the model), the host sandbox.

use super::e2e_demo::{have_tmux, session_log, Tmux};
use super::e2e_resume::calc_repo;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PASTED: &str = "The test fails:\n  assert add(2, 3) == 5\nPlease fix calc.py";
const TWO_LINES: &str = "first line\nsecond line";

const SCRIPT: &str = "=== turn ===
Read it.
</think>

Noted one.
=== turn ===
Read it.
</think>

Noted two.
=== turn ===
Read it.
</think>

Noted three.
";

/// Whether the log holds a user message of exactly `text`.
pub fn has_user_message(log: &[serde_json::Value], text: &str) -> bool {
    fn holds(v: &serde_json::Value, text: &str) -> bool {
        match v {
            serde_json::Value::Object(m) => {
                (m.get("event").and_then(|e| e.as_str()) == Some("user_message")
                    && m.get("text").and_then(|t| t.as_str()) == Some(text))
                    || m.values().any(|v| holds(v, text))
            }
            serde_json::Value::Array(a) => a.iter().any(|v| holds(v, text)),
            _ => false,
        }
    }
    log.iter().any(|v| holds(v, text))
}

fn start(tmp: &Path, repo: &Path, sessions: &Path, done: &Path) -> Tmux {
    let script = tmp.join("script.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    Tmux::start(&format!(
        "cd '{repo}' && XDG_STATE_HOME='{state}' XDG_DATA_HOME='{data}' LILYPAD_CONFIG='{config}' '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{sessions}' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        state = tmp.join("state").display(),
        data = tmp.join("data").display(),
        config = tmp.join("no-config.toml").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
        sessions = sessions.display(),
        done = done.display(),
    ))
}

fn quit(t: &Tmux, done: &Path) {
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    let start = Instant::now();
    while !done.exists() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(done.exists(), "lilypad quit; the screen:\n{}", t.screen());
}

/// A bracketed paste of `text`, as a terminal sends a clipboard.
fn paste(t: &Tmux, text: &str) {
    let ok = |args: &[&str]| {
        assert!(Command::new("tmux").args(args).status().unwrap().success());
    };
    let buffer = format!("{}-paste", t.name());
    ok(&["set-buffer", "-b", &buffer, text]);
    ok(&["paste-buffer", "-p", "-d", "-b", &buffer, "-t", t.name()]);
    std::thread::sleep(Duration::from_millis(150));
}

#[test]
fn pastes_keep_their_lines_ctrl_j_starts_one_and_up_recalls_across_sessions() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path());
    let (sessions, done) = (tmp.path().join("sessions"), tmp.path().join("done"));
    let t = start(tmp.path(), &repo, &sessions, &done);
    // The message line is open once the session is ready.
    t.wait_for(&["Enter send", "Ctrl-J new line"]);

    // 1. A three-line paste: on screen with its lines, sent with them.
    paste(&t, PASTED);
    let screen = t.wait_for(&["› The test fails:", "Please fix calc.py"]);
    assert!(
        screen.contains("    assert add(2, 3) == 5"),
        "the second line, indented under the first:\n{screen}"
    );
    t.keys(&["Enter"]);
    t.wait_for(&["Noted one."]);

    // 2. Ctrl-J: a message of two lines.
    t.keys(&["first line"]);
    t.keys(&["C-j"]);
    t.keys(&["second line"]);
    t.wait_for(&["› first line", "  second line"]);
    t.keys(&["Enter"]);
    t.wait_for(&["Noted two."]);
    quit(&t, &done);
    drop(t);
    let log = session_log(&sessions);
    assert!(
        has_user_message(&log, PASTED),
        "the pasted message, its lines kept: {log:#?}"
    );
    assert!(has_user_message(&log, TWO_LINES), "{log:#?}");
    let history = std::fs::read_to_string(tmp.path().join("state/lilypad/history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 2, "{history}");

    // 3. A new session of the same repository: Up brings the messages back, newest first.
    let (sessions, done) = (tmp.path().join("sessions-2"), tmp.path().join("done-2"));
    let t = start(tmp.path(), &repo, &sessions, &done);
    t.wait_for(&["Enter send", "Ctrl-J new line"]);
    t.keys(&["Up"]);
    t.wait_for(&["› first line", "  second line"]);
    t.keys(&["Up"]);
    t.wait_for(&["› The test fails:", "Please fix calc.py"]);
    // Down goes through the recalled message's lines, then to the newer message.
    t.keys(&["Down", "Down", "Down"]);
    let screen = t.wait_for(&["› first line", "  second line"]);
    assert!(!screen.contains("The test fails:"), "{screen}");
    t.keys(&["Enter"]);
    t.wait_for(&["Noted one."]);
    quit(&t, &done);
    drop(t);
    assert!(has_user_message(&session_log(&sessions), TWO_LINES));
}
