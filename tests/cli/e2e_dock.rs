//! End to end through tmux and the real binary: a change under review docks under the
//! conversation. At 120x40 the turn's words and the diff share the screen while the decision
//! waits, PgUp scrolls the conversation without leaving the review, and the decision stays in
//! the transcript as a line (seen once the session patch is put aside); at 200x50 (`lilypad demo`) the diff is split, the old and the new
//! line on one row, and `t` goes back to unified.

use super::e2e_demo::{have_tmux, Tmux};
use std::process::Command;

fn skip() -> bool {
    if have_tmux() {
        return false;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is required under CI"
    );
    eprintln!("skipped: no tmux");
    true
}

/// One turn: a long explanation, its last words, then the edit.
fn long_turn() -> String {
    let middle: String = (1..=60)
        .map(|i| format!("Point {i} of a long explanation of the change.\n"))
        .collect();
    format!(
        "=== turn ===\nThe test expects a sum.\n</think>\n\nEARLY-MARKER: what the test checks.\n\n{middle}\nLAST-WORDS: the subtraction becomes an addition.\n\n<tool_call>\n<function=Edit>\n<parameter=file_path>\ncalc.py\n</parameter>\n<parameter=old_string>\n    return a - b\n</parameter>\n<parameter=new_string>\n    return a + b\n</parameter>\n</function>\n</tool_call>\n=== turn ===\n</think>\n\nDone.\n"
    )
}

#[test]
fn the_turns_words_and_the_diff_share_the_screen_and_pgup_scrolls_the_conversation() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = super::e2e_resume::calc_repo(tmp.path());
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, long_turn()).unwrap();
    let t = Tmux::start(&format!(
        "cd '{repo}' && XDG_STATE_HOME='{tmp}/state' XDG_CONFIG_HOME='{tmp}/config' '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{tmp}/sessions' 'fix add'; sleep 60",
        repo = repo.display(),
        tmp = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
    ));
    let screen = t.wait_for(&["Approve this edit?", "LAST-WORDS", "+    return a + b"]);
    assert!(!screen.contains("EARLY-MARKER"), "{screen}");
    for _ in 0..4 {
        t.keys(&["PageUp"]);
    }
    let screen = t.wait_for(&["Point 2", "Approve this edit?", "+    return a + b"]);
    assert!(!screen.contains("LAST-WORDS"), "scrolled up:\n{screen}");
    // The decision is still the review's: `y` approves, and its line stays in the transcript.
    t.keys(&["y"]);
    // The task ends: the session patch is in front; Esc goes back to the transcript.
    t.wait_for(&["Session patch"]);
    t.keys(&["Escape"]);
    t.wait_for(&["✓ calc.py: applied", "Done."]);
}

#[test]
fn at_200_columns_the_diff_is_split_and_t_goes_back_to_unified() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = Tmux::start(&format!(
        "XDG_STATE_HOME='{tmp}/state' XDG_CONFIG_HOME='{tmp}/config' '{bin}' demo --repo '{tmp}/repo' --session-dir '{tmp}/sessions' --delay-ms 0; sleep 60",
        tmp = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
    ));
    assert!(Command::new("tmux")
        .args(["resize-window", "-t", t.name(), "-x", "200", "-y", "50"])
        .status()
        .unwrap()
        .success());
    let both = |screen: &str| {
        screen
            .lines()
            .any(|l| l.contains("qty < threshold") && l.contains("qty <= threshold"))
    };
    let screen = t.wait_for(&["Approve this edit?", "qty <= threshold"]);
    let screen = if both(&screen) {
        screen
    } else {
        // The first frame may have been drawn at 120 columns: wait for the resize's redraw.
        std::thread::sleep(std::time::Duration::from_millis(500));
        t.screen()
    };
    assert!(
        both(&screen),
        "one row holds the old and the new line:\n{screen}"
    );
    assert!(screen.contains("The docstring says"), "{screen}");
    t.keys(&["t"]);
    let screen = t.wait_for(&["Approve this edit?", "qty <= threshold", "qty < threshold"]);
    assert!(!both(&screen), "unified again:\n{screen}");
}
