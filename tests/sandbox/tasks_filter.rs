//! `lilypad tasks filter` on five mined tasks with known solve rates, in real Docker sandboxes
//! (the pytest image of `super::tasks_mine`). The tasks share a base commit: five modules each
//! with a function returning 0 that should return 1, each task's test patch a test of its
//! module. The model is a scripted engine (a mock of the model) with one script per attempt:
//! attempt 1 and 3 fix `all` and `two`, attempt 2 fixes `all` and `one`, none fixes `never` or
//! `lost`. With K = 3 the rates are 3/3, 2/3, 1/3, 0/3 and 0/3.
//!
//! The filter is killed after some attempts and started again: the recorded attempts are not
//! run again (their results stay byte for byte), and the solve rates and the kept tasks are
//! exactly the expected ones. Run again with a narrower band and a share of never-solved
//! tasks, it runs nothing and keeps what the new rule says; run by another engine into the
//! same output, it refuses.

use crate::common::git;
use crate::sandbox_suite::{bash_image, engine_missing};
use lilypad::sandbox::docker;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MODULES: [&str; 5] = ["all", "two", "one", "never", "lost"];

/// A scripted attempt (a mock of the model) that fixes the modules `fixes`, one edit a turn.
fn script(fixes: &[&str]) -> String {
    let mut s = String::new();
    for m in fixes {
        s.push_str(&format!(
            "=== turn ===\nFix {m}.\n</think>\n\n<tool_call>\n<function=Edit>\n\
             <parameter=file_path>\npkg/m_{m}.py\n</parameter>\n<parameter=old_string>\nreturn 0\n</parameter>\n\
             <parameter=new_string>\nreturn 1\n</parameter>\n\
             </function>\n</tool_call>\n"
        ));
    }
    s.push_str("=== turn ===\nDone.\n</think>\n\nFixed.\n");
    s
}

/// The repository at its base commit and one mined line per module: its gold patch makes the
/// module's `value()` return 1, its test patch adds a test that asks for 1.
fn tasks(repo: &Path, image: &str) -> Vec<String> {
    std::fs::create_dir_all(repo.join("pkg")).unwrap();
    git(repo, &["init", "-q", "-b", "trunk"]);
    std::fs::write(repo.join("pkg/__init__.py"), "").unwrap();
    for m in MODULES {
        std::fs::write(
            repo.join(format!("pkg/m_{m}.py")),
            format!("def value():\n    \"\"\"The {m} value.\"\"\"\n    return 0\n"),
        )
        .unwrap();
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]).trim().to_string();
    MODULES
        .iter()
        .map(|m| {
            let module = repo.join(format!("pkg/m_{m}.py"));
            let text = std::fs::read_to_string(&module).unwrap();
            std::fs::write(&module, text.replace("return 0", "return 1")).unwrap();
            std::fs::create_dir_all(repo.join("tests")).unwrap();
            std::fs::write(
                repo.join(format!("tests/test_{m}.py")),
                format!(
                    "from pkg.m_{m} import value\n\n\ndef test_{m}():\n    assert value() == 1\n"
                ),
            )
            .unwrap();
            git(repo, &["add", "-A"]);
            let patch = git(repo, &["diff", "--cached", "--", "pkg"]);
            let test_patch = git(repo, &["diff", "--cached", "--", "tests"]);
            git(repo, &["reset", "-q", "--hard", &base]);
            serde_json::json!({
                "instance_id": format!("acme__calc-{m}"),
                "repo": repo.display().to_string(),
                "base_commit": base,
                "patch": patch,
                "test_patch": test_patch,
                "problem_statement": format!("pkg.m_{m}.value() returns 0; it should return 1."),
                "FAIL_TO_PASS": format!("[\"tests/test_{m}.py::test_{m}\"]"),
                "PASS_TO_PASS": "[]",
                "created_at": "2026-01-01T00:00:00+00:00",
                "environment_setup_commit": base,
                "image_name": image,
                "test_cmd": "python3 -m pytest",
            })
            .to_string()
        })
        .collect()
}

/// `lilypad tasks filter` with the test's environment and `args`.
fn filter(tmp: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    c.env("LILYPAD_CONFIG", tmp.join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_ENDPOINT")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["tasks", "filter"])
        .args(args)
        .current_dir(tmp);
    c
}

/// The finished attempts recorded under the attempts folder: their `result.json` paths and
/// bytes.
fn recorded(attempts: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(attempts.join("results")) else {
        return out;
    };
    for t in tasks {
        for a in std::fs::read_dir(t.unwrap().path()).unwrap() {
            let path = a.unwrap().path().join("result.json");
            if let Ok(bytes) = std::fs::read(&path) {
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                if v.get("error").is_none() {
                    out.push((path, bytes));
                }
            }
        }
    }
    out.sort();
    out
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_keeps_exactly_the_band_and_continues_where_it_was_stopped() {
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
    let t = tmp.path();
    let image =
        super::tasks_mine::pytest_image(&base, &Path::new(&journey).join("wheels"), t).await;
    let set = tasks(&t.join("repo"), &image);
    let mined = t.join("mined.jsonl");
    std::fs::write(&mined, set.join("\n") + "\n").unwrap();
    for (n, fixes) in [
        (1, ["all", "two"]),
        (2, ["all", "one"]),
        (3, ["all", "two"]),
    ] {
        std::fs::write(t.join(format!("a{n}.txt")), script(&fixes)).unwrap();
    }
    let engine = format!("script:{}/a{{attempt}}.txt", t.display());
    let args = [
        "mined.jsonl",
        "--attempts",
        "3",
        "-o",
        "round-1.jsonl",
        "--parallel",
        "2",
        "--sandbox",
        "docker",
        "--engine",
        &engine,
    ];
    let attempts = t.join("round-1.attempts");

    // Stopped after three attempts are recorded (killed, as a crash or a lost machine would).
    let log = std::fs::File::create(t.join("first.log")).unwrap();
    let mut first = filter(t, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    while recorded(&attempts).len() < 3 {
        if let Some(status) = first.try_wait().unwrap() {
            panic!(
                "the filter ended ({status}) before it was stopped: {}",
                std::fs::read_to_string(t.join("first.log")).unwrap()
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let before = recorded(&attempts);
    assert!(
        (3..15).contains(&before.len()),
        "stopped midway: {} recorded",
        before.len()
    );
    assert!(
        !t.join("round-1.jsonl").exists(),
        "nothing kept before the end"
    );

    // Started again: only the attempts without a result run.
    let again = filter(t, &args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr),
    );
    assert!(again.status.success(), "{stdout}\n{stderr}");
    let ran = 15 - before.len();
    assert!(
        stderr.contains(&format!(
            "{ran} of 15 attempts ran now (0 failed), {} finished earlier",
            before.len()
        )),
        "{stderr}"
    );
    let after = recorded(&attempts);
    assert_eq!(after.len(), 15);
    for (path, bytes) in &before {
        let now = after.iter().find(|(p, _)| p == path).unwrap();
        assert_eq!(&now.1, bytes, "{} was run again", path.display());
    }

    // Every task's solve rate, exactly.
    let rate = |m: &str, resolved: u32, verdict: &str| {
        serde_json::json!({
            "instance_id": format!("acme__calc-{m}"),
            "attempts": 3,
            "resolved": resolved,
            "rate": f64::from(resolved) / 3.0,
            "verdict": verdict,
        })
    };
    let rates: Vec<serde_json::Value> = lines(&t.join("round-1.rates.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        rates,
        [
            rate("all", 3, "dropped"),
            rate("two", 2, "kept"),
            rate("one", 1, "kept"),
            rate("never", 0, "dropped"),
            rate("lost", 0, "dropped"),
        ],
        "{stdout}"
    );
    // The kept tasks: the lines as they were read.
    assert_eq!(
        lines(&t.join("round-1.jsonl")),
        [set[1].clone(), set[2].clone()]
    );
    let bar = |n: usize| format!("{}{}", "#".repeat(n), " ".repeat(40 - n));
    let expected = format!(
        "solve rates of 5 tasks, 3 attempts each (resolved/attempts):\n  0/3 |{}| 2\n  \
         1/3 |{}| 1\n  2/3 |{}| 1\n  3/3 |{}| 1\npass@1 0.4000, pass@3 0.6000\n\
         kept 2 (2 with 0 < p < 1), dropped 3\n",
        bar(40),
        bar(20),
        bar(20),
        bar(20)
    );
    assert!(stdout.starts_with(&expected), "{stdout}");

    // Another rule over the same attempts: nothing runs again.
    let narrow = filter(
        t,
        &[&args[..], &["--keep", "0.5<=p<1", "--keep-unsolved", "0.5"]].concat(),
    )
    .output()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&narrow.stdout),
        String::from_utf8_lossy(&narrow.stderr),
    );
    assert!(narrow.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("0 of 15 attempts ran now (0 failed), 15 finished earlier"),
        "{stderr}"
    );
    assert_eq!(recorded(&attempts), after, "no result changed");
    // Of the two never solved, the one first in the seeded order (seed 0).
    let rank =
        |i: usize| lilypad::tasks::filter::unsolved_rank(0, &format!("acme__calc-{}", MODULES[i]));
    let unsolved = if rank(3) < rank(4) { 3 } else { 4 };
    assert_eq!(
        lines(&t.join("round-1.jsonl")),
        [set[1].clone(), set[unsolved].clone()]
    );
    assert!(
        stdout.contains(
            "kept 2 (1 with 0.5 <= p < 1, 1 of 2 never solved by share 0.5 and seed 0), dropped 3"
        ),
        "{stdout}"
    );
    let verdicts: Vec<String> = lines(&t.join("round-1.rates.jsonl"))
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["verdict"].to_string())
        .collect();
    let mut want = vec!["\"dropped\""; 5];
    want[1] = "\"kept\"";
    want[unsolved] = "\"kept_unsolved\"";
    assert_eq!(verdicts, want);

    // Another engine (a new round of weights) into the same output: refused, nothing run.
    let other = format!("script:{}/b{{attempt}}.txt", t.display());
    let refused = filter(
        t,
        &[
            "mined.jsonl",
            "--attempts",
            "3",
            "-o",
            "round-1.jsonl",
            "--sandbox",
            "docker",
            "--engine",
            &other,
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("need an output of their own") && stderr.contains(&engine),
        "{stderr}"
    );
    assert_eq!(recorded(&attempts), after);
}
