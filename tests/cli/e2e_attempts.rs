//! Attempts side by side, through a real terminal (tmux) and the real binary on the scripted
//! engine: three attempts at one task (each replays its own script), each checked in its own
//! sandbox; the board shows every attempt's check and diffstat; an attempt's transcript opens
//! and `b` brings the board back; the top hunk of attempt 1 and the bottom hunk of attempt 2
//! are taken and applied to the repository, which then passes the check neither attempt
//! passed alone.

use super::e2e_demo::{have_tmux, Tmux};
use crate::common::{git, git_repo};
use std::process::Command;
use std::time::Duration;

const CALC: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\n\
def neg(a):\n    return -a\n\n\ndef double(a):\n    return 2 * a\n\n\ndef square(a):\n    \
return a * a\n\n\ndef mul(a, b):\n    return a + b\n";

fn edit(old: &str, new: &str, answer: &str) -> String {
    format!(
        "=== turn ===\nFixing.\n</think>\n\n<tool_call>\n<function=Edit>\n<parameter=file_path>\ncalc.py\n</parameter>\n<parameter=old_string>\n{old}\n</parameter>\n<parameter=new_string>\n{new}\n</parameter>\n</function>\n</tool_call>\n=== turn ===\nDone.\n</think>\n\n{answer}\n"
    )
}

#[test]
fn three_attempts_side_by_side_and_hunks_taken_from_two() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The check lives in the repository: the sandbox sees only its own copy of it.
    let check = "python3 -c 'import calc; assert calc.add(2, 3) == 5, \"add\"; assert calc.mul(2, 3) == 6, \"mul\"'\n";
    let repo = git_repo(
        &tmp.path().join("repo"),
        &[("calc.py", CALC), ("check.sh", check)],
    );
    let scripts = tmp.path();
    // The person's own instructions: every attempt reads them.
    std::fs::create_dir_all(scripts.join("config/lilypad")).unwrap();
    std::fs::write(
        scripts.join("config/lilypad/AGENTS.md"),
        "Keep calc.py short.\n",
    )
    .unwrap();
    let add = (
        "def add(a, b):\n    return a - b",
        "def add(a, b):\n    return a + b",
    );
    std::fs::write(scripts.join("a-1.txt"), edit(add.0, add.1, "fixed add")).unwrap();
    let mul = ("    return a + b", "    return a * b");
    std::fs::write(scripts.join("a-2.txt"), edit(mul.0, mul.1, "fixed mul")).unwrap();
    // The third attempt breaks neg: the check fails there too.
    std::fs::write(
        scripts.join("a-3.txt"),
        edit("    return -a", "    return a", "changed neg"),
    )
    .unwrap();
    let t = Tmux::start(&format!(
        "cd '{repo}' && XDG_DATA_HOME='{d}/data' XDG_STATE_HOME='{d}/state' XDG_CONFIG_HOME='{d}/config' '{bin}' --engine 'script:{d}/a-{{attempt}}.txt' --sandbox host --attempts 3 --check 'sh check.sh' 'fix calc' 2>'{d}/stderr'; echo $? > '{d}/done'; sleep 60",
        repo = repo.display(),
        d = scripts.display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
    ));
    // The board: three columns, every check failed (each attempt fixed one thing at most).
    t.wait_for(&["Attempt 1", "Attempt 2", "Attempt 3"]);
    let start = std::time::Instant::now();
    let screen = loop {
        let screen = t.screen();
        if screen.matches("failed").count() == 3 && screen.matches("1 file +1 -1").count() == 3 {
            break screen;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{screen}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        screen.contains("AssertionError: mul") && screen.contains("AssertionError: add"),
        "{screen}"
    );
    assert_eq!(screen.matches("answered").count(), 3, "{screen}");
    // Each column shows its patch below the figures (attempt 2 fixed mul, attempt 3 broke neg).
    assert!(
        screen.contains("return a * b") && screen.contains("return -a"),
        "{screen}"
    );
    // Open attempt 2's own view, then back to the board.
    t.keys(&["Right"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["Enter"]);
    t.wait_for(&["attempt 2 of 3", "return a * b"]);
    t.keys(&["b"]);
    t.wait_for(&["Attempt 3", "p take pieces"]);
    // Pieces: take attempt 1's hunk (top of the file) and attempt 2's (bottom), apply.
    t.keys(&["p"]);
    t.wait_for(&["Pieces of the attempts", "@@ -19,4 +19,4 @@"]);
    t.keys(&["Space"]);
    t.keys(&["Down"]);
    t.keys(&["Space"]);
    t.wait_for(&["2 taken"]);
    t.keys(&["a"]);
    t.wait_for(&["applied 2 pieces from attempts 1, 2 to your working tree"]);
    let diff = git(&repo, &["diff"]);
    assert!(
        diff.contains("+    return a + b") && diff.contains("+    return a * b"),
        "{diff}"
    );
    assert!(
        !diff.contains("return a\n"),
        "attempt 3's change was not taken: {diff}"
    );
    let ok = Command::new("sh")
        .arg("check.sh")
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(ok.success(), "the combined patch passes the check: {diff}");
    t.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    let start = std::time::Instant::now();
    while !scripts.join("done").exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "{}", t.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read_to_string(scripts.join("done"))
            .unwrap()
            .trim(),
        "0"
    );
    let stderr = std::fs::read_to_string(scripts.join("stderr")).unwrap();
    assert!(stderr.contains("applied"), "{stderr}");
    // Three session logs, one per attempt, each with its own seed's session, each of which
    // read the instructions ahead of the task.
    let logs: Vec<_> = std::fs::read_dir(scripts.join("data/lilypad/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 3);
    for log in logs {
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["project_docs"].as_array().map(Vec::len), Some(1));
        let read = lines
            .iter()
            .find(|e| e["event"] == "project_instructions")
            .expect("instructions announced");
        assert!(read["text"]
            .as_str()
            .unwrap()
            .contains("Keep calc.py short."));
    }
}
