//! End to end through a real terminal: a session is killed with SIGKILL while an edit waits
//! for approval, and `lilypad resume --last` reopens the interface on the same review; the
//! person approves, applies the patch, and the repository holds exactly the fix. Scripted
//! engine (a mock of the model), the contained host sandbox where bubblewrap works.

use super::e2e_demo::{have_tmux, Tmux};
use std::process::Command;

const EDIT: &str = "=== turn ===
The add function subtracts.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
calc.py
</parameter>
<parameter=old_string>
    return a - b
</parameter>
<parameter=new_string>
    return a + b
</parameter>
</function>
</tool_call>
";

const ANSWER: &str = "=== turn ===
Done.
</think>

Fixed `add`.
";

/// `DIR/repo`: a git repository of one commit holding `calc.py`, whose `add` subtracts.
pub fn calc_repo(dir: &std::path::Path) -> std::path::PathBuf {
    crate::common::git_repo(
        &dir.join("repo"),
        &[("calc.py", "def add(a, b):\n    return a - b\n")],
    )
}

#[test]
fn a_killed_session_resumes_at_its_pending_approval() {
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
    let (first, after) = (tmp.path().join("first.txt"), tmp.path().join("after.txt"));
    std::fs::write(&first, EDIT).unwrap();
    // The resumed session's model: the scripted engine knows no turns, so its script starts
    // where the resume does.
    std::fs::write(&after, ANSWER).unwrap();
    let sessions = tmp.path().join("sessions");
    let env = format!(
        "XDG_STATE_HOME='{}' XDG_DATA_HOME='{}'",
        tmp.path().join("state").display(),
        tmp.path().join("data").display()
    );
    let bin = env!("CARGO_BIN_EXE_lilypad");

    let first_run = Tmux::start(&format!(
        "cd '{repo}' && {env} exec '{bin}' --engine 'script:{first}' --sandbox host --session-dir '{sessions}' 'fix add'",
        repo = repo.display(),
        first = first.display(),
        sessions = sessions.display(),
    ));
    first_run.wait_for(&["Approve this edit?", "return a + b"]);
    let pid = first_run.pane_pid();
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    drop(first_run);
    assert_eq!(
        std::fs::read_to_string(repo.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a - b\n",
        "nothing applied before the review"
    );

    let done = tmp.path().join("done");
    let resumed = Tmux::start(&format!(
        "cd '{repo}' && {env} '{bin}' resume --last --engine 'script:{after}' --session-dir '{sessions}' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        after = after.display(),
        sessions = sessions.display(),
        done = done.display(),
    ));
    // The same review, asked again.
    resumed.wait_for(&["Approve this edit?", "return a + b"]);
    resumed.keys(&["y"]);
    resumed.wait_for(&["Session patch"]);
    resumed.keys(&["a"]);
    let screen = resumed.wait_for(&["patch applied"]);
    assert!(
        screen.contains("Fixed add") || screen.contains("task finished"),
        "{screen}"
    );
    resumed.keys(&["q"]);
    let start = std::time::Instant::now();
    while !done.exists() && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(&done).unwrap().trim(), "0");
    assert_eq!(
        std::fs::read_to_string(repo.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n",
        "the repository holds exactly the fix"
    );
    // One log: the first session's events and then the resumed ones, with the request twice.
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    assert_eq!(text.matches("\"event\":\"approval_requested\"").count(), 2);
    assert_eq!(text.matches("\"event\":\"session_started\"").count(), 2);
}
