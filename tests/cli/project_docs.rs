//! Project instructions and the repository's own config, through the real binary with the
//! scripted engine and the host sandbox on real git repositories: the `AGENTS.md` files head
//! the first message the model reads (the trajectory shows it) and the session header records
//! their hashes; `AGENTS.override.md` and the fallback names; the 32 KiB cap; batches leave
//! them out unless asked, and `--no-project-doc` turns them off; a resumed session that had no
//! message yet reads them once; a repository's
//! `.lilypad/config.toml` that tries to loosen containment is refused, naming the file.

use crate::common::git_repo;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ANSWER: &str = "=== turn ===\nNothing to do.\n</think>\n\nDone.\n";

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new(files: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        git_repo(&tmp.path().join("repo"), files);
        std::fs::write(tmp.path().join("answer.script"), ANSWER).unwrap();
        Self { tmp }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }

    fn write(&self, p: &str, text: &str) {
        let p = self.path(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// `lilypad run ARGS` on the repository, sessions in `sessions/`, the person's config
    /// directory under `config/`.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_lilypad"))
            .arg("run")
            .args(args)
            .args(["--sandbox", "host", "--allow-host", "--repo"])
            .arg(self.path("repo"))
            .arg("--engine")
            .arg(format!("script:{}", self.path("answer.script").display()))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_STATE_HOME", self.path("state"))
            .env("LILYPAD_SESSION_DIR", self.path("sessions"))
            .env_remove("LILYPAD_CONFIG")
            .env_remove("LILYPAD_MODEL")
            .output()
            .unwrap()
    }

    /// One task run to its end; the session's log (header first) is returned and removed, so
    /// that the next run's is the only one.
    fn session(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        take_log(&self.path("sessions"))
    }
}

fn take_log(dir: &Path) -> Vec<serde_json::Value> {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    for p in std::fs::read_dir(dir).unwrap() {
        let p = p.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the model read as the first user message: the conversation rebuilt from the log, as
/// `lilypad` rebuilds it for a resume and a trajectory.
fn first_message(log: &[serde_json::Value]) -> String {
    let header: lilypad::session::SessionHeader = serde_json::from_value(log[0].clone()).unwrap();
    let events: Vec<lilypad::protocol::Event> = log[1..]
        .iter()
        .map(|e| serde_json::from_value(e.clone()).unwrap())
        .collect();
    let traj = lilypad::session::trajectory("t", &header.system_prompt, &events);
    let traj = serde_json::to_value(&traj).unwrap();
    assert_eq!(traj["messages"][0]["role"], "system");
    assert_eq!(traj["messages"][1]["role"], "user");
    traj["messages"][1]["content"].as_str().unwrap().to_string()
}

fn sha256(text: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn doc_hashes(log: &[serde_json::Value]) -> Vec<String> {
    log[0]["project_docs"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| d["sha256"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn agents_md_heads_the_first_message_and_its_hash_is_in_the_header() {
    let env = Env::new(&[
        ("app.py", "x = 1\n"),
        ("AGENTS.md", "Run the tests with `make check`.\n"),
    ]);
    env.write("config/lilypad/AGENTS.md", "Answer in French.\n");
    let log = env.session(&["--task", "tidy app.py"]);
    let first = first_message(&log);
    let (mine, repo, task) = (
        first.find("Answer in French.").unwrap(),
        first.find("Run the tests with `make check`.").unwrap(),
        first.find("tidy app.py").unwrap(),
    );
    assert!(mine < repo && repo < task, "{first}");
    assert!(first.ends_with("tidy app.py"), "{first}");
    assert_eq!(
        doc_hashes(&log),
        [
            sha256("Answer in French.\n"),
            sha256("Run the tests with `make check`.\n")
        ]
    );
    // The log says which files they were, for the interface's collapsed item.
    let announced = log
        .iter()
        .find(|e| e["event"] == "project_instructions")
        .expect("a project_instructions event");
    assert_eq!(
        announced["files"],
        serde_json::json!(["user:AGENTS.md", "AGENTS.md"])
    );
    // The trained system prompt is untouched.
    assert!(!log[0]["system_prompt"]
        .as_str()
        .unwrap()
        .contains("make check"));

    // --no-project-doc: the task alone, nothing recorded.
    let log = env.session(&["--task", "tidy app.py", "--no-project-doc"]);
    assert_eq!(first_message(&log), "tidy app.py");
    assert!(doc_hashes(&log).is_empty());
    assert!(!log.iter().any(|e| e["event"] == "project_instructions"));
}

#[test]
fn the_override_replaces_agents_md_and_fallback_names_are_read_where_neither_is() {
    let env = Env::new(&[
        ("app.py", "x = 1\n"),
        ("AGENTS.md", "the shared rules\n"),
        ("AGENTS.override.md", "my local rules\n"),
        ("lib/CLAUDE.md", "not on the way to the working directory\n"),
    ]);
    let first = first_message(&env.session(&["--task", "go"]));
    assert!(first.contains("my local rules"), "{first}");
    assert!(!first.contains("the shared rules"), "{first}");
    assert!(!first.contains("not on the way"), "{first}");

    let env = Env::new(&[("app.py", "x = 1\n"), ("CLAUDE.md", "a fallback's rules\n")]);
    let first = first_message(&env.session(&["--task", "go"]));
    assert!(first.contains("a fallback's rules"), "{first}");
    // Other fallback names, from the config file: CLAUDE.md is no longer one.
    env.write(
        "config/lilypad/config.toml",
        "[prompt]\nproject_doc_fallback_filenames = [\"RULES.md\"]\n",
    );
    assert_eq!(first_message(&env.session(&["--task", "go"])), "go");
}

#[test]
fn instructions_past_32_kib_are_cut_and_the_cut_is_said() {
    let body: String = (0..2000)
        .map(|i| format!("rule {i:04}: keep it tidy\n"))
        .collect();
    assert!(body.len() > 40 * 1024);
    let env = Env::new(&[("app.py", "x = 1\n"), ("AGENTS.md", &body)]);
    let first = first_message(&env.session(&["--task", "go"]));
    assert!(first.contains("rule 0000"), "the head is kept");
    assert!(!first.contains("rule 1999"), "the tail is cut");
    assert!(first.contains("cut at 32768 bytes"), "the cut is said");
    assert!(first.len() < 33 * 1024, "{}", first.len());
}

#[test]
fn a_batch_leaves_the_instructions_out_unless_asked() {
    let env = Env::new(&[("app.py", "x = 1\n"), ("AGENTS.md", "batch rules\n")]);
    env.write(
        "tasks.jsonl",
        "{\"instance_id\": \"a\", \"task\": \"go\"}\n",
    );
    let tasks = env.path("tasks.jsonl");
    let out = env.path("out").display().to_string();
    let args = ["--tasks", tasks.to_str().unwrap(), "--out", &out];
    let log = env.session(&args);
    assert_eq!(first_message(&log), "go");
    assert!(doc_hashes(&log).is_empty());
    std::fs::remove_dir_all(env.path("out")).unwrap();
    let log = env.session(&[&args[..], &["--project-doc"]].concat());
    assert!(first_message(&log).contains("batch rules"));
    assert_eq!(doc_hashes(&log), [sha256("batch rules\n")]);
}

#[test]
fn a_repository_config_that_loosens_containment_is_refused_naming_the_file() {
    for (text, key) in [
        ("[sandbox]\nnetwork = \"bridge\"\n", "sandbox.network"),
        ("[sandbox]\nkind = \"host\"\n", "sandbox.kind"),
        ("[remote]\nendpoint = \"http://elsewhere/v1\"\n", "remote"),
    ] {
        let env = Env::new(&[("app.py", "x = 1\n"), (".lilypad/config.toml", text)]);
        let out = env.run(&["--task", "go"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let file = env.path("repo/.lilypad/config.toml");
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains(&format!("`{key}`")),
            "{stderr}"
        );
        assert!(!env.path("sessions").exists(), "no session started");
    }
    // What a repository may set is read: its fallback names.
    let env = Env::new(&[
        ("app.py", "x = 1\n"),
        ("NOTES.md", "the repository's notes\n"),
        (
            ".lilypad/config.toml",
            "[sandbox]\nnetwork = \"none\"\n[prompt]\nproject_doc_fallback_filenames = [\"NOTES.md\"]\n",
        ),
    ]);
    let first = first_message(&env.session(&["--task", "go"]));
    assert!(first.contains("the repository's notes"), "{first}");
    // `lilypad doctor` in the repository names the file and what a session would read.
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .arg("doctor")
        .current_dir(env.path("repo"))
        .env("XDG_CONFIG_HOME", env.path("config"))
        .env_remove("LILYPAD_CONFIG")
        .env_remove("LILYPAD_MODEL")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let file = env.path("repo/.lilypad/config.toml");
    assert!(
        report.contains(&format!("repo config     {}", file.display())),
        "{report}"
    );
    assert!(report.contains("instructions    NOTES.md ("), "{report}");
}

#[test]
fn a_resumed_session_without_a_message_yet_reads_them_once() {
    let env = Env::new(&[("app.py", "x = 1\n"), ("AGENTS.md", "resume rules\n")]);
    // A session that was opened and left before any message: its header and nothing else.
    let id = "20261203-000000-abcd";
    let header = serde_json::json!({
        "lilypad": "0.1.0",
        "session_id": id,
        "created": "2026-12-03T00:00:00.000Z",
        "repo": env.path("repo"),
        "sandbox": "host",
        "engine": format!("script:{}", env.path("answer.script").display()),
        "task": "",
        "system_prompt": "You are a test.",
    });
    env.write(&format!("sessions/{id}.jsonl"), &format!("{header}\n"));
    let resume = |message: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
            .args(["resume", id, "--json", "--message", message])
            .env("XDG_CONFIG_HOME", env.path("config"))
            .env("LILYPAD_SESSION_DIR", env.path("sessions"))
            .env_remove("LILYPAD_CONFIG")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    resume("first words");
    resume("second words");
    let text = std::fs::read_to_string(env.path(&format!("sessions/{id}.jsonl"))).unwrap();
    let log: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        log.iter()
            .filter(|e| e["event"] == "project_instructions")
            .count(),
        1,
        "{text}"
    );
    let first = first_message(&log);
    assert!(
        first.contains("resume rules") && first.ends_with("first words"),
        "{first}"
    );
}
