//! End to end through tmux and the real binary: a lock file under review is folded to one
//! row, and until Enter opens it the keys act on that row: `j` and `k` leave the cursor there,
//! `m` comments on no hidden line (the note says to open the file first), Space takes or
//! drops the whole file; opened, its lines are shown and `y` approves.

use super::e2e_demo::{have_tmux, Tmux};

/// A lock file of `n` packages, each at `1.0.i`.
fn lock(n: usize) -> String {
    (0..n)
        .map(|i| format!("[[package]]\nname = \"crate{i}\"\nversion = \"1.0.{i}\"\n"))
        .collect()
}

#[test]
fn a_folded_lock_files_row_takes_the_keys_until_enter_opens_it() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let before = lock(40);
    let repo = crate::common::git_repo(&tmp.path().join("repo"), &[("Cargo.lock", &before)]);
    // Two packages far apart move on: two hunks.
    let after = before
        .replace("version = \"1.0.3\"", "version = \"9.9.3\"")
        .replace("version = \"1.0.35\"", "version = \"9.9.35\"");
    let script = tmp.path().join("script.txt");
    std::fs::write(
        &script,
        format!(
            "=== turn ===\nBumping two crates.\n</think>\n\n<tool_call>\n<function=Write>\n<parameter=file_path>\nCargo.lock\n</parameter>\n<parameter=content>\n{after}</parameter>\n</function>\n</tool_call>\n=== turn ===\n</think>\n\nDone.\n"
        ),
    )
    .unwrap();
    let t = Tmux::start(&format!(
        "cd '{repo}' && XDG_STATE_HOME='{tmp}/state' XDG_DATA_HOME='{tmp}/data' XDG_CONFIG_HOME='{tmp}/config' '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{tmp}/sessions' 'bump' 2>/dev/null; sleep 60",
        repo = repo.display(),
        tmp = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
    ));
    let screen = t.wait_for(&[
        "Approve this rewrite?",
        "lines changed (lock file) Enter opens",
        " selected",
    ]);
    assert!(!screen.contains("9.9.3"), "{screen}");
    // Every hunk is taken to begin with (the scripted Write may also change the last line).
    let hunks: String = screen
        .split("hunk 1/")
        .nth(1)
        .unwrap_or_default()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    assert!(hunks.parse::<usize>().unwrap_or(0) >= 2, "{screen}");
    let all = format!("hunk 1/{hunks} · {hunks} selected");
    assert!(screen.contains(&all), "{screen}");
    // j and k move among no hidden line; `m` says to open the file first.
    t.keys(&["j", "j", "k", "m"]);
    let screen =
        t.wait_for(&["this file is folded (lock file): Enter opens it to comment on a line"]);
    assert!(!screen.contains("comment on this line"), "{screen}");
    assert!(screen.contains(&all), "{screen}");
    // Space drops the whole file, and takes it again.
    t.keys(&["Space"]);
    t.wait_for(&[&format!("hunk 1/{hunks} · 0 selected")]);
    t.keys(&["Space"]);
    t.wait_for(&[&all]);
    // Enter opens it: its lines are shown, and `y` approves the whole change.
    t.keys(&["Enter"]);
    t.wait_for(&["version = \"9.9.3\"", "Approve this rewrite?"]);
    t.keys(&["y"]);
    t.wait_for(&["Session patch", "Cargo.lock"]);
    let written = std::fs::read_to_string(repo.join("Cargo.lock")).unwrap();
    assert_eq!(
        written, before,
        "nothing touches the repository before the patch is applied"
    );
}
