//! End to end through a real terminal (tmux) and the real binary on the scripted engine: the
//! interface's conventions and its edit path. Double Ctrl-C quits with the terminal restored;
//! `/` jumps to a match scrolled out of view; `c` writes the exact OSC 52 sequence (read from
//! the raw pty output and from tmux's clipboard buffer); a scripted `$EDITOR` edits a change,
//! which is reviewed again, and a command, whose new text the model reads as what ran; a
//! prefix rule lets the second matching command run without asking and `lilypad doctor`
//! lists the saved rule; line comments added with `m` reach the model in the approved edit's
//! result and, from the session patch, as the next message.

use super::e2e_demo::{have_tmux, Tmux};
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

/// A temporary git repository with `calc.py`, a script for the engine, and the paths a run
/// leaves things in.
struct Run {
    tmp: tempfile::TempDir,
}

impl Run {
    fn new(script: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        super::e2e_resume::calc_repo(tmp.path());
        std::fs::write(tmp.path().join("script.txt"), script).unwrap();
        Self { tmp }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn env(&self) -> String {
        format!(
            "XDG_STATE_HOME='{}' XDG_DATA_HOME='{}' XDG_CONFIG_HOME='{}'",
            self.path("state").display(),
            self.path("data").display(),
            self.path("config").display(),
        )
    }

    /// Start lilypad on the task in tmux; `env` goes before it. After it exits, its status
    /// and the terminal's settings (`stty -a`) are written beside the repository.
    fn start(&self, env: &str, task: &str) -> Tmux {
        Tmux::start(&format!(
            "cd '{repo}' && {base} {env} '{bin}' --engine 'script:{script}' --sandbox host --session-dir '{sessions}' '{task}' 2>'{stderr}'; echo $? > '{done}'; stty -a > '{stty}'; sleep 60",
            repo = self.path("repo").display(),
            base = self.env(),
            bin = env!("CARGO_BIN_EXE_lilypad"),
            script = self.path("script.txt").display(),
            sessions = self.path("sessions").display(),
            stderr = self.path("stderr").display(),
            done = self.path("done").display(),
            stty = self.path("stty").display(),
        ))
    }

    fn wait_done(&self, t: &Tmux) -> String {
        let start = Instant::now();
        while !self.path("stty").exists() {
            assert!(
                start.elapsed() < WAIT,
                "lilypad did not exit:\n{}",
                t.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(200));
        std::fs::read_to_string(self.path("done"))
            .unwrap()
            .trim()
            .to_string()
    }

    fn log(&self) -> Vec<serde_json::Value> {
        super::e2e_demo::session_log(&self.path("sessions"))
    }
}

fn tmux_format(t: &Tmux, format: &str) -> String {
    let out = Command::new("tmux")
        .args(["display-message", "-p", "-t", t.name(), format])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn ctrl_c_twice_interrupts_then_quits_and_restores_the_terminal() {
    if skip() {
        return;
    }
    let long: String = (0..400).map(|i| format!("thought {i} ")).collect();
    let run = Run::new(&format!("=== turn ===\n{long}\n</think>\n\ndone\n"));
    let t = run.start("LILYPAD_SCRIPT_DELAY_MS=50", "think slowly");
    t.wait_for(&["Thinking"]);
    assert_eq!(tmux_format(&t, "#{alternate_on}"), "1");
    t.keys(&["C-c"]);
    t.wait_for(&["Interrupted. Quit and end the session as well?"]);
    t.keys(&["C-c"]);
    assert_eq!(run.wait_done(&t), "0");
    // The terminal is back: no alternate screen, no mouse reports, cooked mode with echo.
    assert_eq!(tmux_format(&t, "#{alternate_on}"), "0");
    assert_eq!(tmux_format(&t, "#{mouse_any_flag}"), "0");
    let stty = std::fs::read_to_string(run.path("stty")).unwrap();
    let words: Vec<&str> = stty.split_whitespace().collect();
    assert!(
        words.contains(&"icanon") && words.contains(&"echo"),
        "{stty}"
    );
}

#[test]
fn search_jumps_to_a_match_out_of_view() {
    if skip() {
        return;
    }
    let hay: String = (0..70).map(|i| format!("- hay line {i}\n")).collect();
    let run = Run::new(&format!(
        "=== turn ===\nWriting a long answer.\n</think>\n\nthe needle line\n\n{hay}"
    ));
    let t = run.start("", "find it");
    let screen = t.wait_for(&["hay line 69", "no changes"]);
    assert!(!screen.contains("the needle line"), "{screen}");
    t.keys(&["Escape"]);
    t.keys(&["/"]);
    t.wait_for(&["search /"]);
    t.keys(&["-l", "needle"]);
    t.keys(&["Enter"]);
    let screen = t.wait_for(&["the needle line", "match 1 of 1"]);
    assert!(!screen.contains("hay line 69"), "{screen}");
    t.keys(&["q"]);
    assert_eq!(run.wait_done(&t), "0");
}

#[test]
fn copy_writes_the_exact_osc52_sequence() {
    if skip() {
        return;
    }
    let answer = "Copy this exactly: `add` now adds, and this sentence is long enough that the screen wraps it at one hundred and twenty columns.\nSecond line.";
    let run = Run::new(&format!("=== turn ===\nAnswering.\n</think>\n\n{answer}\n"));
    assert!(Command::new("tmux")
        .args(["start-server"])
        .status()
        .unwrap()
        .success());
    let t = run.start("", "copy");
    let _ = Command::new("tmux")
        .args(["set-option", "-s", "set-clipboard", "on"])
        .status();
    t.wait_for(&["Second line.", "no changes"]);
    let raw = run.path("pty.raw");
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
    t.keys(&["Escape"]);
    t.keys(&["c"]);
    t.wait_for(&["copied the answer"]);
    let coded = Command::new("base64")
        .args(["-w0"])
        .stdin(std::fs::File::open(write_tmp(&run, answer)).unwrap())
        .output()
        .unwrap();
    let want = format!("\x1b]52;c;{}\x07", String::from_utf8_lossy(&coded.stdout));
    let start = Instant::now();
    loop {
        let got = std::fs::read(&raw).unwrap_or_default();
        if String::from_utf8_lossy(&got).contains(&want) {
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "no OSC 52 sequence {want:?} in the pty output"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // tmux took it into its clipboard buffer: the exact text, no gutters or wrap breaks.
    let buffer = Command::new("tmux").args(["show-buffer"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&buffer.stdout), answer);
    t.keys(&["q"]);
    assert_eq!(run.wait_done(&t), "0");
}

fn write_tmp(run: &Run, text: &str) -> PathBuf {
    let p = run.path("expected.txt");
    std::fs::write(&p, text).unwrap();
    p
}

const EDIT_THEN_COMMAND: &str = "=== turn ===
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
Check it.
</think>

<tool_call>
<function=Bash>
<parameter=command>
echo proposed
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

Fixed add.
";

/// An `$EDITOR` that edits like a person would: a change gets its operands swapped (a second
/// run finds nothing to swap and saves it unchanged), a command is replaced.
fn editor_script(dir: &Path) -> PathBuf {
    let path = dir.join("editor.sh");
    std::fs::write(
        &path,
        "#!/bin/sh\ncase \"$1\" in\n  *command.sh) printf 'echo edited\\n' > \"$1\" ;;\n  *) sed -i 's/a + b/b + a/' \"$1\" ;;\nesac\n",
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path
}

#[test]
fn the_editor_path_reviews_the_edit_again_and_the_model_reads_what_ran() {
    if skip() {
        return;
    }
    let run = Run::new(EDIT_THEN_COMMAND);
    let editor = editor_script(run.tmp.path());
    let t = run.start(&format!("VISUAL= EDITOR='{}'", editor.display()), "fix add");
    t.wait_for(&["Approve this edit?", "return a + b"]);
    t.keys(&["e"]);
    // The second review: the edited text against the file.
    let screen = t.wait_for(&["Approve your version of this edit?", "return b + a"]);
    assert!(
        screen.contains("your edit, against the file as it is"),
        "{screen}"
    );
    // Edit again: the script finds nothing to change, so the review stays as it was.
    t.keys(&["e"]);
    t.wait_for(&["unchanged in the editor", "return b + a"]);
    t.keys(&["y"]);
    // The command: edited before it runs.
    t.wait_for(&["Run this command?", "echo proposed"]);
    t.keys(&["e"]);
    t.wait_for(&["Run your edited command?", "echo edited"]);
    t.keys(&["y"]);
    t.wait_for(&["Session patch"]);
    t.keys(&["a"]);
    t.wait_for(&["patch applied"]);
    t.keys(&["q"]);
    assert_eq!(run.wait_done(&t), "0");
    assert_eq!(
        std::fs::read_to_string(run.path("repo/calc.py")).unwrap(),
        "def add(a, b):\n    return b + a\n"
    );
    let log = run.log();
    let result = |name: &str| {
        log.iter()
            .find(|e| e["event"] == "tool_result" && e["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(result("Edit")["resolution"], "edited");
    let bash = result("Bash");
    assert_eq!(bash["resolution"], "edited");
    let content = bash["content"].as_str().unwrap();
    assert!(content.contains("You proposed: echo proposed"), "{content}");
    assert!(content.contains("What ran: echo edited"), "{content}");
    assert!(content.contains("edited\n"), "{content}");
}

const TWO_COMMANDS: &str = "=== turn ===
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
fn a_prefix_rule_approves_the_second_matching_command_without_asking() {
    if skip() {
        return;
    }
    let run = Run::new(TWO_COMMANDS);
    let t = run.start("", "run twice");
    t.wait_for(&["Run this command?", "echo one"]);
    t.keys(&["p"]);
    // The suggestion is the whole command here; one word fewer makes the rule `echo`.
    t.wait_for(&["don't ask again for commands starting with “echo one”"]);
    t.keys(&["Left"]);
    t.wait_for(&["don't ask again for commands starting with “echo”"]);
    // Save it for the repository as well.
    t.keys(&["s"]);
    t.wait_for(&["Ran both.", "no changes"]);
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    assert_eq!(run.wait_done(&t), "0");
    let log = run.log();
    let asked = log
        .iter()
        .filter(|e| e["event"] == "approval_requested")
        .count();
    assert_eq!(asked, 1, "the second command did not ask");
    let resolutions: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "tool_result")
        .map(|e| e["resolution"].as_str().unwrap())
        .collect();
    assert_eq!(resolutions, ["approved", "auto"]);
    // Saved in the config file, and `lilypad doctor` lists it.
    let config = std::fs::read_to_string(run.path("config/lilypad/config.toml")).unwrap();
    assert!(config.contains("prefix = \"echo\""), "{config}");
    let doctor = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .arg("doctor")
        .env("XDG_CONFIG_HOME", run.path("config"))
        .env("XDG_STATE_HOME", run.path("state"))
        .env("XDG_DATA_HOME", run.path("data"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    let repo = std::fs::canonicalize(run.path("repo")).unwrap();
    assert!(
        report.contains(&format!("`echo…` in {}", repo.display())),
        "{report}"
    );
}

/// A Write of `n` lines, then an answer.
fn long_write(n: usize) -> String {
    let body: String = (0..n).map(|i| format!("value_{i:02} = {i}\n")).collect();
    format!(
        "=== turn ===\nWriting the values.\n</think>\n\n<tool_call>\n<function=Write>\n<parameter=file_path>\nvalues.py\n</parameter>\n<parameter=content>\n{body}</parameter>\n</function>\n</tool_call>\n=== turn ===\nDone.\n</think>\n\nWrote values.py.\n"
    )
}

#[test]
fn a_write_streams_its_content_before_the_call_completes() {
    if skip() {
        return;
    }
    let run = Run::new(&long_write(80));
    let t = run.start("LILYPAD_SCRIPT_DELAY_MS=30", "write the values");
    // The path, then the first lines of the content, while the call is still being written.
    let screen = t.wait_for(&["Write(values.py)", "value_10 = 10"]);
    assert!(!screen.contains("value_79 = 79"), "{screen}");
    assert!(!screen.contains("Approve this"), "{screen}");
    // The content grows: the newest lines are shown, the first ones counted above them.
    let screen = t.wait_for(&["value_40 = 40", "lines above"]);
    assert!(!screen.contains("Approve this"), "{screen}");
    // Once the call is complete its review opens.
    t.wait_for(&["Approve this create?", "values.py (new file)  +80 -0"]);
    t.keys(&["y"]);
    t.wait_for(&["Session patch"]);
    t.keys(&["a"]);
    t.wait_for(&["patch applied"]);
    t.keys(&["q"]);
    assert_eq!(run.wait_done(&t), "0");
    let written = std::fs::read_to_string(run.path("repo/values.py")).unwrap();
    assert_eq!(written.lines().count(), 80);
    // The closer takes the value's last newline, as the format says.
    assert!(
        written.ends_with("value_78 = 78\nvalue_79 = 79"),
        "{written}"
    );
}

const EDIT_THEN_NOTE: &str = "=== turn ===
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
=== turn ===
Read them.
</think>

Noted your comments.
";

#[test]
fn line_comments_reach_the_model_with_the_approval_and_from_the_patch() {
    if skip() {
        return;
    }
    let run = Run::new(EDIT_THEN_NOTE);
    let t = run.start("", "fix add");
    t.wait_for(&["Approve this edit?", "return a + b"]);
    // The cursor starts on the first change (the removed line); `j` goes to the added one.
    t.keys(&["m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "use plus"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ use plus", "1 comment"]);
    t.keys(&["j"]);
    t.keys(&["m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "keep the order"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ keep the order", "2 comments"]);
    t.keys(&["y"]);
    // The session patch: a comment there is the next message.
    t.wait_for(&["Session patch", "calc.py  +1 -1"]);
    t.keys(&["j"]);
    t.keys(&["m"]);
    t.wait_for(&["comment on this line ›"]);
    t.keys(&["-l", "looks right"]);
    t.keys(&["Enter"]);
    t.wait_for(&["└ looks right (pending)"]);
    t.keys(&["a"]);
    // The model's turn on the comments ends with the patch in front again.
    t.wait_for(&["step 3/150", "Session patch"]);
    t.keys(&["Escape"]);
    t.wait_for(&["patch applied", "Noted your comments."]);
    t.keys(&["C-c"]);
    assert_eq!(run.wait_done(&t), "0");
    let log = run.log();
    let edit = log
        .iter()
        .find(|e| e["event"] == "tool_result" && e["name"] == "Edit")
        .unwrap();
    assert_eq!(edit["resolution"], "approved");
    let content = edit["content"].as_str().unwrap();
    let blocks =
        "calc.py:2:     return a - b\nuse plus\n\ncalc.py:2:     return a + b\nkeep the order";
    assert!(
        content.contains(&format!("The user approved it and says:\n{blocks}")),
        "{content}"
    );
    let message = log
        .iter()
        .rev()
        .filter(|e| e["event"] == "user_message")
        .find_map(|e| e["text"].as_str())
        .unwrap();
    assert!(
        message.contains("1. calc.py:2 (new) \"return a + b\": looks right"),
        "{message}"
    );
}
