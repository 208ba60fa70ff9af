//! Rewinding through a real terminal: three turns each edit `calc.py`, `R` goes back to turn
//! 1 (the question says files and conversation go back), the transcript shows turn 1 again,
//! a new message continues the session, and the session patch applied to the repository is
//! turn 1's edit. The log records the rewind; `lilypad resume ID --at-turn 2` then forks a
//! new session whose conversation and files are those of turn 2. Scripted engine (a mock of
//! the model), the host sandbox.

use super::e2e_demo::{have_tmux, Tmux};
use super::e2e_resume::calc_repo;
use std::path::Path;
use std::process::Command;

fn edit(old: &str, new: &str, label: &str) -> String {
    format!(
        "=== turn ===\nEditing.\n</think>\n\nEdit number {label}.\n\n<tool_call>\n<function=Edit>\n<parameter=file_path>\ncalc.py\n</parameter>\n<parameter=old_string>\n{old}\n</parameter>\n<parameter=new_string>\n{new}\n</parameter>\n</function>\n</tool_call>\n"
    )
}

fn script() -> String {
    let mut s = String::new();
    s.push_str(&edit("    return a - b", "    return a + b  # one", "one"));
    s.push_str(&edit(
        "    return a + b  # one",
        "    return a + b  # two",
        "two",
    ));
    s.push_str(&edit(
        "    return a + b  # two",
        "    return a + b  # three",
        "three",
    ));
    s.push_str("=== turn ===\nDone.\n</think>\n\nThree edits made.\n");
    s.push_str("=== turn ===\nBack.\n</think>\n\nWe are back at the first edit.\n");
    s
}

fn log_of(sessions: &Path) -> std::path::PathBuf {
    std::fs::read_dir(sessions)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
}

#[test]
fn rewinding_to_turn_one_in_a_real_terminal() {
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
    let script_file = tmp.path().join("script.txt");
    std::fs::write(&script_file, script()).unwrap();
    let sessions = tmp.path().join("sessions");
    let env = format!(
        "XDG_STATE_HOME='{}' XDG_DATA_HOME='{}'",
        tmp.path().join("state").display(),
        tmp.path().join("data").display()
    );
    let bin = env!("CARGO_BIN_EXE_lilypad");
    let done = tmp.path().join("done");
    let t = Tmux::start(&format!(
        "cd '{repo}' && {env} '{bin}' --engine 'script:{script}' --sandbox host --approve edits=auto --session-dir '{sessions}' 'edit calc three times' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        script = script_file.display(),
        sessions = sessions.display(),
        done = done.display(),
    ));
    t.wait_for(&["Session patch", "# three"]);
    // Back to the transcript, off the message line, then R: the question starts at turn 3
    // of 4.
    t.keys(&["Escape"]);
    t.wait_for(&["Three edits made."]);
    t.keys(&["Escape"]);
    t.keys(&["R"]);
    t.wait_for(&["Rewind to turn 3 of 4?"]);
    t.keys(&["Left", "Left"]);
    let question = t.wait_for(&["Rewind to turn 1 of 4? Files and conversation go back to"]);
    assert!(question.contains("the end of turn 1"), "{question}");
    t.keys(&["Enter"]);
    let screen = t.wait_for(&["rewound to the end of turn 1 (from turn 4)"]);
    assert!(screen.contains("Edit number one."), "{screen}");
    assert!(
        !screen.contains("Edit number two."),
        "turn 2 is gone from the transcript: {screen}"
    );
    assert!(!screen.contains("Three edits made."), "{screen}");
    // The message line is ready: a new message continues from turn 1.
    t.keys(&["where are we now?", "Enter"]);
    // The session patch is turn 1's edit.
    t.wait_for(&["Session patch 1 file +1 -1", "+    return a + b  # one"]);
    t.keys(&["a"]);
    t.wait_for(&["patch applied"]);
    t.keys(&["q"]);
    let start = std::time::Instant::now();
    while !done.exists() && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(t);
    assert_eq!(
        std::fs::read_to_string(repo.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b  # one\n",
        "the files are turn 1's"
    );
    let log = log_of(&sessions);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("\"event\":\"rewound\"").count(), 1, "{text}");
    assert!(text.contains("We are back at the first edit."), "{text}");
    assert!(text.contains("\"event\":\"rewound\",\"turn\":1"), "{text}");
    // The turn after the rewind is turn 2 again.
    assert_eq!(
        text.matches("\"event\":\"turn_started\",\"turn\":2")
            .count(),
        2
    );
    // Only turn 1's patch is left beside the log: the rewind dropped turns 2 and 3.
    let mut kept: Vec<String> = std::fs::read_dir(log.with_extension("turns"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    assert_eq!(kept, vec!["1.patch"]);
}

#[test]
fn resume_at_turn_forks_a_new_session_from_an_old_ones_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path());
    let script_file = tmp.path().join("script.txt");
    std::fs::write(&script_file, script()).unwrap();
    let sessions = tmp.path().join("sessions");
    let bin = env!("CARGO_BIN_EXE_lilypad");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .current_dir(&repo)
            .env("XDG_STATE_HOME", tmp.path().join("state"))
            .env("XDG_DATA_HOME", tmp.path().join("data"))
            .output()
            .unwrap()
    };
    let out = run(&[
        "run",
        "--engine",
        &format!("script:{}", script_file.display()),
        "--sandbox",
        "host",
        "--allow-host",
        "--approve",
        "auto",
        "--session-dir",
        &sessions.display().to_string(),
        "--task",
        "edit calc three times",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old = log_of(&sessions);
    let old_id = old.file_stem().unwrap().to_string_lossy().into_owned();
    let answer = tmp.path().join("answer.txt");
    std::fs::write(
        &answer,
        "=== turn ===\nFork.\n</think>\n\nForked at turn two.\n",
    )
    .unwrap();
    let out = run(&[
        "resume",
        &old_id,
        "--at-turn",
        "2",
        "--json",
        "--engine",
        &format!("script:{}", answer.display()),
        "--allow-host",
        "--session-dir",
        &sessions.display().to_string(),
        "--message",
        "what did you do so far?",
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // A second log: the new session, its header naming the parent and the turn.
    let logs: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && *p != old)
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["parent"], old_id.as_str());
    assert_eq!(header["parent_turn"], 2);
    assert_ne!(header["session_id"], old_id.as_str());
    assert!(text.contains("\"event\":\"rewound\",\"turn\":2"), "{text}");
    assert!(text.contains("Forked at turn two."));
    // The new session's files are turn 2's: its patch holds the second edit.
    let patch = std::fs::read_to_string(logs[0].with_extension("patch")).unwrap();
    assert!(patch.contains("+    return a + b  # two"), "{patch}");
    // The old session is left as it was.
    assert!(!std::fs::read_to_string(&old).unwrap().contains("rewound"));
    // Rebuilt, the fork's conversation is turn 2's plus the new exchange.
    let (h, events) = lilypad::session::read_log(&logs[0]).unwrap();
    let events: Vec<_> = events.into_iter().map(|(_, e)| e).collect();
    let rebuilt = lilypad::session::rebuild(&h.system_prompt, &events);
    let assistants = rebuilt
        .messages
        .iter()
        .filter(|m| matches!(m, lilypad::protocol::Message::Assistant { .. }))
        .count();
    assert_eq!(assistants, 3, "turns 1 and 2, then the fork's answer");
}
