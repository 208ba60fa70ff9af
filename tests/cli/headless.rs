//! Headless runs through the real binary with the scripted engine (a mock of the model that
//! replays raw outputs through the real parser) and the host sandbox on a real git repository:
//! JSONL events, exit codes, patch and trajectory files, batches, and a session killed with
//! SIGKILL mid-turn that resumes from its log.

use crate::common::{git, git_repo};
use lilypad::protocol::{Event, FinishReason};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(dir: &Path) -> PathBuf {
    git_repo(
        &dir.join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    )
}

const FIX: &str = "=== turn ===
I should look at the file.
</think>

<tool_call>
<function=Read>
<parameter=file_path>
src/app.py
</parameter>
</function>
</tool_call>
=== turn ===
It returns 1; the task wants 2.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
src/app.py
</parameter>
<parameter=old_string>
return 1
</parameter>
<parameter=new_string>
return 2
</parameter>
</function>
</tool_call>
<tool_call>
<function=Bash>
<parameter=command>
grep -c 'return 2' src/app.py
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

f now returns 2.
";

fn lilypad(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    // The person's own AGENTS.md (in the config directory) stays out of the prompts.
    c.env("LILYPAD_CONFIG", dir.join("no-config.toml"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("LILYPAD_SESSION_DIR", dir.join("sessions"))
        .env_remove("LILYPAD_MODEL");
    c
}

fn events(stdout: &[u8]) -> Vec<Event> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_task_runs_to_its_answer_with_patch_and_trajectory() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, FIX).unwrap();
    let out_dir = tmp.path().join("out");
    let out = lilypad(tmp.path())
        .args([
            "run",
            "--task",
            "make f return 2",
            "--json",
            "--sandbox",
            "host",
        ])
        .arg("--allow-host")
        .arg("--repo")
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out.stdout);
    assert!(matches!(ev.first(), Some(Event::SessionStarted { .. })));
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::TaskFinished { reason: FinishReason::Answered, final_answer: Some(a) } if a == "f now returns 2."
    )));
    let results: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results[2].starts_with("Exit code: 0\nSTDOUT:\n1\n"),
        "{}",
        results[2]
    );
    // The user's repository is untouched; the patch applies to it.
    assert_eq!(
        std::fs::read_to_string(r.join("src/app.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    let patch = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "patch"))
        .unwrap();
    git(&r, &["apply", patch.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(r.join("src/app.py")).unwrap(),
        "def f():\n    return 2\n"
    );
    let traj_path = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".trajectory.json"))
        .unwrap();
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(traj_path).unwrap()).unwrap();
    let msgs = t["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1]["content"], "make f return 2");
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["reasoning_content"], "I should look at the file.");
    let args = msgs[2]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(args).unwrap()["file_path"],
        "src/app.py"
    );
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], msgs[2]["tool_calls"][0]["id"]);
    assert_eq!(t["steps"].as_array().unwrap().len(), 3);
    assert!(t["steps"][1]["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(t["finish_reason"], "answered");
    // The session is listed.
    let out = lilypad(tmp.path())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["turns"], 3);
    assert_eq!(list[0]["last_finish"], "answered");
}

#[test]
fn exit_codes_and_host_commands_refused_without_permission() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("cap.script");
    std::fs::write(
        &script,
        "=== turn ===\nhm\n</think>\n\n<tool_call>\n<function=Bash>\n<parameter=command>\ntouch made\n</parameter>\n</function>\n</tool_call>\n=== turn: token_cap ===\nthinking forever",
    )
    .unwrap();
    let out = lilypad(tmp.path())
        .args([
            "run",
            "--task",
            "t",
            "--json",
            "--sandbox",
            "host",
            "--repo",
        ])
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "token cap exit code");
    let ev = events(&out.stdout);
    let refused = ev.iter().any(|e| matches!(
        e,
        Event::ToolResult { resolution: lilypad::protocol::Resolution::Denied, content, .. } if content.starts_with("PermissionError")
    ));
    assert!(refused, "commands on the host need --allow-host");
}

#[test]
fn a_batch_reports_a_failed_task_and_finishes_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, FIX).unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        format!(
            "{{\"instance_id\": \"a\", \"task\": \"fix\"}}\n{{\"instance_id\": \"b\", \"problem_statement\": \"fix\"}}\n{{\"instance_id\": \"broken\", \"task\": \"fix\", \"repo\": \"{}\"}}\n",
            tmp.path().join("missing").display()
        ),
    )
    .unwrap();
    let out_dir = tmp.path().join("batch");
    let out = lilypad(tmp.path())
        .args([
            "run",
            "--parallel",
            "2",
            "--sandbox",
            "host",
            "--allow-host",
        ])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--repo")
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let preds = std::fs::read_to_string(out_dir.join("predictions.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = preds
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by_key(|v| v["instance_id"].as_str().unwrap().to_string());
    assert_eq!(lines.len(), 3);
    for ok in &lines[..2] {
        assert!(ok["model_patch"]
            .as_str()
            .unwrap()
            .contains("+    return 2"));
        assert_eq!(ok["finish_reason"], "answered");
    }
    assert_eq!(lines[2]["instance_id"], "broken");
    assert!(lines[2]["error"].as_str().unwrap().contains("missing"));
}

#[test]
fn a_session_killed_mid_turn_resumes_from_its_log() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    // A long last turn (about 6 s at this delay), so the kill lands inside it even on a busy
    // machine.
    let slow_last = FIX.replace(
        "=== turn ===\nDone.",
        &format!("=== turn ===\n{}Done.", "thinking it over ".repeat(70)),
    );
    assert_ne!(slow_last, FIX);
    std::fs::write(&script, slow_last).unwrap();
    let mut child = lilypad(tmp.path())
        .env("LILYPAD_SCRIPT_DELAY_MS", "15")
        .args([
            "run",
            "--task",
            "make f return 2",
            "--json",
            "--sandbox",
            "host",
        ])
        .arg("--allow-host")
        .arg("--repo")
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kill it once the edit has been applied and the last turn is streaming.
    let sessions = tmp.path().join("sessions");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let log = std::fs::read_dir(&sessions).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        });
        if let Some(log) = log {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.matches("\"event\":\"turn_started\"").count() >= 3 {
                break;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never reached turn 3"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SIGKILL: no chance to clean up or finish writing.
    child.kill().unwrap();
    child.wait().unwrap();
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let (_, ev) = lilypad::session::read_log(&log).unwrap();
    assert!(!ev
        .iter()
        .any(|(_, e)| matches!(e, Event::TaskFinished { .. })));
    // The scripted engine starts from its first turn again, so give it a script whose first
    // turn is the final answer: the resumed model sees the whole earlier conversation.
    let rest = tmp.path().join("rest.script");
    std::fs::write(
        &rest,
        "=== turn ===\nAll done.\n</think>\n\nf now returns 2.",
    )
    .unwrap();
    let out = lilypad(tmp.path())
        .args(["resume", "--last", "--json", "--allow-host"])
        .arg("--engine")
        .arg(format!("script:{}", rest.display()))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out.stdout);
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::TaskFinished {
            reason: FinishReason::Answered,
            ..
        }
    )));
    // The log now holds both runs, and the saved patch carried the edit over.
    let (_, all) = lilypad::session::read_log(&log).unwrap();
    assert!(all
        .iter()
        .any(|(_, e)| matches!(e, Event::TaskFinished { .. })));
    let patch = std::fs::read_to_string(log.with_extension("patch")).unwrap();
    assert!(patch.contains("+    return 2"), "{patch}");
}

#[test]
fn batch_tasks_on_the_in_process_engine_each_have_their_own_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let model = tmp.path().join("tiny.gguf");
    lilypad::testmodel::write(&model, &lilypad::testmodel::TinySpec::synthetic()).unwrap();
    std::fs::write(
        tmp.path().join("no-config.toml"),
        "[engine]\nctx = 4096\nthreads = 1\nbatch = 128\nubatch = 64\nmax_turn_tokens = 6\n",
    )
    .unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        "{\"instance_id\": \"a\", \"task\": \"make f return 2\"}\n{\"instance_id\": \"b\", \"task\": \"add a docstring to f, then run the tests\"}\n",
    )
    .unwrap();
    let out = lilypad(tmp.path())
        .args([
            "run",
            "--parallel",
            "2",
            "--sandbox",
            "host",
            "--allow-host",
        ])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--repo")
        .arg(&r)
        .arg("--model")
        .arg(&model)
        .arg("--out")
        .arg(tmp.path().join("batch"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each task's turn read its prompt into a sequence of its own: fresh memory (its head
    // loaded from the one the first task saved, or read), never a rewind or a re-read over
    // the other task's prompt.
    let logs: Vec<String> = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "jsonl").then(|| std::fs::read_to_string(p).unwrap())
        })
        .collect();
    assert_eq!(logs.len(), 2);
    for log in &logs {
        assert!(
            log.contains(r#""reuse":{"kind":"fresh"}"#)
                || log.contains(r#""reuse":{"kind":"saved_head""#),
            "{log}"
        );
        assert!(
            !log.contains("rewound") && !log.contains("reprefilled"),
            "{log}"
        );
    }
}

/// The model makes an empty repository inside the workspace (`git init` in a subdirectory):
/// git then refuses to add the workspace's files, so the session patch cannot be exported. The
/// attempt is an error with that cause, in the batch's results and in a single run's exit
/// status, never an empty patch that says the agent changed nothing.
#[test]
fn a_patch_that_cannot_be_exported_is_an_error_not_an_empty_patch() {
    const BREAK: &str = "=== turn ===
Make a nested repository.
</think>

<tool_call>
<function=Bash>
<parameter=command>
echo changed >> src/app.py && mkdir sub && git -C sub init -q && echo x > sub/f
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

Made it.
";
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("break.script");
    std::fs::write(&script, BREAK).unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    std::fs::write(&tasks, "{\"instance_id\": \"a\", \"task\": \"go\"}\n").unwrap();
    let out_dir = tmp.path().join("batch");
    let out = lilypad(tmp.path())
        .args(["run", "--sandbox", "host", "--allow-host"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--repo")
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let preds = std::fs::read_to_string(out_dir.join("predictions.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(preds.trim()).unwrap();
    let error = line["error"].as_str().unwrap_or_else(|| panic!("{line}"));
    assert!(
        error.contains("the session patch could not be exported"),
        "{line}"
    );
    assert!(
        error.contains("does not have a commit checked out"),
        "{line}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["totals"]["errors"], 1, "{report}");

    let single = lilypad(tmp.path())
        .args(["run", "--task", "go", "--sandbox", "host", "--allow-host"])
        .arg("--repo")
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(tmp.path().join("single"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&single.stderr);
    assert_ne!(single.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the session patch could not be exported"),
        "{stderr}"
    );
    let patch = tmp.path().join("single");
    assert!(
        !patch.exists() || std::fs::read_dir(&patch).unwrap().next().is_none(),
        "no patch file is written for a patch that is not known"
    );
}

#[test]
fn the_task_as_an_argument_or_on_stdin_and_the_last_message_in_a_file() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, FIX).unwrap();
    let answer = tmp.path().join("answer.txt");
    let run = |task: &str| {
        let mut c = lilypad(tmp.path());
        c.args(["run", task, "--json", "--sandbox", "host", "--allow-host"])
            .arg("--repo")
            .arg(&r)
            .arg("--engine")
            .arg(format!("script:{}", script.display()))
            .arg("--output-last-message")
            .arg(&answer)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c
    };
    let user_messages = |stdout: &[u8]| -> Vec<String> {
        events(stdout)
            .into_iter()
            .filter_map(|e| match e {
                Event::UserMessage { text } => Some(text),
                _ => None,
            })
            .collect()
    };

    // `lilypad run "TASK"`.
    let out = run("make f return 2").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(user_messages(&out.stdout), ["make f return 2"]);
    assert_eq!(
        std::fs::read_to_string(&answer).unwrap(),
        "f now returns 2."
    );
    std::fs::remove_file(&answer).unwrap();

    // `lilypad run -`: the task, of several lines, on standard input.
    let mut child = run("-").spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"make f return 2\nand say so\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = user_messages(&out.stdout);
    assert_eq!(said.len(), 1);
    assert!(
        said[0].starts_with("make f return 2\nand say so"),
        "{said:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&answer).unwrap(),
        "f now returns 2."
    );
}
