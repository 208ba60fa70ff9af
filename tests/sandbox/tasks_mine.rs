//! `lilypad tasks mine` on a repository with a real history, its tests run in a real Docker
//! sandbox: an image built FROM LILYPAD_TEST_BASH_IMAGE (`lilypad-sandbox:debian`) with pytest
//! installed offline from the journey test's wheels (LILYPAD_TEST_JOURNEY_DIR, from
//! scripts/fetch-test-data.sh). The history: a first commit, two code-and-test commits (one
//! whose new test module cannot be imported before the fix), a documentation commit, a commit
//! whose tests cannot run even with the fix (they import numpy, which the image lacks), one
//! whose new test passes before the change too, and a side branch merged back. Exactly two
//! tasks come out, with their FAIL_TO_PASS and PASS_TO_PASS, and two rejects with reasons;
//! then one task is scored as a batch verifies an attempt at it (`tasks::score`).

use crate::common::git;
use crate::sandbox_suite::{bash_image, engine_missing};
use lilypad::sandbox::docker;
use lilypad::sandbox::image::ImageBuild;
use lilypad::sandbox::{SandboxKind, SandboxSettings};
use lilypad::tasks::output::{RejectLine, TaskLine};
use lilypad::tasks::score::{score, TaskTests};
use lilypad::tasks::TestRunner;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The image with pytest: built (or found built) from a Dockerfile FROM `base`; also
/// `super::tasks_filter`'s.
pub async fn pytest_image(base: &str, wheels: &Path, scratch: &Path) -> String {
    let ctx = scratch.join("image");
    std::fs::create_dir_all(ctx.join("wheels")).unwrap();
    for w in std::fs::read_dir(wheels).unwrap() {
        let w = w.unwrap().path();
        std::fs::copy(&w, ctx.join("wheels").join(w.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        ctx.join("Dockerfile"),
        format!(
            "FROM {base}\nCOPY wheels /tmp/wheels\n\
             RUN python3 /tmp/wheels/pip-24.3.1-py3-none-any.whl/pip install --no-index \
             --find-links /tmp/wheels --break-system-packages pytest && rm -rf /tmp/wheels\n"
        ),
    )
    .unwrap();
    let b = ImageBuild {
        dockerfile: ctx.join("Dockerfile"),
        context: ctx.clone(),
    };
    let client = docker::connect().await.unwrap();
    lilypad::sandbox::image::build::build(&client, &b, "none", &|_| {})
        .await
        .unwrap()
}

/// Write `files` (`None` removes one) and commit them as `msg` at second `at` of the history.
fn commit(repo: &Path, at: u32, files: &[(&str, Option<&str>)], msg: &str) -> String {
    for (path, text) in files {
        let p = repo.join(path);
        match text {
            Some(t) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, t).unwrap();
            }
            None => std::fs::remove_file(&p).unwrap(),
        }
    }
    git(repo, &["add", "-A"]);
    dated(repo, at, &["commit", "-q", "-m", msg]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

/// `git ARGS` with author and committer dates `at` seconds into 2026.
fn dated(repo: &Path, at: u32, args: &[&str]) {
    let date = format!("{} +0000", 1_767_225_600 + at);
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const CALC_1: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
const CALC_2: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const CALC_3: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n\
def clamp(x, low, high):\n    return max(low, min(x, high))\n";
const CALC_4: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n\
def clamp(x, low, high):\n    return max(low, min(x, high))\n\n\ndef div(a, b):\n    return a / b\n";
const CALC_5: &str = "def add(a, b):\n    return b + a\n\n\ndef sub(a, b):\n    return a - b\n\n\n\
def clamp(x, low, high):\n    return max(low, min(x, high))\n\n\ndef div(a, b):\n    return a / b\n";
const TEST_1: &str =
    "import pkg.calc as calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n";
const TEST_2: &str =
    "import pkg.calc as calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n\
def test_sub():\n    assert calc.sub(5, 3) == 2, \"five minus three\"\n";
const TEST_5: &str =
    "import pkg.calc as calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n\
def test_sub():\n    assert calc.sub(5, 3) == 2, \"five minus three\"\n\n\n\
def test_add_zero():\n    assert calc.add(0, 7) == 7\n";
const TEST_CLAMP: &str =
    "from pkg.calc import clamp\n\n\nclass TestClamp:\n    def test_low(self):\n        \
assert clamp(-5, 0, 10) == 0\n\n    def test_high(self):\n        assert clamp(50, 0, 10) == 10\n";
const TEST_DIV: &str = "import numpy\nfrom pkg.calc import div\n\n\ndef test_div():\n    assert div(6, 3) == numpy.float64(2)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_is_mined_into_exactly_the_expected_tasks() {
    if let Err(e) = docker::connect().await {
        engine_missing("Docker", "LILYPAD_REQUIRE_DOCKER", &e.to_string());
        return;
    }
    let Some(base) = bash_image() else { return };
    let Ok(journey) = std::env::var("LILYPAD_TEST_JOURNEY_DIR") else {
        engine_missing(
            "pytest's wheels (LILYPAD_TEST_JOURNEY_DIR, scripts/fetch-test-data.sh)",
            "LILYPAD_REQUIRE_DOCKER",
            "not set",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let image = pytest_image(&base, &Path::new(&journey).join("wheels"), tmp.path()).await;

    let repo = tmp.path().join("repos/acme/calc");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "trunk"]);
    git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/acme/calc.git",
        ],
    );
    let root = commit(
        &repo,
        1,
        &[
            ("pkg/__init__.py", Some("")),
            ("pkg/calc.py", Some(CALC_1)),
            ("tests/test_calc.py", Some(TEST_1)),
            ("README.md", Some("# calc\n")),
        ],
        "Start calc",
    );
    let fix_sub = commit(
        &repo,
        2,
        &[
            ("pkg/calc.py", Some(CALC_2)),
            ("tests/test_calc.py", Some(TEST_2)),
        ],
        "Fix sub\n\nsub added its arguments instead of subtracting them.",
    );
    let docs = commit(
        &repo,
        3,
        &[("README.md", Some("# calc\n\nadd and sub.\n"))],
        "Document sub",
    );
    let clamp = commit(
        &repo,
        4,
        &[
            ("pkg/calc.py", Some(CALC_3)),
            ("tests/test_clamp.py", Some(TEST_CLAMP)),
        ],
        "Add clamp",
    );
    let div = commit(
        &repo,
        5,
        &[
            ("pkg/calc.py", Some(CALC_4)),
            ("tests/test_div.py", Some(TEST_DIV)),
        ],
        "Add div",
    );
    let tidy = commit(
        &repo,
        6,
        &[
            ("pkg/calc.py", Some(CALC_5)),
            ("tests/test_calc.py", Some(TEST_5)),
        ],
        "Tidy add",
    );
    // A side branch from the first commit with a note, merged back.
    git(&repo, &["checkout", "-q", "-b", "side", &root]);
    commit(&repo, 7, &[("docs/notes.md", Some("notes\n"))], "Notes");
    git(&repo, &["checkout", "-q", "trunk"]);
    dated(
        &repo,
        8,
        &["merge", "-q", "--no-ff", "-m", "Merge side", "side"],
    );

    let out = tmp.path().join("mined.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["tasks", "mine"])
        .arg(&repo)
        .arg("-o")
        .arg(&out)
        .args([
            "--jobs",
            "2",
            "--sandbox",
            "docker",
            "--image",
            &image,
            "--test-timeout",
            "300",
        ])
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.trim(),
        format!(
            "8 commits: 4 candidates (skipped: docs_only 2, merge 1, root 1); 2 tasks in {}, \
             2 rejected in {} (no_fail_to_pass 1, tests_do_not_run 1)",
            out.display(),
            tmp.path().join("mined.rejects.jsonl").display()
        ),
        "{stderr}"
    );

    let short = |sha: &str| {
        git(&repo, &["rev-parse", "--short", sha])
            .trim()
            .to_string()
    };
    let tasks: Vec<TaskLine> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    on_kubernetes_the_same_tasks_come_out(&repo, &image, tmp.path(), &out, &stdout);
    described_by_the_model(&repo, &image, tmp.path());
    let ids: Vec<&str> = tasks.iter().map(|t| t.instance_id.as_str()).collect();
    // Newest first, as the history is read.
    assert_eq!(
        ids,
        [
            format!("acme__calc-{}", short(&clamp)),
            format!("acme__calc-{}", short(&fix_sub)),
        ]
    );
    let (t_clamp, t_sub) = (&tasks[0], &tasks[1]);
    assert_eq!(t_sub.repo, "acme/calc");
    assert_eq!(t_sub.base_commit, root);
    assert_eq!(t_sub.environment_setup_commit, root);
    assert_eq!(t_sub.fail_to_pass, "[\"tests/test_calc.py::test_sub\"]");
    assert_eq!(t_sub.pass_to_pass, "[\"tests/test_calc.py::test_add\"]");
    assert_eq!(t_sub.image_name, image);
    assert_eq!(t_sub.test_cmd, "python3 -m pytest");
    assert!(
        t_sub.created_at.starts_with("2026-01-01T00:00:02"),
        "{}",
        t_sub.created_at
    );
    assert!(t_sub.patch.contains("+    return a - b") && !t_sub.patch.contains("tests/"));
    assert!(t_sub.test_patch.contains("+def test_sub():") && !t_sub.test_patch.contains("pkg/"));
    // The statement: the commit message and the failure, never the fix.
    let s = &t_sub.problem_statement;
    assert!(
        s.starts_with("Fix sub\n\nsub added its arguments instead of subtracting them."),
        "{s}"
    );
    assert!(
        s.contains("- tests/test_calc.py::test_sub") && s.contains("five minus three"),
        "{s}"
    );
    assert!(!s.contains("a - b"), "{s}");

    // Its parent is the documentation commit.
    assert_eq!(t_clamp.base_commit, docs);
    assert_eq!(
        t_clamp.fail_to_pass,
        "[\"tests/test_clamp.py::TestClamp::test_high\",\"tests/test_clamp.py::TestClamp::test_low\"]"
    );
    assert_eq!(t_clamp.pass_to_pass, "[]");
    assert!(
        t_clamp
            .problem_statement
            .contains("cannot import name 'clamp'"),
        "{}",
        t_clamp.problem_statement
    );

    let rejects: Vec<RejectLine> = std::fs::read_to_string(tmp.path().join("mined.rejects.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rejects.len(), 2, "{rejects:?}");
    let (r_tidy, r_div) = (&rejects[0], &rejects[1]);
    assert_eq!(
        (r_tidy.commit.as_str(), r_tidy.reason.as_str()),
        (tidy.as_str(), "no_fail_to_pass")
    );
    assert!(
        r_tidy.detail.contains("3 pass both times"),
        "{}",
        r_tidy.detail
    );
    assert_eq!(
        (r_div.commit.as_str(), r_div.reason.as_str()),
        (div.as_str(), "tests_do_not_run")
    );
    assert!(
        r_div.detail.contains("gold run")
            && r_div
                .detail
                .contains("tests/test_div.py cannot be collected")
            && r_div.detail.contains("No module named 'numpy'"),
        "{}",
        r_div.detail
    );
    assert_eq!(r_div.base_commit, clamp);

    // Scoring, as `lilypad run --tasks` verifies an attempt at a mined task: the gold patch
    // resolves, a patch that changes nothing does not, and one that rewrites the test file
    // instead of fixing the code gets no credit from its own tests.
    let runner = TestRunner {
        settings: SandboxSettings {
            image: Some(image.clone()),
            ..Default::default()
        },
        kind: Some(SandboxKind::Docker),
        test_cmd: t_sub.test_cmd.clone(),
        timeout: Duration::from_secs(300),
        pool: None,
        closing: Default::default(),
    };
    let tests = TaskTests {
        test_patch: t_sub.test_patch.clone(),
        fail_to_pass: t_sub.fail_to_pass().unwrap(),
        pass_to_pass: t_sub.pass_to_pass().unwrap(),
        test_cmd: t_sub.test_cmd.clone(),
    };
    let score = |patch: String| {
        let (repo, base, tests, runner) =
            (repo.clone(), root.clone(), tests.clone(), runner.clone());
        async move {
            score(&repo, &base, patch.as_bytes(), &tests, &runner)
                .await
                .unwrap()
        }
    };
    let gold = score(t_sub.patch.clone()).await;
    assert!(gold.resolved, "{gold:?}");
    let nothing = score(String::new()).await;
    assert!(!nothing.resolved);
    assert_eq!(nothing.why_not, "tests/test_calc.py::test_sub");
    let cheat_dir = tmp.path().join("cheat");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            &repo.to_string_lossy(),
            &cheat_dir.to_string_lossy(),
        ],
    );
    git(&cheat_dir, &["checkout", "-q", &root]);
    std::fs::write(
        cheat_dir.join("tests/test_calc.py"),
        "def test_add():\n    pass\n\n\ndef test_sub():\n    pass\n",
    )
    .unwrap();
    let cheat = score(git(&cheat_dir, &["diff"])).await;
    assert!(!cheat.resolved, "{cheat:?}");
    assert_eq!(cheat.why_not, "tests/test_calc.py::test_sub");

    // The whole path: `lilypad run --tasks mined.jsonl` with a scripted agent that fixes sub.
    // At the sub task's base the fix applies and resolves it; at the clamp task's base sub is
    // already right, the edit fails, nothing changes, and the clamp tests still fail.
    let script = tmp.path().join("fix.txt");
    std::fs::write(&script, FIX_SUB).unwrap();
    let batch = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", "docker", "--tasks"])
        .arg(&out)
        .arg("--repos-dir")
        .arg(tmp.path().join("repos"))
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&batch)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(batch.join("summary.json"))
            .unwrap_or_else(|e| panic!("{e}; stderr: {stderr}")),
    )
    .unwrap();
    assert_eq!(summary["resolved"], 1, "{summary}; stderr: {stderr}");
    assert_eq!(summary["unresolved"], 1, "{summary}");
    let results = std::fs::read_to_string(batch.join("results.jsonl")).unwrap();
    let reward = |id: &str| -> f64 {
        results
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["instance_id"] == id)
            .unwrap()["reward"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(reward(&t_sub.instance_id), 1.0, "{results}");
    assert_eq!(reward(&t_clamp.instance_id), 0.0, "{results}");
}

/// A scripted agent (a mock of the model) that fixes sub.
const FIX_SUB: &str = "=== turn ===
Fix sub.
</think>

<tool_call>
<function=Edit>
<parameter=file_path>
pkg/calc.py
</parameter>
<parameter=old_string>
def sub(a, b):
    return a + b
</parameter>
<parameter=new_string>
def sub(a, b):
    return a - b
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

sub subtracts now.
";

/// The same history mined with the runs in Kubernetes pods, made ahead two at a time as a
/// batch's are: the same summary and the same lines as in Docker.
fn on_kubernetes_the_same_tasks_come_out(
    repo: &Path,
    image: &str,
    tmp: &Path,
    docker_out: &Path,
    docker_summary: &str,
) {
    let kubeconfig = std::env::var("LILYPAD_TEST_KUBECONFIG")
        .unwrap_or_else(|_| "/tmp/lilypad-k8s/sandbox.kubeconfig".into());
    if !Path::new(&kubeconfig).exists() {
        engine_missing(
            "Kubernetes",
            "LILYPAD_REQUIRE_KUBE",
            &format!("no kubeconfig at {kubeconfig}"),
        );
        return;
    }
    let config = tmp.join("kube.toml");
    std::fs::write(
        &config,
        format!("[sandbox.kube]\nkubeconfig = \"{kubeconfig}\"\nimage_pull_policy = \"Never\"\n"),
    )
    .unwrap();
    let out = tmp.join("kube/mined.jsonl");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["tasks", "mine"])
        .arg(repo)
        .arg("-o")
        .arg(&out)
        .args(["--jobs", "2", "--sandbox", "kube", "--image", image])
        .args(["--test-timeout", "300"])
        .env("LILYPAD_CONFIG", &config)
        .env("LILYPAD_SESSION_DIR", tmp.join("sessions"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let paths = |s: &str, out: &Path| {
        s.replace(&out.display().to_string(), "TASKS").replace(
            &out.with_file_name("mined.rejects.jsonl")
                .display()
                .to_string(),
            "REJECTS",
        )
    };
    assert_eq!(
        paths(stdout.trim(), &out),
        paths(docker_summary.trim(), docker_out),
        "{stderr}"
    );
    // The same tasks with the same tests (the statements quote the sandbox's own paths).
    let tasks = |p: &Path| -> Vec<(String, String, String)> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<TaskLine>(l).unwrap())
            .map(|t| (t.instance_id, t.fail_to_pass, t.pass_to_pass))
            .collect()
    };
    assert_eq!(tasks(&out), tasks(docker_out));
    let rejects = |p: &Path| -> Vec<(String, String)> {
        std::fs::read_to_string(p.with_file_name("mined.rejects.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<RejectLine>(l).unwrap())
            .map(|r| (r.commit, r.reason))
            .collect()
    };
    assert_eq!(rejects(&out), rejects(docker_out));
}

/// `--describe`: the model (here the scripted engine, a mock of it) writes the newest task's
/// statement; the statement is its reply after the reasoning, and nothing else.
fn described_by_the_model(repo: &Path, image: &str, tmp: &Path) {
    let script = tmp.join("describe.txt");
    std::fs::write(
        &script,
        "=== turn ===\nThe user saw clamp missing.\n</think>\n\n`from pkg.calc import clamp` fails with an ImportError; I expected a clamp function.\n",
    )
    .unwrap();
    let out = tmp.join("described/mined.jsonl");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["tasks", "mine"])
        .arg(repo)
        .arg("-o")
        .arg(&out)
        .args(["--limit", "3", "--sandbox", "docker", "--image", image])
        .args(["--describe", "--engine"])
        .arg(format!("script:{}", script.display()))
        .env("LILYPAD_CONFIG", tmp.join("no-config.toml"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let tasks: Vec<TaskLine> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(
        tasks[0].problem_statement,
        "`from pkg.calc import clamp` fails with an ImportError; I expected a clamp function."
    );
}
