//! The default (chat) keys through a real terminal (tmux) and the real binary on the scripted
//! engine: Ctrl-G hands the message line to a scripted `$EDITOR` and sends what it saved;
//! "please" typed while the agent works lands on the message line and is queued, the next
//! user message of the session log; Ctrl-Z stops lilypad with the terminal given back to the
//! shell, and `fg` brings the screen back; with the terminal out of focus (a focus-out report
//! sent to the pane) a review that waits writes OSC 9 and sets the window title.

use super::e2e_demo::{have_tmux, session_log, Tmux};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

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

/// The command that runs lilypad in `tmp`'s repository with the chat keys; `env` goes before
/// it; its exit status is written to `done`.
fn command(tmp: &Path, env: &str, script: &str) -> String {
    std::fs::write(tmp.join("script.txt"), script).unwrap();
    format!(
        "cd '{repo}' && LILYPAD_KEYS=chat XDG_STATE_HOME='{state}' XDG_DATA_HOME='{data}' LILYPAD_CONFIG='{config}' {env} '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{sessions}' 2>'{stderr}'; echo $? > '{done}'",
        repo = tmp.join("repo").display(),
        state = tmp.join("state").display(),
        data = tmp.join("data").display(),
        config = tmp.join("config.toml").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = tmp.join("script.txt").display(),
        sessions = tmp.join("sessions").display(),
        stderr = tmp.join("stderr").display(),
        done = tmp.join("done").display(),
    )
}

fn wait_done(t: &Tmux, tmp: &Path) {
    let start = Instant::now();
    while !tmp.join("done").exists() {
        assert!(
            start.elapsed() < WAIT,
            "lilypad did not exit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The user messages of the session log, in order.
fn user_messages(sessions: &Path) -> Vec<String> {
    session_log(sessions)
        .iter()
        .filter(|v| v.get("event").and_then(|e| e.as_str()) == Some("user_message"))
        .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_string))
        .collect()
}

/// An `$EDITOR` that replaces the file with a message of two lines.
fn editor_script(dir: &Path) -> PathBuf {
    let path = dir.join("editor.sh");
    std::fs::write(
        &path,
        "#!/bin/sh\nprintf 'written in the editor\\nsecond line\\n' > \"$1\"\n",
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path
}

#[test]
fn ctrl_g_edits_the_draft_and_typing_while_the_agent_works_queues() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    super::e2e_resume::calc_repo(tmp.path());
    let long: String = (0..300).map(|i| format!("thought {i} ")).collect();
    let script = format!(
        "=== turn ===\nReading.\n</think>\n\nNoted the edit.\n=== turn ===\n{long}\n</think>\n\nSlow answer.\n=== turn ===\nOk.\n</think>\n\nNoted please.\n"
    );
    let editor = editor_script(tmp.path());
    let t = Tmux::start(&format!(
        "{}; sleep 60",
        command(
            tmp.path(),
            &format!(
                "EDITOR='{}' VISUAL= LILYPAD_SCRIPT_DELAY_MS=20",
                editor.display()
            ),
            &script
        )
    ));
    t.wait_for(&["Enter send"]);
    t.keys(&["-l", "draft"]);
    t.wait_for(&["› draft"]);
    t.keys(&["C-g"]);
    t.wait_for(&["› written in the editor", "second line"]);
    t.keys(&["Enter"]);
    t.wait_for(&["Noted the edit."]);
    // A slow turn: "please" typed while it runs lands on the message line and is queued.
    t.keys(&["-l", "go on"]);
    t.keys(&["Enter"]);
    t.wait_for(&["thought 1 "]);
    t.keys(&["-l", "please"]);
    t.wait_for(&["› please"]);
    t.keys(&["Enter"]);
    t.wait_for(&["queued › please"]);
    t.wait_for_within(&["Noted please."], Duration::from_secs(120));
    // The answer is on screen a moment before its task ends; Ctrl-C then would interrupt (and
    // ask whether to quit) instead of quitting.
    t.wait_for(&["● finished"]);
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
    let sent = user_messages(&tmp.path().join("sessions"));
    assert_eq!(
        sent,
        ["written in the editor\nsecond line", "go on", "please"],
        "the editor's text, then the queued message after the slow turn"
    );
}

#[test]
fn a_failed_editor_keeps_the_draft() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    super::e2e_resume::calc_repo(tmp.path());
    let t = Tmux::start(&format!(
        "{}; sleep 60",
        command(
            tmp.path(),
            "EDITOR=/nonexistent/editor VISUAL=",
            "=== turn ===\nOk.\n</think>\n\nNoted.\n"
        )
    ));
    t.wait_for(&["Enter send"]);
    t.keys(&["-l", "keep me"]);
    t.keys(&["C-g"]);
    t.wait_for(&["the editor failed, the message is kept", "› keep me"]);
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
}

#[test]
fn ctrl_z_suspends_and_fg_brings_the_screen_back() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    super::e2e_resume::calc_repo(tmp.path());
    // An interactive shell with job control, as a person's terminal has.
    let t = Tmux::start("env PS1='shell$ ' bash --norc --noprofile -i");
    t.wait_for(&["shell$"]);
    let cmd = command(tmp.path(), "", "=== turn ===\nOk.\n</think>\n\nNoted.\n");
    t.keys(&["-l", &cmd]);
    t.keys(&["Enter"]);
    t.wait_for(&["Enter send"]);
    t.keys(&["-l", "typed before"]);
    t.wait_for(&["› typed before"]);
    t.keys(&["C-z"]);
    let screen = t.wait_for(&["Stopped"]);
    assert!(!screen.contains("Enter send"), "{screen}");
    assert_eq!(tmux_format(&t, "#{alternate_on}"), "0");
    t.keys(&["-l", "fg"]);
    t.keys(&["Enter"]);
    t.wait_for(&["Enter send", "› typed before"]);
    assert_eq!(tmux_format(&t, "#{alternate_on}"), "1");
    // The keys work again: the message is sent.
    t.keys(&["Enter"]);
    t.wait_for(&["Noted."]);
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
}

fn tmux_format(t: &Tmux, format: &str) -> String {
    let out = Command::new("tmux")
        .args(["display-message", "-p", "-t", t.name(), format])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

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
=== turn ===
Done.
</think>

Fixed add.
";

#[test]
fn a_review_waiting_out_of_focus_notifies_and_sets_the_title() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    super::e2e_resume::calc_repo(tmp.path());
    std::fs::write(
        tmp.path().join("config.toml"),
        "[interface]\nnotify_method = \"osc9\"\n",
    )
    .unwrap();
    let t = Tmux::start(&format!("{}; sleep 60", command(tmp.path(), "", EDIT)));
    t.wait_for(&["Enter send"]);
    let raw = tmp.path().join("pty.raw");
    assert!(Command::new("tmux")
        .args([
            "pipe-pane",
            "-o",
            "-t",
            t.name(),
            &format!("cat >> '{}'", raw.display())
        ])
        .status()
        .unwrap()
        .success());
    // The terminal's focus-out report (CSI O), as a terminal with focus reports on sends it.
    t.keys(&["-H", "1b", "5b", "4f"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["-l", "fix add"]);
    t.keys(&["Enter"]);
    t.wait_for(&["approve"]);
    let want = "\x1b]9;lilypad: a change or a command waits for review\x1b\\";
    let start = Instant::now();
    loop {
        let got = std::fs::read(&raw).unwrap_or_default();
        if String::from_utf8_lossy(&got).contains(want) {
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "no OSC 9 {want:?} in the pty output: {:?}",
            String::from_utf8_lossy(&got)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        tmux_format(&t, "#{pane_title}"),
        "lilypad - awaiting review"
    );
    // Back in focus, the next event rings nothing.
    t.keys(&["-H", "1b", "5b", "49"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["y"]);
    // The task finishes with the session patch in front.
    t.wait_for(&["Session patch"]);
    std::thread::sleep(Duration::from_millis(300));
    let got = String::from_utf8_lossy(&std::fs::read(&raw).unwrap()).into_owned();
    assert!(
        !got.contains("\x1b]9;lilypad: the task finished"),
        "in focus: no notification"
    );
    assert_eq!(
        tmux_format(&t, "#{pane_title}"),
        "lilypad - waiting for a message"
    );
    t.keys(&["d"]);
    t.wait_for(&["Fixed add."]);
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
}

/// By default the interface draws on the alternate screen and takes the mouse's reports;
/// `--no-alt-screen` with `[interface] mouse = false` draws on the main screen, leaves the
/// mouse to the terminal, and the last screen stays there after exit.
#[test]
fn the_main_screen_and_the_terminals_mouse_when_asked() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    super::e2e_resume::calc_repo(tmp.path());
    let script = "=== turn ===\nOk.\n</think>\n\nNoted the message.\n";
    let t = Tmux::start(&format!("{}; sleep 60", command(tmp.path(), "", script)));
    t.wait_for(&["Enter send"]);
    assert_eq!(tmux_format(&t, "#{alternate_on}"), "1");
    assert_eq!(tmux_format(&t, "#{mouse_any_flag}"), "1");
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
    drop(t);
    std::fs::remove_file(tmp.path().join("done")).unwrap();

    std::fs::write(
        tmp.path().join("config.toml"),
        "[interface]\nmouse = false\n",
    )
    .unwrap();
    let cmd = command(tmp.path(), "", script)
        .replace(" --sandbox host", " --no-alt-screen --sandbox host");
    let t = Tmux::start(&format!("{cmd}; sleep 60"));
    t.wait_for(&["Enter send"]);
    assert_eq!(tmux_format(&t, "#{alternate_on}"), "0");
    assert_eq!(tmux_format(&t, "#{mouse_any_flag}"), "0");
    t.keys(&["-l", "hello"]);
    t.keys(&["Enter"]);
    t.wait_for(&["Noted the message."]);
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
    let screen = t.screen();
    assert!(
        screen.contains("Noted the message."),
        "the last screen stays after exit:\n{screen}"
    );
}

/// `[interface] notify_command` runs on each event of `notify`, in focus or not, with the event
/// as JSON for its last argument.
#[test]
fn the_notify_command_gets_each_event_as_json() {
    if skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    super::e2e_resume::calc_repo(tmp.path());
    let out = tmp.path().join("notified.jsonl");
    std::fs::write(
        tmp.path().join("config.toml"),
        format!(
            "[interface]\nnotify_command = [\"sh\", \"-c\", \"printf '%s\\\\n' \\\"$0\\\" >> '{}'\"]\n",
            out.display()
        ),
    )
    .unwrap();
    let t = Tmux::start(&format!("{}; sleep 60", command(tmp.path(), "", EDIT)));
    t.wait_for(&["Enter send"]);
    t.keys(&["-l", "fix add"]);
    t.keys(&["Enter"]);
    t.wait_for(&["y approve"]);
    t.keys(&["y"]);
    // The task finishes with the session patch in front.
    t.wait_for(&["Session patch"]);
    let start = Instant::now();
    let events = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if events.len() >= 2 || start.elapsed() > WAIT {
            break events;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    t.keys(&["d"]);
    t.wait_for(&["Fixed add."]);
    t.keys(&["C-c"]);
    wait_done(&t, tmp.path());
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["review_waiting", "task_finished"], "{events:?}");
    let repo = tmp.path().join("repo");
    assert_eq!(events[0]["repo"], repo.display().to_string(), "{events:?}");
    assert!(events[0]["message"].as_str().unwrap().contains("review"));
}
