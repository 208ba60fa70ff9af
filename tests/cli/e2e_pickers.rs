//! The message line's pickers through a real terminal, in the default (chat) keys: `/` opens
//! the command palette, typing filters it and Enter runs `/patch` (the session patch comes
//! back); a prompt file of the repository's `.lilypad/prompts/` (overriding the person's own
//! of the same name) is listed with its description and sent as `/fix calc.py 'it adds'`
//! with `$1` and `$ARGUMENTS` filled in; `@` then part of a file name and Enter puts the path
//! in the message; `!echo …` runs in the sandbox and its output goes at the head of the next
//! message; `/quit` quits. The session log is checked for the messages the model got.
//! Scripted engine (a mock of the model), the host sandbox.

use super::e2e_composer::has_user_message;
use super::e2e_demo::{have_tmux, session_log, Tmux};
use super::e2e_resume::calc_repo;
use std::time::{Duration, Instant};

const SCRIPT: &str = "=== turn ===
Fixing.
</think>

Fixing add.

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
=== turn ===
Read it.
</think>

Noted the prompt.
=== turn ===
Read it.
</think>

Noted the path.
=== turn ===
Read it.
</think>

Noted the command.
";

const REPO_FIX: &str =
    "---\ndescription: Fix one thing well\nargument-hint: FILE WHY\n---\nPlease fix $1 ($ARGUMENTS).\n";

#[test]
fn palette_prompt_files_and_the_file_picker_in_a_real_terminal() {
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
    let prompts = repo.join(".lilypad/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("fix.md"), REPO_FIX).unwrap();
    let user_prompts = tmp.path().join("config/lilypad/prompts");
    std::fs::create_dir_all(&user_prompts).unwrap();
    std::fs::write(
        user_prompts.join("fix.md"),
        "---\ndescription: the person's own fix\n---\nnot this one $1\n",
    )
    .unwrap();
    std::fs::write(user_prompts.join("greet.md"), "Say hello to $1.\n").unwrap();
    let script = tmp.path().join("script.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    let (sessions, done) = (tmp.path().join("sessions"), tmp.path().join("done"));
    let t = Tmux::start(&format!(
        "cd '{repo}' && LILYPAD_KEYS=chat XDG_STATE_HOME='{d}/state' XDG_DATA_HOME='{d}/data' XDG_CONFIG_HOME='{d}/config' LILYPAD_CONFIG='{d}/no-config.toml' '{bin}' --engine 'script:{script}' --sandbox host --approve edits=auto --session-dir '{sessions}' 'fix add' 2>/dev/null; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        d = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = script.display(),
        sessions = sessions.display(),
        done = done.display(),
    ));
    // The task ends with the session patch in front; Esc goes back to the message line.
    t.wait_for(&["Session patch", "+    return a + b"]);
    t.keys(&["Escape"]);
    t.wait_for(&["Fixed add.", "Enter send"]);

    // 1. `/` lists the commands; typing filters them; Enter runs /patch.
    t.keys(&["/"]);
    let screen = t.wait_for(&[" commands (", "/patch", "/quit", "/rewind"]);
    assert!(screen.contains("show the session patch"), "{screen}");
    t.keys(&["pat"]);
    let screen = t.wait_for(&["/pat", " commands (1) "]);
    assert!(!screen.contains("/quit"), "filtered out: {screen}");
    t.keys(&["Enter"]);
    t.wait_for(&["Session patch", "apply to your tree"]);
    t.keys(&["Escape"]);
    t.wait_for(&["Fixed add.", "Enter send"]);

    // 2. The repository's prompt file, over the person's own of the same name.
    t.keys(&["/gr"]);
    t.wait_for(&["/greet", "Say hello to $1."]);
    t.keys(&["BSpace", "BSpace"]);
    t.keys(&["fi"]);
    let screen = t.wait_for(&["/fix", "FILE WHY", "Fix one thing well"]);
    assert!(!screen.contains("the person's own fix"), "{screen}");
    t.keys(&["Tab"]);
    t.keys(&["calc.py 'it adds'"]);
    t.wait_for(&["› /fix calc.py 'it adds'"]);
    t.keys(&["Enter"]);
    // Each task ends with the session patch in front again.
    t.wait_for(&["Session patch", "apply to your tree"]);
    t.keys(&["Escape"]);
    t.wait_for(&["Noted the prompt.", "Enter send"]);

    // 3. `@` and part of a file name: Enter puts the path in the message.
    t.keys(&["look at @"]);
    t.wait_for(&[" files ", "calc.py", ".lilypad/prompts/fix.md"]);
    t.keys(&["alc"]);
    let screen = t.wait_for(&["› look at @alc"]);
    assert!(!screen.contains(".lilypad/prompts/fix.md"), "{screen}");
    t.keys(&["Enter"]);
    let screen = t.wait_for(&["› look at calc.py"]);
    assert!(!screen.contains("@alc"), "{screen}");
    t.keys(&["Enter"]);
    t.wait_for(&["Session patch", "apply to your tree"]);
    t.keys(&["Escape"]);
    t.wait_for(&["Noted the path.", "Enter send"]);

    // 4. `!cmd` runs in the sandbox; its output goes with the next message.
    t.keys(&["!echo lily-$((6*7))"]);
    t.keys(&["Enter"]);
    t.wait_for(&[
        "$ echo lily-$((6*7))  (goes with your next message)",
        "lily-42",
    ]);
    t.keys(&["what now?"]);
    t.keys(&["Enter"]);
    t.wait_for(&["Session patch", "apply to your tree"]);
    t.keys(&["Escape"]);
    t.wait_for(&["Noted the command.", "Enter send"]);

    // 5. /quit quits (nothing is pending).
    t.keys(&["/quit"]);
    t.wait_for(&["/quit"]);
    t.keys(&["Enter"]);
    let start = Instant::now();
    while !done.exists() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(done.exists(), "/quit quit; the screen:\n{}", t.screen());
    drop(t);
    let log = session_log(&sessions);
    assert!(
        has_user_message(&log, "Please fix calc.py (calc.py it adds)."),
        "the prompt file, expanded: {log:#?}"
    );
    assert!(has_user_message(&log, "look at calc.py"), "{log:#?}");
    assert!(
        has_user_message(
            &log,
            "$ echo lily-$((6*7))\nExit code: 0\nSTDOUT:\nlily-42\n\nSTDERR:\n\n\nwhat now?"
        ),
        "the command's output at the head of the next message: {log:#?}"
    );
}
