//! `lilypad tasks mine` and `lilypad tasks mutate` with `--sandbox host`: the tests run on this
//! machine (under bubblewrap where it works, whose `/tmp` is the command's own, so a report
//! written there could not be read back) with the host's Python and pytest installed offline
//! from the journey test's wheels (LILYPAD_TEST_JOURNEY_DIR, scripts/fetch-test-data.sh) into
//! a folder of the test target (outside `/tmp`, which the contained sandbox replaces).
//!
//! A history of two commits gives exactly its one task, which scores on the host as SWE-bench's
//! rule says; a module's mutants become tasks whose statements the scripted engine (a mock of
//! the model) writes under `--describe`, and a recording describer (a mock too) sees the fix's
//! diff and the failures, never the mutation's operator or place. Every task's checkout, as a
//! batch prepares it (`headless::sources::checkout_at`), holds its base commit and nothing
//! later: no refs, no reflog, and for a mutant not the unbroken HEAD.

use crate::common::git;
use crate::sandbox_suite::engine_missing;
use lilypad::headless::sources::checkout_at;
use lilypad::sandbox::{SandboxKind, SandboxSettings};
use lilypad::tasks::mutate::{mutate, MutateOptions};
use lilypad::tasks::output::TaskLine;
use lilypad::tasks::score::{score, TaskTests};
use lilypad::tasks::statement::{Describer, Evidence};
use lilypad::tasks::TestRunner;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CALC_BUG: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const TEST_ADD: &str =
    "import pkg.calc as calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n";
const TEST_BOTH: &str =
    "import pkg.calc as calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n\
def test_sub():\n    assert calc.sub(5, 3) == 2\n";

/// The pytest command on the host: the interpreter itself (not a shim, which may need the
/// user's `HOME`), with pytest from the journey test's wheels on its path, installed once into
/// the test target; `None` skips (loudly) when the wheels or Python are missing.
fn host_pytest() -> Option<String> {
    let Ok(journey) = std::env::var("LILYPAD_TEST_JOURNEY_DIR") else {
        engine_missing(
            "pytest's wheels (LILYPAD_TEST_JOURNEY_DIR, scripts/fetch-test-data.sh)",
            "LILYPAD_REQUIRE_DOCKER",
            "not set",
        );
        return None;
    };
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output();
    let python = match python {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap().trim().to_string(),
        other => {
            engine_missing("python3", "LILYPAD_REQUIRE_DOCKER", &format!("{other:?}"));
            return None;
        }
    };
    // Both tests of this file want it: one installs, the other waits.
    static ONCE: Mutex<()> = Mutex::new(());
    let _once = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("host-pytest-8.3.5");
    if !dir.join(".complete").exists() {
        let wheels = Path::new(&journey).join("wheels");
        let partial = dir.with_extension("partial");
        let _ = std::fs::remove_dir_all(&partial);
        let out = Command::new(&python)
            .arg(wheels.join("pip-24.3.1-py3-none-any.whl/pip"))
            .args(["install", "-q", "--no-index", "--disable-pip-version-check"])
            .arg("--find-links")
            .arg(&wheels)
            .arg("--target")
            .arg(&partial)
            .arg("pytest")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(partial.join(".complete"), "").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&partial, &dir).unwrap();
    }
    Some(format!(
        "PYTHONPATH='{}' '{python}' -m pytest",
        dir.display()
    ))
}

/// Write `files` and commit them as `msg`; the commit's sha.
fn commit(repo: &Path, files: &[(&str, &str)], msg: &str) -> String {
    for (path, text) in files {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", msg]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

fn lines(path: &Path) -> Vec<TaskLine> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn host_runner(test_cmd: &str) -> TestRunner {
    TestRunner {
        settings: SandboxSettings::default(),
        kind: Some(SandboxKind::Host),
        test_cmd: test_cmd.to_string(),
        timeout: Duration::from_secs(300),
        pool: None,
        closing: Default::default(),
    }
}

/// A batch's checkout of `base` holds `base` alone: no refs but its detached HEAD, no reflog,
/// no remote, and none of `hidden` (later commits) in its objects.
fn assert_checkout_holds_only(repo: &Path, base: &str, hidden: &[&str]) {
    let task = checkout_at("t", repo, base).unwrap();
    let at = task.path.as_path();
    assert_eq!(git(at, &["rev-parse", "HEAD"]).trim(), base);
    assert_eq!(git(at, &["log", "--all", "--format=%H"]).trim(), base);
    assert_eq!(git(at, &["for-each-ref"]), "");
    assert_eq!(git(at, &["remote"]), "");
    assert_eq!(git(at, &["reflog", "--all"]), "");
    for sha in hidden {
        let found = Command::new("git")
            .args(["cat-file", "-e", sha])
            .current_dir(at)
            .output()
            .unwrap();
        assert!(
            !found.status.success(),
            "{sha} is in the checkout of {base}"
        );
    }
    assert_eq!(git(at, &["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_is_mined_and_scored_in_the_host_sandbox() {
    let Some(test_cmd) = host_pytest() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("calc");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let base = commit(
        &repo,
        &[
            ("pkg/__init__.py", ""),
            ("pkg/calc.py", CALC_BUG),
            ("tests/test_calc.py", TEST_ADD),
        ],
        "Start",
    );
    let fix = commit(
        &repo,
        &[("pkg/calc.py", CALC), ("tests/test_calc.py", TEST_BOTH)],
        "Fix sub",
    );
    git(&repo, &["tag", "v1"]);
    let fixed_blob = git(&repo, &["rev-parse", "HEAD:pkg/calc.py"])
        .trim()
        .to_string();

    let out = tmp.path().join("mined.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["tasks", "mine"])
        .arg(&repo)
        .arg("-o")
        .arg(&out)
        .args(["--sandbox", "host", "--test-cmd", &test_cmd])
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("mined.rejects.jsonl")).unwrap(),
        "",
        "{stderr}"
    );
    let tasks = lines(&out);
    assert_eq!(tasks.len(), 1, "{stderr}");
    let t = &tasks[0];
    assert_eq!(t.base_commit, base);
    assert_eq!(t.fail_to_pass().unwrap(), ["tests/test_calc.py::test_sub"]);
    assert_eq!(t.pass_to_pass().unwrap(), ["tests/test_calc.py::test_add"]);
    assert_eq!(t.test_cmd, test_cmd);

    // Scored on the host as a batch's verifier scores: the gold patch resolves it, no change
    // does not (the report read back from the host sandbox here too).
    let tests = TaskTests {
        test_patch: t.test_patch.clone(),
        fail_to_pass: t.fail_to_pass().unwrap(),
        pass_to_pass: t.pass_to_pass().unwrap(),
        test_cmd: t.test_cmd.clone(),
    };
    let runner = host_runner(&test_cmd);
    let gold = score(&repo, &base, t.patch.as_bytes(), &tests, &runner)
        .await
        .unwrap();
    assert!(gold.resolved, "{gold:?}");
    let none = score(&repo, &base, b"", &tests, &runner).await.unwrap();
    assert!(!none.resolved, "{none:?}");
    assert_eq!(none.why_not, "tests/test_calc.py::test_sub");

    // The attempt's checkout: the base, and neither the fix nor the branch or tag naming it.
    assert_checkout_holds_only(&repo, &base, &[&fix, &fixed_blob]);
    // An abbreviated sha is the same commit; one the clone lacks is refused, naming it.
    let short = checkout_at("t", &repo, &base[..10]).unwrap();
    assert_eq!(git(&short.path, &["rev-parse", "HEAD"]).trim(), base);
    let missing = checkout_at("t", &repo, &"0".repeat(40)).err().unwrap();
    assert!(
        missing.to_string().contains("the clone has no such commit"),
        "{missing}"
    );
}

/// A describer that records what it is shown and answers a fixed text (a mock of the model).
#[derive(Debug, Default)]
struct RecordingDescriber {
    seen: Mutex<Vec<Evidence>>,
}

impl Describer for RecordingDescriber {
    fn describe(
        &self,
        evidence: &Evidence,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let mut seen = self.seen.lock().unwrap();
        seen.push(evidence.clone());
        Ok(format!("issue {}", seen.len()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutants_are_described_and_their_checkouts_hold_no_fix() {
    let Some(test_cmd) = host_pytest() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("calc");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let head = commit(
        &repo,
        &[
            ("pkg/__init__.py", ""),
            ("pkg/calc.py", CALC),
            ("tests/test_calc.py", TEST_BOTH),
        ],
        "calc",
    );
    let fixed_blob = git(&repo, &["rev-parse", "HEAD:pkg/calc.py"])
        .trim()
        .to_string();

    // Through the command line, the scripted engine writing the statements: its two turns'
    // replies (after the reasoning) are the two tasks' statements, in order. The two mutants
    // are `+` to `-` in add and `-` to `+` in sub, each failing one test of two.
    let script = tmp.path().join("describe.txt");
    std::fs::write(
        &script,
        "=== turn ===\nA user's view.\n</think>\n\nFirst issue.\n\
         === turn ===\nAnother.\n</think>\n\nSecond issue.\n",
    )
    .unwrap();
    let out = tmp.path().join("mutants.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["tasks", "mutate"])
        .arg(&repo)
        .arg("-o")
        .arg(&out)
        .args(["--sandbox", "host", "--test-cmd", &test_cmd])
        .args(["--describe", "--engine"])
        .arg(format!("script:{}", script.display()))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let tasks = lines(&out);
    let statements: Vec<&str> = tasks.iter().map(|t| t.problem_statement.as_str()).collect();
    assert_eq!(statements, ["First issue.", "Second issue."], "{stderr}");

    // In the library, a recording describer: shown the fix's diff and the failing tests'
    // output, no message, and nothing of the mutation's operator or place.
    let describer = Arc::new(RecordingDescriber::default());
    let opts = MutateOptions {
        repo: repo.clone(),
        limit: None,
        max_mutants: 500,
        jobs: 1,
        runner: host_runner(&test_cmd),
        describer: Some(describer.clone()),
    };
    let (mut written, mut rejects) = (Vec::new(), Vec::new());
    let summary = mutate(&opts, &mut written, &mut rejects, &|_| {})
        .await
        .unwrap();
    assert_eq!(summary.tasks, 2, "{}", String::from_utf8_lossy(&rejects));
    let again: Vec<TaskLine> = String::from_utf8(written)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen = describer.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for (n, (t, e)) in again.iter().zip(&seen).enumerate() {
        assert_eq!(t.problem_statement, format!("issue {}", n + 1));
        assert_eq!(e.message, None);
        assert_eq!(e.patch, t.patch);
        let failing = &t.fail_to_pass().unwrap()[0];
        assert!(e.failing.contains(&format!("- {failing}")), "{e:?}");
        assert!(e.failing.contains("E "), "{e:?}");
        for word in ["swap_arithmetic", "pkg/calc.py:", "diff --git", "@@"] {
            assert!(!e.failing.contains(word), "{word} in {e:?}");
        }
    }

    // Each mutant's checkout holds the mutant commit alone: not the unbroken HEAD.
    for t in &tasks {
        assert_checkout_holds_only(&repo, &t.base_commit, &[&head, &fixed_blob]);
    }
}
