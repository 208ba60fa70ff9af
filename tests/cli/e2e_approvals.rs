//! End to end through a real terminal: Shift-Tab changes the approval policy, the status line
//! shows it and the session log records it; a resume keeps a tighter policy, and declines a
//! looser one than the session started with (saying so) unless `--approve` asks for it.
//! Scripted engine (a mock of the model) that answers at once, host sandbox.

use super::e2e_demo::{have_tmux, session_log, Tmux};
use std::path::Path;
use std::time::{Duration, Instant};

pub const ANSWER: &str = "=== turn ===
Nothing to do.
</think>

All good.
";

/// Run `cmd` in a terminal, let `act` drive it, leave the message line and quit with `q`,
/// and check it exited with 0.
pub fn session(dir: &Path, cmd: &str, act: impl FnOnce(&Tmux)) {
    let done = dir.join("done");
    let _ = std::fs::remove_file(&done);
    let t = Tmux::start(&format!(
        "{cmd} 2>/dev/null; echo $? > '{}'; sleep 60",
        done.display()
    ));
    act(&t);
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    let start = Instant::now();
    while !done.exists() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read_to_string(&done).unwrap_or_default().trim(),
        "0",
        "the session did not end cleanly; the screen:\n{}",
        t.screen()
    );
}

/// The policies the log records in force, in order: each start's and each change.
fn recorded(sessions: &Path) -> Vec<serde_json::Value> {
    session_log(sessions)
        .into_iter()
        .filter_map(|e| match e["event"].as_str() {
            Some("session_started") => Some(e["approval_policy"].clone()),
            Some("approval_policy_changed") => Some(e["policy"].clone()),
            _ => None,
        })
        .collect()
}

fn policy(read_only: &str, edits: &str, commands: &str) -> serde_json::Value {
    serde_json::json!({"read_only": read_only, "edits": edits, "commands": commands})
}

#[test]
fn shift_tab_changes_the_policy_and_resume_keeps_it_but_never_looser() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = super::e2e_resume::calc_repo(tmp.path());
    let script = tmp.path().join("answer.txt");
    std::fs::write(&script, ANSWER).unwrap();
    let sessions = tmp.path().join("sessions");
    let base = format!(
        "cd '{repo}' && XDG_STATE_HOME='{state}' XDG_DATA_HOME='{data}' '{bin}'",
        repo = repo.display(),
        state = tmp.path().join("state").display(),
        data = tmp.path().join("data").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
    );
    let engine = format!(
        "--engine 'script:{}' --session-dir '{}'",
        script.display(),
        sessions.display()
    );
    let default = policy("auto", "ask", "ask");
    let read_only = policy("auto", "deny", "deny");
    let auto = policy("auto", "auto", "auto");

    // A new session: three presses go from the default to edits and commands refused.
    session(
        tmp.path(),
        &format!("{base} --sandbox host {engine} 'look around'"),
        |t| {
            t.wait_for(&["All good.", "approvals edits=ask,commands=ask"]);
            for _ in 0..3 {
                t.keys(&["BTab"]);
            }
            t.wait_for(&[
                "approvals edits=deny,commands=deny",
                "approvals: edits=deny,commands=deny from now on",
            ]);
        },
    );
    assert_eq!(recorded(&sessions).first(), Some(&default));
    assert_eq!(recorded(&sessions).last(), Some(&read_only));

    // Resumed: the tighter policy is kept. Three presses from there reach `auto`.
    session(tmp.path(), &format!("{base} resume --last {engine}"), |t| {
        t.wait_for(&["All good.", "approvals edits=deny,commands=deny"]);
        for _ in 0..3 {
            t.keys(&["BTab"]);
        }
        t.wait_for(&["approvals auto", "approvals: auto from now on"]);
    });
    assert_eq!(recorded(&sessions).last(), Some(&auto));

    // Resumed again: `auto` is looser than the start, so the session goes on with the
    // start's policy and says so.
    session(tmp.path(), &format!("{base} resume --last {engine}"), |t| {
        let screen = t.wait_for(&["loosened to `auto`", "approvals edits=ask,commands=ask"]);
        assert!(!screen.contains("approvals auto"), "{screen}");
    });
    assert_eq!(recorded(&sessions).last(), Some(&default));

    // Asked for again with --approve: taken, and no notice.
    session(
        tmp.path(),
        &format!("{base} resume --last --approve auto {engine}"),
        |t| {
            let screen = t.wait_for(&["All good.", "approvals auto"]);
            assert!(!screen.contains("loosened"), "{screen}");
        },
    );
    assert_eq!(recorded(&sessions).last(), Some(&auto));
}
