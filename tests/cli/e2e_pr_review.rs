//! End to end through a real terminal (tmux, 120x40) and the real binary on the scripted
//! engine (a mock of the model): a session edits two files; at the session patch the person
//! leaves pending comments on both (editing one before submitting), requests changes with a
//! summary, and the agent goes on from the one message the session log records; a comment
//! recorded without sending reaches the log and the transcript, not the model. In a second
//! session `t` splits the session review's diff and back, and `q` with a comment not sent
//! warns first; the second `q` quits, and nothing was sent.

use super::e2e_demo::{have_tmux, session_log, Tmux};
use std::time::{Duration, Instant};

const INVENTORY: &str = "def low_stock(items, threshold):
    \"\"\"Items with at most `threshold` left.\"\"\"
    return [i for i in items if i.count < threshold]
";

const APP: &str = "from inventory import low_stock


def report(items):
    print(low_stock(items, 5))
";

const SCRIPT: &str = "=== turn ===
The docstring says at most, the code compares with <.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
inventory.py
</parameter>
<parameter=old_string>
    return [i for i in items if i.count < threshold]
</parameter>
<parameter=new_string>
    return [i for i in items if i.count <= threshold]
</parameter>
</function>
</tool_call>
=== turn ===
The report should hand the list back.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
app.py
</parameter>
<parameter=old_string>
    print(low_stock(items, 5))
</parameter>
<parameter=new_string>
    return low_stock(items, 5)
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

Fixed both files.
=== turn ===
Reading the review.
</think>

Addressed your review.
";

#[test]
fn request_changes_sends_every_pending_comment_as_one_message() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = crate::common::git_repo(
        &tmp.path().join("repo"),
        &[("inventory.py", INVENTORY), ("app.py", APP)],
    );
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let sessions = tmp.path().join("sessions");
    let done = tmp.path().join("done");
    let t = Tmux::start(&format!(
        "cd '{repo}' && XDG_STATE_HOME='{state}' XDG_DATA_HOME='{data}' XDG_CONFIG_HOME='{config}' '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{sessions}' 'fix low stock' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        state = tmp.path().join("state").display(),
        data = tmp.path().join("data").display(),
        config = tmp.path().join("config").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
        sessions = sessions.display(),
        done = done.display(),
    ));
    t.wait_for(&["Approve this edit?", "<= threshold"]);
    t.keys(&["y"]);
    t.wait_for(&["Approve this edit?", "return low_stock(items, 5)"]);
    t.keys(&["y"]);

    // The session review: the file list (both files, the first viewed) beside the first diff.
    let screen = t.wait_for(&["Session patch", "whole session", "1/2 viewed"]);
    assert!(
        screen.contains("▶✓ app.py") && screen.contains(" · inventory.py"),
        "{screen}"
    );
    // app.py: the cursor starts on the removed line; `j` goes to the added one.
    t.keys(&["j", "m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "print it too"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ print it too (pending)", "1 pending"]);
    // `m` again opens the pending comment: it is edited before the review is submitted.
    t.keys(&["m"]);
    t.wait_for(&["comment on this line › print it too"]);
    t.keys(&["C-u"]);
    t.keys(&["-l", "return a sorted list"]);
    t.keys(&["Enter"]);
    let screen = t.wait_for(&["└ return a sorted list (pending)"]);
    assert!(!screen.contains("print it too"), "{screen}");
    // inventory.py: a comment on its added line and one on the file.
    t.keys(&["]"]);
    t.wait_for(&["2/2 viewed", "▶✓ inventory.py"]);
    t.keys(&["j", "m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "at most means <="]);
    t.keys(&["Enter"]);
    t.keys(&["M"]);
    t.wait_for(&["comment on this file ›"]);
    t.keys(&["-l", "add a test"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ on the file: add a test (pending)", "3 pending", "✎2"]);
    // Request changes: the summary is typed last; the agent goes on from the message.
    t.keys(&["r"]);
    t.wait_for(&["request changes: a summary"]);
    t.keys(&["-l", "then run the tests"]);
    t.keys(&["Enter"]);
    // The next turn ends with the session patch in front again. A comment recorded without
    // sending (`C`) goes to the session log and the transcript, not to the model.
    t.wait_for(&["step 4/150", "Session patch"]);
    t.keys(&["m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "keep a printing wrapper"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ keep a printing wrapper (pending)"]);
    t.keys(&["C"]);
    t.wait_for(&["record the comments: a summary"]);
    t.keys(&["-l", "for later"]);
    t.keys(&["Enter"]);
    t.keys(&["Escape"]);
    t.wait_for(&[
        "changes requested: 3 comments",
        "Addressed your review.",
        "review comments recorded (not sent to the model)",
        "keep a printing wrapper",
    ]);
    t.keys(&["C-c"]);
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "lilypad did not exit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let log = session_log(&sessions);
    let messages: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "user_message")
        .filter_map(|e| e["text"].as_str())
        .collect();
    let reviews: Vec<&&str> = messages
        .iter()
        .filter(|m| m.contains("request changes"))
        .collect();
    assert_eq!(reviews.len(), 1, "{messages:#?}");
    let want = "I reviewed your changes and request changes:\n\n\
        1. app.py:5 (new) \"return low_stock(items, 5)\": return a sorted list\n\
        2. inventory.py (the file): add a test\n\
        3. inventory.py:3 (new) \"return [i for i in items if i.count <= threshold]\": at most means <=\n\n\
        then run the tests";
    assert_eq!(*reviews[0], want);
    // The recorded comments are in the log, with their places, and reached no message.
    let recorded: Vec<&serde_json::Value> = log
        .iter()
        .filter(|e| e["event"] == "comments_recorded")
        .collect();
    assert_eq!(recorded.len(), 1, "{log:#?}");
    let comments = recorded[0]["comments"].as_array().unwrap();
    let texts: Vec<&str> = comments.iter().filter_map(|c| c["text"].as_str()).collect();
    assert_eq!(
        texts,
        ["for later", "keep a printing wrapper"],
        "{comments:#?}"
    );
    assert!(
        comments[1]["place"]
            .as_str()
            .is_some_and(|p| p.starts_with("app.py:5 (")),
        "{comments:#?}"
    );
    assert!(
        !messages.iter().any(|m| m.contains("printing wrapper")),
        "{messages:#?}"
    );
    // The export keeps them too.
    let md = std::process::Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["export", "--last", "--session-dir"])
        .arg(&sessions)
        .env("XDG_CONFIG_HOME", tmp.path().join("config"))
        .env("XDG_DATA_HOME", tmp.path().join("data"))
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    let at = md
        .find("## Review comments (recorded, not sent to the model)")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        md[at..].contains("keep a printing wrapper") && md[at..].contains("`the whole change`"),
        "{md}"
    );
    // The agent went on from it: its next answer is the script's next turn.
    assert!(
        log.iter().any(|e| e["event"] == "task_finished"
            && e["final_answer"]
                .as_str()
                .is_some_and(|a| a.contains("Addressed your review."))),
        "{log:#?}"
    );
}

const ONE_EDIT: &str = "=== turn ===
The test expects a sum.
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
</think>

Done.
";

#[test]
fn t_splits_the_session_review_and_q_with_a_comment_not_sent_warns_first() {
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
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, ONE_EDIT).unwrap();
    let sessions = tmp.path().join("sessions");
    let done = tmp.path().join("done");
    let t = Tmux::start(&format!(
        "cd '{repo}' && XDG_STATE_HOME='{tmp}/state' XDG_DATA_HOME='{tmp}/data' XDG_CONFIG_HOME='{tmp}/config' '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{sessions}' 'fix add' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        tmp = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
        sessions = sessions.display(),
        done = done.display(),
    ));
    t.wait_for(&["Approve this edit?", "+    return a + b"]);
    t.keys(&["y"]);
    let both = |screen: &str| {
        screen
            .lines()
            .any(|l| l.contains("return a - b") && l.contains("return a + b"))
    };
    // At 120 columns the session review's diff starts unified; `t` splits it, `t` again not.
    let screen = t.wait_for(&["Session patch", "return a + b"]);
    assert!(!both(&screen), "unified:\n{screen}");
    t.keys(&["t"]);
    let start = Instant::now();
    while !both(&t.screen()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "one row holds the old and the new line:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["t"]);
    let start = Instant::now();
    while both(&t.screen()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "unified again:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A pending comment, then `q`: a warning, and the session goes on.
    t.keys(&["j", "m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "why plus"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ why plus (pending)", "1 pending"]);
    t.keys(&["q"]);
    t.wait_for(&["1 comment not sent", "q again quits and loses them"]);
    assert!(!done.exists(), "the first q quit:\n{}", t.screen());
    // The second `q` quits, nothing sent.
    t.keys(&["q"]);
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "lilypad did not exit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = session_log(&sessions);
    assert!(
        !log.iter().any(|e| e["event"] == "user_message"
            && e["text"].as_str().is_some_and(|m| m.contains("why plus"))),
        "{log:#?}"
    );
}
