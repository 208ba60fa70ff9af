//! End to end through a real terminal: `lilypad demo` runs in tmux, the test reads the screen
//! and presses keys like a person: approve the first edit, reject the notes file with
//! feedback, approve only the first hunk of the two-hunk rewrite, run the command, apply the
//! session patch, quit. Then it checks the repository's files and the session log.
//!
//! Needs `tmux` (scripts/setup.sh installs it); without it the test says so and passes,
//! except under CI where a missing tmux is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

pub struct Tmux {
    name: String,
}

impl Tmux {
    pub fn start(cmd: &str) -> Self {
        // Unique per session: tests of this binary run side by side.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("lilypad-e2e-{}-{n}", std::process::id());
        // Tests start and end sessions side by side on one tmux server, which exits with its
        // last session: a start that meets a server on its way out fails, and is tried again.
        let mut last = None;
        for _ in 0..5 {
            let out = Command::new("tmux")
                .args([
                    "new-session",
                    "-d",
                    "-s",
                    &name,
                    "-x",
                    "120",
                    "-y",
                    "40",
                    // The e2e tests were written for the modal keys; those of the default
                    // keys set LILYPAD_KEYS=chat in their command.
                    "-e",
                    "LILYPAD_KEYS=modal",
                    cmd,
                ])
                .env("TERM", "xterm-256color")
                .output()
                .expect("running tmux");
            if out.status.success() {
                return Self { name };
            }
            last = Some(out);
            std::thread::sleep(Duration::from_millis(300));
        }
        panic!("tmux new-session failed: {last:?}");
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Wait until every one of `texts` is on the screen.
    pub fn wait_for(&self, texts: &[&str]) -> String {
        self.wait_for_within(texts, WAIT)
    }

    /// [`Self::wait_for`] with its own limit, for steps that take long on a loaded machine.
    pub fn wait_for_within(&self, texts: &[&str], limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            assert!(
                start.elapsed() < limit,
                "timed out waiting for {texts:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
        std::thread::sleep(Duration::from_millis(150));
    }

    fn text(&self, text: &str) {
        assert!(Command::new("tmux")
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .unwrap()
            .success());
        std::thread::sleep(Duration::from_millis(150));
    }
}

impl Tmux {
    /// The session's name (a `-t` target).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id of the command running in the session's pane.
    pub fn pane_pid(&self) -> u32 {
        let out = Command::new("tmux")
            .args(["display-message", "-p", "-t", &self.name, "#{pane_pid}"])
            .output()
            .expect("tmux display-message");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a pane pid")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

pub fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The events of the one session log in `dir`.
pub fn session_log(dir: &Path) -> Vec<serde_json::Value> {
    let log: PathBuf = std::fs::read_dir(dir)
        .expect("session dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log");
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

#[test]
fn demo_review_flow_in_a_real_terminal() {
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: tmux is not installed (scripts/setup.sh installs it)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let sessions = tmp.path().join("sessions");
    let done = tmp.path().join("done");
    let stderr = tmp.path().join("stderr");
    let state = tmp.path().join("state");
    // Diagnostics on (the session-start line), so the test sees where they go.
    let cmd = format!(
        "XDG_STATE_HOME='{state}' '{bin}' --log-level lilypad=info demo --repo '{repo}' --session-dir '{sessions}' --delay-ms 0 2>'{stderr}'; echo $? > '{done}'; sleep 60",
        state = state.display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        repo = repo.display(),
        sessions = sessions.display(),
        stderr = stderr.display(),
        done = done.display(),
    );
    let t = Tmux::start(&cmd);

    // 1. The one-line fix: approve.
    t.wait_for(&["Approve this edit?", "hunk 1/1", "qty <= threshold"]);
    t.keys(&["y"]);
    // 2. The notes file: reject, telling the model why.
    t.wait_for(&["Approve this create?", "NOTES.md (new file)", "hunk 1/1"]);
    t.keys(&["Escape"]);
    t.wait_for(&["why? (tell the model)"]);
    t.text("no notes file, please");
    t.keys(&["Enter"]);
    // 3. The two-hunk rewrite: keep the first hunk only.
    t.wait_for(&["Approve this rewrite?", "hunk 1/2 · 2 selected"]);
    t.keys(&["]"]);
    t.wait_for(&["hunk 2/2 · 2 selected"]);
    t.keys(&["Space"]);
    t.wait_for(&["hunk 2/2 · 1 selected"]);
    t.keys(&["y"]);
    // 4. The command.
    t.wait_for(&["Run this command?", "python3 -m unittest"]);
    t.keys(&["y"]);
    // 5. The session patch: apply it, then quit.
    let screen = t.wait_for(&["Session patch", "inventory.py"]);
    assert!(
        !screen.contains("NOTES.md"),
        "the rejected file is not in the patch:\n{screen}"
    );
    assert!(
        !screen.contains("__pycache__"),
        "ignored files stay out:\n{screen}"
    );
    t.keys(&["a"]);
    t.wait_for(&["patch applied to"]);
    t.keys(&["q"]);
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < WAIT,
            "lilypad did not exit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(&done).unwrap().trim(), "0");
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(err.contains("the session patch was applied to"), "{err}");
    // Diagnostics went to the log file, not over the interface.
    assert!(!err.contains("session started"), "{err}");
    let log = std::fs::read_to_string(state.join("lilypad/lilypad.log")).unwrap_or_default();
    assert!(log.contains("session started"), "log file: {log:?}");

    // The working tree: the fix and the first hunk, not the second, no notes file.
    let code = std::fs::read_to_string(repo.join("inventory.py")).unwrap();
    assert!(code.contains("if qty <= threshold]"), "{code}");
    assert!(code.contains("self.items: dict[str, int] = {}"), "{code}");
    assert!(!code.contains("sorted("), "{code}");
    assert!(!repo.join("NOTES.md").exists());

    // The session log tells the same story.
    let events = session_log(&sessions);
    let results: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_result")
        .collect();
    let resolution = |name: &str, res: &str| {
        results
            .iter()
            .any(|e| e["name"] == name && e["resolution"] == res)
    };
    assert!(resolution("Edit", "approved"), "{results:#?}");
    assert!(resolution("Write", "rejected"), "{results:#?}");
    assert!(resolution("Write", "edited"), "{results:#?}");
    assert!(resolution("Bash", "approved"), "{results:#?}");
    assert!(results.iter().any(|e| e["content"]
        .as_str()
        .is_some_and(|c| c.contains("no notes file, please"))));
    assert!(events
        .iter()
        .any(|e| e["event"] == "task_finished" && e["reason"] == "answered"));
    // The script follows the rejection of the notes file (its `if rejected` turn).
    let said: String = events
        .iter()
        .filter(|e| e["event"] == "content_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(said.contains("Understood, no notes file."), "{said}");
    assert!(!said.contains("Noted in NOTES.md"), "{said}");

    exported_review_reads_as_the_interface(tmp.path(), &sessions);
}

/// The demo's session exported as HTML: the model's Markdown drawn, the reviewed edit's hunk
/// numbered with the file's lines (the fix is line 29 of inventory.py), and each decision with
/// the person's words.
fn exported_review_reads_as_the_interface(dir: &std::path::Path, sessions: &std::path::Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["export", "--last", "--format", "html"])
        .env("LILYPAD_SESSION_DIR", sessions)
        .env("LILYPAD_CONFIG", dir.join("no-config.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(
        html.contains("The docstring says <strong>at most</strong> <code>threshold</code>"),
        "the model's Markdown is drawn:\n{html}"
    );
    assert!(!html.contains("**at most**"), "no raw Markdown left");
    assert!(
        html.contains("<div class=\"hunk\">@@ -26,4 +26,4 @@"),
        "the hunk is numbered as the file is:\n{html}"
    );
    assert!(
        html.contains("<div class=\"line add\"><span class=\"no\">29</span>+"),
        "the fixed line is line 29:\n{html}"
    );
    assert!(html.contains("<div class=\"decision yes\"><strong>✓ approved</strong>"));
    let rejected = html
        .find("<div class=\"decision no\"><strong>✗ rejected</strong>")
        .expect("the rejected notes file");
    assert!(
        html[rejected..].contains("no notes file, please"),
        "the person's words with the decision"
    );
}
