//! `lilypad tasks mutate` on a real project from PyPI: the sdist of `six` 1.17.0 with its own
//! pytest suite (`test_six.py`), fetched and cached by scripts/fetch-test-data.sh as the
//! journey test's (LILYPAD_TEST_JOURNEY_DIR), committed as one commit; its tests run in a real
//! Docker sandbox, an image built FROM LILYPAD_TEST_BASH_IMAGE with pytest installed offline
//! (`super::tasks_mine::pytest_image`). Five tasks come out, each with failing tests no other
//! fails exactly; each is verified as a batch verifies an attempt (`tasks::score`): its gold
//! patch resolves it, no change does not. Then `lilypad run --tasks` runs them all with a
//! scripted agent (a mock of the model) that writes `six.py` back as it was: every one
//! resolved, so the mutant commits are bases a batch checks out and verifies.

use crate::common::git;
use crate::sandbox_suite::{bash_image, engine_missing};
use crate::tasks_mine::pytest_image;
use lilypad::sandbox::docker;
use lilypad::sandbox::{SandboxKind, SandboxSettings};
use lilypad::tasks::output::{RejectLine, TaskLine};
use lilypad::tasks::score::{score, TaskTests};
use lilypad::tasks::TestRunner;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_is_mutated_into_verified_tasks() {
    if let Err(e) = docker::connect().await {
        engine_missing("Docker", "LILYPAD_REQUIRE_DOCKER", &e.to_string());
        return;
    }
    let Some(base) = bash_image() else { return };
    let Ok(journey) = std::env::var("LILYPAD_TEST_JOURNEY_DIR") else {
        engine_missing(
            "six's sdist and pytest's wheels (LILYPAD_TEST_JOURNEY_DIR, scripts/fetch-test-data.sh)",
            "LILYPAD_REQUIRE_DOCKER",
            "not set",
        );
        return;
    };
    let journey = Path::new(&journey);
    let tmp = tempfile::tempdir().unwrap();
    let image = pytest_image(&base, &journey.join("wheels"), tmp.path()).await;

    let ok = Command::new("tar")
        .args(["--no-same-owner", "-xzf"])
        .arg(journey.join("six-1.17.0.tar.gz"))
        .current_dir(tmp.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "unpacking the sdist");
    let repo = tmp.path().join("six-1.17.0");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "six 1.17.0"]);
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let original = std::fs::read_to_string(repo.join("six.py")).unwrap();

    let out = tmp.path().join("mutants.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .args(["tasks", "mutate"])
        .arg(&repo)
        .arg("-o")
        .arg(&out)
        .args([
            "--limit",
            "5",
            "--jobs",
            "4",
            "--sandbox",
            "docker",
            "--image",
        ])
        .arg(&image)
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}\n{stderr}");
    // Two modules parsed (six.py, and documentation/conf.py, which has no function; setup.py
    // is left out), six.py's mutants, and the suite passing at HEAD.
    assert!(stdout.starts_with("2 modules, "), "{stdout}");
    assert!(stdout.contains(": 5 tasks in "), "{stdout}\n{stderr}");

    let tasks: Vec<TaskLine> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(tasks.len(), 5, "{stderr}");
    let mut failing_sets = BTreeSet::new();
    for t in &tasks {
        assert!(
            t.instance_id.starts_with("six-1.17.0-mut-") && t.instance_id.len() == 25,
            "{}",
            t.instance_id
        );
        assert_eq!(
            t.repo,
            std::fs::canonicalize(&repo).unwrap().to_string_lossy()
        );
        assert_eq!(t.test_patch, "");
        assert_eq!(t.image_name, image);
        // The base is a commit of the mutant without a parent, under its ref; the repository
        // is still at HEAD with nothing changed.
        let named = format!("refs/lilypad/mutants/{}", t.instance_id);
        assert_eq!(git(&repo, &["rev-parse", &named]).trim(), t.base_commit);
        assert_eq!(
            git(&repo, &["rev-list", "--count", &t.base_commit]).trim(),
            "1"
        );
        assert!(
            t.patch.starts_with("diff --git a/six.py b/six.py\n"),
            "{}",
            t.patch
        );
        let f2p = t.fail_to_pass().unwrap();
        let p2p = t.pass_to_pass().unwrap();
        assert!(!f2p.is_empty() && !p2p.is_empty(), "{t:?}");
        assert!(f2p
            .iter()
            .chain(&p2p)
            .all(|id| id.starts_with("test_six.py::")));
        assert!(f2p.iter().all(|id| !p2p.contains(id)));
        assert!(failing_sets.insert(f2p.clone()), "a duplicate: {f2p:?}");
        // The statement names the failing tests, and shows no diff.
        let s = &t.problem_statement;
        assert!(s.contains(&format!("- {}", f2p[0])), "{s}");
        assert!(!s.contains("diff --git") && !s.contains("@@"), "{s}");
    }
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]).trim(), head);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let rejects: Vec<RejectLine> =
        std::fs::read_to_string(tmp.path().join("mutants.rejects.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    for r in &rejects {
        assert!(
            [
                "survives",
                "all_tests_fail",
                "tests_do_not_run",
                "duplicate"
            ]
            .contains(&r.reason.as_str()),
            "{r:?}"
        );
        assert_eq!(r.base_commit, head);
    }

    // Each verified: its gold patch resolves it, no change does not.
    let runner = TestRunner {
        settings: SandboxSettings {
            image: Some(image.clone()),
            ..Default::default()
        },
        kind: Some(SandboxKind::Docker),
        test_cmd: tasks[0].test_cmd.clone(),
        timeout: Duration::from_secs(300),
        pool: None,
        closing: Default::default(),
    };
    let checks = tasks.iter().flat_map(|t| {
        let tests = TaskTests {
            test_patch: String::new(),
            fail_to_pass: t.fail_to_pass().unwrap(),
            pass_to_pass: t.pass_to_pass().unwrap(),
            test_cmd: t.test_cmd.clone(),
        };
        [t.patch.clone(), String::new()].map(|patch| {
            let (repo, base, tests, runner) = (
                repo.clone(),
                t.base_commit.clone(),
                tests.clone(),
                runner.clone(),
            );
            async move {
                score(&repo, &base, patch.as_bytes(), &tests, &runner)
                    .await
                    .unwrap()
            }
        })
    });
    let scored = futures_util::future::join_all(checks).await;
    for (t, pair) in tasks.iter().zip(scored.chunks(2)) {
        assert!(pair[0].resolved, "{}: {:?}", t.instance_id, pair[0]);
        assert!(!pair[1].resolved, "{}: {:?}", t.instance_id, pair[1]);
        let f2p = t.fail_to_pass().unwrap();
        assert_eq!(pair[1].why_not, f2p.join(", "), "{}", t.instance_id);
    }

    // The whole path: `lilypad run --tasks` checks each mutant out, a scripted agent writes
    // six.py back as it was, and the verifier resolves every task.
    let script = tmp.path().join("restore.txt");
    std::fs::write(&script, restore_script(&original)).unwrap();
    let batch = tmp.path().join("batch");
    let run = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.path().join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        // The turn that writes six.py is long: past the default cap on a turn's tokens.
        .args(["run", "--sandbox", "docker", "--parallel", "3"])
        .args(["--max-turn-tokens", "1000000", "--tasks"])
        .arg(&out)
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
    assert_eq!(summary["resolved"], 5, "{summary}; stderr: {stderr}");
}

/// A scripted agent (a mock of the model) that writes six.py as `original`.
fn restore_script(original: &str) -> String {
    format!(
        "=== turn ===\nPut six.py back.\n</think>\n\n<tool_call>\n<function=Write>\n\
         <parameter=file_path>\nsix.py\n</parameter>\n<parameter=content>\n{original}\n\
         </parameter>\n</function>\n</tool_call>\n=== turn ===\nDone.\n</think>\n\nsix.py is \
         as it was.\n"
    )
}
