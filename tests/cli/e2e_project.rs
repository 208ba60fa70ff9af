//! End to end through a real terminal (tmux), the real binary on the scripted engine, and a
//! repository with its own `AGENTS.md` and `.lilypad/config.toml`: the interface shows the
//! project instructions as one collapsed item, and the repository's command rule lets its
//! commands run without asking.

use super::e2e_demo::{have_tmux, session_log, Tmux};
use std::time::{Duration, Instant};

const TWO_ECHOES: &str = "=== turn ===
Run it.
</think>

<tool_call>
<function=Bash>
<parameter=command>
echo one
</parameter>
</function>
</tool_call>
=== turn ===
Again.
</think>

<tool_call>
<function=Bash>
<parameter=command>
echo two
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

Ran both.
";

#[test]
fn instructions_show_collapsed_and_the_repositorys_rule_approves_its_commands() {
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
        &[
            ("calc.py", "def add(a, b):\n    return a + b\n"),
            (
                "AGENTS.md",
                "Always say which file you touched.\nSecond line.\n",
            ),
            (
                ".lilypad/config.toml",
                "[[command_rules]]\nprefix = \"echo\"\n",
            ),
        ],
    );
    let p = |n: &str| tmp.path().join(n);
    std::fs::write(p("script.txt"), TWO_ECHOES).unwrap();
    let t = Tmux::start(&format!(
        "cd '{repo}' && XDG_STATE_HOME='{state}' XDG_DATA_HOME='{data}' XDG_CONFIG_HOME='{config}' '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{sessions}' 'run twice' 2>'{stderr}'; echo $? > '{done}'; sleep 60",
        repo = repo.display(),
        state = p("state").display(),
        data = p("data").display(),
        config = p("config").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        script = p("script.txt").display(),
        sessions = p("sessions").display(),
        stderr = p("stderr").display(),
        done = p("done").display(),
    ));
    let screen = t.wait_for(&["Project instructions: AGENTS.md", "Ran both.", "no changes"]);
    assert!(
        !screen.contains("Always say which file"),
        "collapsed: the text is not shown\n{screen}"
    );
    assert!(!screen.contains("Run this command?"), "{screen}");
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    let start = Instant::now();
    while !p("done").exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "{}", t.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(std::fs::read_to_string(p("done")).unwrap().trim(), "0");
    let log = session_log(&p("sessions"));
    assert!(!log.iter().any(|e| e["event"] == "approval_requested"));
    let resolutions: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "tool_result")
        .map(|e| e["resolution"].as_str().unwrap())
        .collect();
    assert_eq!(resolutions, ["auto", "auto"]);
    let user = log
        .iter()
        .position(|e| e["event"] == "user_message")
        .unwrap();
    assert_eq!(log[user - 1]["event"], "project_instructions");
    assert_eq!(log[user]["text"], "run twice");
}
