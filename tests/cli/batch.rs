//! Research batches through the real binary with the scripted engine and the host sandbox on
//! real git repositories: attempts that differ by script, the check command, results that a
//! second run skips byte for byte, a batch killed with SIGKILL that finishes when run again,
//! pass@k in the report, presets, the provenance headers, SWE-bench task files over local
//! clones, and a recorded patch that cannot be read, which stops the batch.

use crate::common::git_repo;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run git in `dir` as a test identity ([`crate::common::git`]); its trimmed output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    crate::common::git(dir, args).trim().to_string()
}

/// A repository whose `src/app.py` returns 1.
fn repo(dir: &Path) -> PathBuf {
    git_repo(
        &dir.join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    )
}

/// A script that makes `f` return `value`, in three turns (Read, Edit, answer).
pub fn fix_script(value: u32) -> String {
    format!(
        "=== turn ===
Look first.
</think>

<tool_call>
<function=Read>
<parameter=file_path>
src/app.py
</parameter>
</function>
</tool_call>
=== turn ===
Change it.
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
return {value}
</parameter>
</function>
</tool_call>
=== turn ===
Done.
</think>

f now returns {value}.
"
    )
}

/// A script that changes nothing.
const IDLE: &str = "=== turn ===
Nothing to do.
</think>

It already works.
";

const CHECK: &str = "grep -q 'return 2' src/app.py";

fn lilypad(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    // The person's own AGENTS.md (in the config directory) stays out of the prompts.
    c.env("LILYPAD_CONFIG", dir.join("no-config.toml"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("LILYPAD_SESSION_DIR", dir.join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS");
    c
}

fn batch_cmd(dir: &Path, repo: &Path, tasks: &Path, out: &Path, engine: &str) -> Command {
    let mut c = lilypad(dir);
    c.args(["run", "--sandbox", "host", "--allow-host"])
        .arg("--tasks")
        .arg(tasks)
        .arg("--repo")
        .arg(repo)
        .arg("--engine")
        .arg(engine)
        .arg("--out")
        .arg(out);
    c
}

fn ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\nstdout: {}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every file under `dir`, by relative path, with its bytes.
/// Every file below `dir` (none when it is missing), by relative path.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out
}

fn tasks_file(dir: &Path, ids: &[&str]) -> PathBuf {
    let path = dir.join("tasks.jsonl");
    let text: String = ids
        .iter()
        .map(|id| format!("{{\"instance_id\": \"{id}\", \"task\": \"make f return 2\"}}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// C(n, k) by its definition.
fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[test]
fn attempts_differ_by_script_are_checked_and_a_second_run_skips_them() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let scripts = tmp.path().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    // Attempts 1 and 3 fix the function; attempt 2 does nothing.
    for (n, text) in [(1, fix_script(2)), (2, IDLE.into()), (3, fix_script(2))] {
        std::fs::write(scripts.join(format!("attempt-{n}.txt")), text).unwrap();
    }
    let engine = format!("script:{}/attempt-{{attempt}}.txt", scripts.display());
    let tasks = tasks_file(tmp.path(), &["a", "b"]);
    let out_dir = tmp.path().join("batch");
    let run = || {
        batch_cmd(tmp.path(), &r, &tasks, &out_dir, &engine)
            .args(["--attempts", "3", "--seed", "10", "--parallel", "2"])
            .args(["--check", CHECK])
            .output()
            .unwrap()
    };
    let first = run();
    ok(&first);
    let preds = json_lines(&out_dir.join("predictions.jsonl"));
    assert_eq!(preds.len(), 6);
    for p in &preds {
        let attempt = p["attempt"].as_u64().unwrap();
        let fixed = attempt != 2;
        assert_eq!(p["check_passed"], fixed, "{p}");
        assert_eq!(
            p["model_patch"].as_str().unwrap().contains("+    return 2"),
            fixed,
            "{p}"
        );
        assert_eq!(p["finish_reason"], "answered");
    }
    let keys: Vec<(String, u64)> = preds
        .iter()
        .map(|p| {
            (
                p["instance_id"].as_str().unwrap().to_string(),
                p["attempt"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        6,
        "one line per (instance_id, attempt): {keys:?}"
    );
    // Each attempt's folder: patch, trajectory, result with its derived seed and figures.
    for id in ["a", "b"] {
        for n in 1..=3u64 {
            let dir = out_dir.join("results").join(id).join(n.to_string());
            let result = read_json(&dir.join("result.json"));
            let seed = lilypad::launch::attempts::attempt_seed(10, n as u32);
            assert_eq!(result["seed"], seed);
            assert_eq!(result["check"]["passed"], n != 2);
            assert!(result["steps"].as_u64().unwrap() >= 1);
            assert!(result["generated_tokens"].as_u64().unwrap() > 0);
            let traj = read_json(&dir.join("trajectory.json"));
            let prov = &traj["provenance"];
            assert_eq!(prov["seed"], seed);
            assert_eq!(prov["attempt"], n);
            assert_eq!(prov["lilypad"], env!("CARGO_PKG_VERSION"));
            assert_eq!(prov["harness_sha256"].as_str().unwrap().len(), 64);
            assert_eq!(prov["model"]["kind"], "script");
            assert!(prov["model"]["file"]
                .as_str()
                .unwrap()
                .ends_with(&format!("attempt-{n}.txt")));
            assert!(prov["sampling"]["temperature"].is_number());
            assert!(prov["image"].is_string());
        }
    }
    // pass@k, computed here from the predictions: each task passed 2 of 3.
    let report = read_json(&out_dir.join("report.json"));
    for k in 1..=3u64 {
        let mut per_task = BTreeMap::new();
        for p in &preds {
            let e = per_task
                .entry(p["instance_id"].as_str().unwrap().to_string())
                .or_insert((0u64, 0u64));
            e.0 += 1;
            e.1 += u64::from(p["check_passed"] == true);
        }
        let want: f64 = per_task
            .values()
            .map(|&(n, c)| 1.0 - choose(n - c, k) / choose(n, k))
            .sum::<f64>()
            / per_task.len() as f64;
        let got = report["pass_at_k"][k.to_string()].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "pass@{k}: {got} vs {want}");
    }
    assert_eq!(report["totals"]["attempts"], 6);
    assert_eq!(report["totals"]["passed"], 4);
    assert_eq!(report["run"]["attempts"], 3);
    assert_eq!(report["run"]["base_seed"], 10);
    assert_eq!(report["run"]["check"], CHECK);
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("pass@1"), "{md}");
    // The session logs' headers carry the same provenance.
    let logs: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 6);
    for log in &logs {
        let (h, _) = lilypad::session::read_log(log).unwrap();
        let p = h.provenance.expect("a provenance in the header");
        assert!(p.seed.is_some() && p.attempt.is_some() && p.harness_sha256.is_some());
    }
    // The same command again: nothing runs, and every result file is as it was.
    let before = snapshot(&out_dir.join("results"));
    let second = run();
    ok(&second);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("0 of 6 attempts ran now"), "{stderr}");
    assert_eq!(snapshot(&out_dir.join("results")), before);
    assert_eq!(json_lines(&out_dir.join("predictions.jsonl")), preds);
    let logs_after = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(logs_after, 6, "no new sessions");
}

#[test]
fn a_batch_killed_half_way_finishes_when_run_again_continuing_the_attempt_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, fix_script(2)).unwrap();
    let engine = format!("script:{}", script.display());
    let ids = ["t1", "t2", "t3", "t4"];
    let tasks = tasks_file(tmp.path(), &ids);
    let out_dir = tmp.path().join("batch");
    let mut child = batch_cmd(tmp.path(), &r, &tasks, &out_dir, &engine)
        .env("LILYPAD_SCRIPT_DELAY_MS", "20")
        .args(["--check", CHECK])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let done = |out: &Path| {
        ids.iter()
            .filter(|id| out.join("results").join(id).join("1/result.json").exists())
            .count()
    };
    // The attempt in flight: its session log (named in its folder's session.json) has begun
    // its second turn and not finished.
    let in_flight = |out: &Path| -> Option<(String, PathBuf)> {
        ids.iter().find_map(|id| {
            let note = out.join("results").join(id).join("1/session.json");
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(note).ok()?).ok()?;
            let log = PathBuf::from(v["log"].as_str()?);
            let text = std::fs::read_to_string(&log).ok()?;
            (text.matches("\"event\":\"turn_started\"").count() >= 2
                && !text.contains("\"event\":\"task_finished\""))
            .then(|| (id.to_string(), log))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let (flying, flying_log) = loop {
        if done(&out_dir) > 0 {
            if let Some(f) = in_flight(&out_dir) {
                break f;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no attempt was ever in flight after one had finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SIGKILL: no chance to clean up or finish writing.
    child.kill().unwrap();
    child.wait().unwrap();
    let finished = done(&out_dir);
    assert!(
        finished < ids.len(),
        "the kill came after the batch had finished"
    );
    let before = snapshot(&out_dir.join("results"));
    let finished_files: BTreeMap<_, _> = before
        .iter()
        .filter(|(p, _)| {
            let id = p.components().next().unwrap().as_os_str().to_string_lossy();
            out_dir
                .join("results")
                .join(id.as_ref())
                .join("1/result.json")
                .exists()
        })
        .map(|(p, b)| (p.clone(), b.clone()))
        .collect();
    assert!(!finished_files.is_empty());
    let again = batch_cmd(tmp.path(), &r, &tasks, &out_dir, &engine)
        .args(["--check", CHECK])
        .output()
        .unwrap();
    ok(&again);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains(&format!("{} finished earlier", finished)),
        "{stderr}"
    );
    assert_eq!(done(&out_dir), ids.len());
    let after = snapshot(&out_dir.join("results"));
    for (p, bytes) in &finished_files {
        assert_eq!(after.get(p), Some(bytes), "{} changed", p.display());
    }
    let preds = json_lines(&out_dir.join("predictions.jsonl"));
    assert_eq!(preds.len(), ids.len());
    assert!(preds.iter().all(|p| p["check_passed"] == true), "{preds:?}");
    let report = read_json(&out_dir.join("report.json"));
    assert_eq!(report["pass_at_k"]["1"], 1.0);
    // The attempt in flight was continued from its session log, not started again: same
    // session, same log (now holding both runs), and one log per attempt in all.
    let result = read_json(&out_dir.join("results").join(&flying).join("1/result.json"));
    let stem = flying_log
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert_eq!(result["session_id"], stem.as_str());
    let (_, events) = lilypad::session::read_log(&flying_log).unwrap();
    let starts = events
        .iter()
        .filter(|(_, e)| matches!(e, lilypad::protocol::Event::SessionStarted { .. }))
        .count();
    assert_eq!(starts, 2, "the killed run and the continued one");
    let logs = std::fs::read_dir(tmp.path().join("sessions"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(logs, ids.len());
}

#[test]
fn a_single_task_takes_a_check_and_attempts() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let fix = tmp.path().join("fix.script");
    std::fs::write(&fix, fix_script(2)).unwrap();
    let idle = tmp.path().join("idle.script");
    std::fs::write(&idle, IDLE).unwrap();
    let single = |script: &Path| {
        lilypad(tmp.path())
            .args(["run", "--task", "make f return 2", "--sandbox", "host"])
            .arg("--allow-host")
            .arg("--repo")
            .arg(&r)
            .arg("--engine")
            .arg(format!("script:{}", script.display()))
            .args(["--check", CHECK])
            .arg("--out")
            .arg(tmp.path().join("one"))
            .output()
            .unwrap()
    };
    let passed = single(&fix);
    ok(&passed);
    assert!(String::from_utf8_lossy(&passed.stderr).contains("check passed (exit 0)"));
    let failed = single(&idle);
    assert_eq!(
        failed.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
    assert!(String::from_utf8_lossy(&failed.stderr).contains("check failed (exit 1)"));
    // `[sandbox] check` in the config file, and two attempts of the one task.
    std::fs::write(
        tmp.path().join("no-config.toml"),
        format!("[sandbox]\ncheck = \"{CHECK}\"\n"),
    )
    .unwrap();
    let out_dir = tmp.path().join("two");
    let two = lilypad(tmp.path())
        .args(["run", "--task", "make f return 2", "--sandbox", "host"])
        .args([
            "--allow-host",
            "--attempts",
            "2",
            "--parallel",
            "2",
            "--json",
        ])
        .arg("--repo")
        .arg(&r)
        .arg("--engine")
        .arg(format!("script:{}", fix.display()))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    ok(&two);
    let preds = json_lines(&out_dir.join("predictions.jsonl"));
    assert_eq!(preds.len(), 2);
    assert!(preds
        .iter()
        .all(|p| p["instance_id"] == "task" && p["check_passed"] == true));
    // Progress events as JSON lines on stdout.
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&two.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"batch_started"));
    assert_eq!(kinds.last(), Some(&"batch_finished"));
    assert_eq!(
        kinds.iter().filter(|k| **k == "attempt_finished").count(),
        2
    );
    assert!(kinds.contains(&"attempt_step"));
}

#[test]
fn a_repeated_instance_id_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, fix_script(2)).unwrap();
    let tasks = tasks_file(tmp.path(), &["a", "b", "a"]);
    let out = batch_cmd(
        tmp.path(),
        &r,
        &tasks,
        &tmp.path().join("batch"),
        &format!("script:{}", script.display()),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("\"a\" is repeated"),
        "{stderr}"
    );
    assert!(!tmp.path().join("batch").exists(), "nothing ran");
}

#[test]
fn a_recorded_patch_that_cannot_be_read_stops_the_batch_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, fix_script(2)).unwrap();
    let tasks = tasks_file(tmp.path(), &["a", "b"]);
    let out_dir = tmp.path().join("batch");
    let engine = format!("script:{}", script.display());
    let run = || {
        batch_cmd(tmp.path(), &r, &tasks, &out_dir, &engine)
            .output()
            .unwrap()
    };
    ok(&run());
    let predictions = out_dir.join("predictions.jsonl");
    let before = std::fs::read(&predictions).unwrap();
    // A finished attempt's patch goes missing: its prediction could not say what it changed.
    let patch = out_dir.join("results/a/1/patch.diff");
    std::fs::remove_file(&patch).unwrap();
    let again = run();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&patch.display().to_string()),
        "the error names the file: {stderr}"
    );
    assert_eq!(
        std::fs::read(&predictions).unwrap(),
        before,
        "no prediction with an empty model_patch was written"
    );
}

#[test]
fn a_preset_sets_the_run_and_flags_override_it() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, fix_script(2)).unwrap();
    let tasks = tasks_file(tmp.path(), &["a"]);
    let out_dir = tmp.path().join("batch");
    let out = batch_cmd(
        tmp.path(),
        &r,
        &tasks,
        &out_dir,
        &format!("script:{}", script.display()),
    )
    .args(["--preset", "patch-eval-verified", "--max-steps", "5"])
    .output()
    .unwrap();
    ok(&out);
    let run = &read_json(&out_dir.join("report.json"))["run"];
    assert_eq!(run["preset"], "patch-eval-verified");
    assert_eq!(run["steps"], 5, "the flag wins");
    assert_eq!(run["context"], 131_072);
    assert_eq!(run["max_turn_tokens"], 8192);
    assert_eq!(run["wall_time_secs"], 10_800);
    assert_eq!(run["attempts"], 3, "the preset's seeds");
    assert_eq!(run["sampling"]["temperature"], 0.6);
    assert_eq!(run["sampling"]["top_k"], 20);
    assert_eq!(json_lines(&out_dir.join("predictions.jsonl")).len(), 3);
    let traj = read_json(&out_dir.join("results/a/2/trajectory.json"));
    assert_eq!(traj["provenance"]["preset"], "patch-eval-verified");
    let limits = &traj["provenance"]["limits"];
    assert_eq!(
        (
            &limits["steps"],
            &limits["context"],
            &limits["max_turn_tokens"]
        ),
        (&5.into(), &131_072.into(), &8192.into()),
        "{limits}"
    );
    assert_eq!(
        (
            &limits["wall_time_secs"],
            &limits["max_attempts"],
            &limits["seeds"]
        ),
        (&10_800.into(), &2.into(), &3.into()),
        "{limits}"
    );
    assert_eq!(run["max_attempts"], 2);
    assert_eq!(
        traj["provenance"]["seed"],
        lilypad::launch::attempts::attempt_seed(0, 2),
        "attempt 2 of base seed 0"
    );
    let list = lilypad(tmp.path())
        .args(["run", "--preset", "list"])
        .output()
        .unwrap();
    ok(&list);
    assert!(String::from_utf8_lossy(&list.stdout).contains("swebench-pro:"));
}

#[test]
fn swebench_tasks_check_out_local_clones_at_their_base_commit() {
    let tmp = tempfile::tempdir().unwrap();
    // A clone laid out as owner__name, whose newest commit no longer returns 1.
    let clones = tmp.path().join("clones");
    let clone = git_repo(
        &clones.join("acme__calc"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let base = git(&clone, &["rev-parse", "HEAD"]);
    std::fs::write(clone.join("src/app.py"), "def f():\n    return 3\n").unwrap();
    git(&clone, &["commit", "-qam", "later"]);
    let tasks = tmp.path().join("swe.jsonl");
    std::fs::write(
        &tasks,
        format!(
            "{{\"instance_id\": \"acme__calc-1\", \"repo\": \"acme/calc\", \"base_commit\": \"{base}\", \"problem_statement\": \"make f return 2\", \"patch\": \"\", \"FAIL_TO_PASS\": \"[]\"}}\n"
        ),
    )
    .unwrap();
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, fix_script(2)).unwrap();
    let out_dir = tmp.path().join("batch");
    let out = lilypad(tmp.path())
        .args(["run", "--sandbox", "host", "--allow-host"])
        .arg("--tasks")
        .arg(&tasks)
        .arg("--repos-dir")
        .arg(&clones)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .args(["--check", CHECK])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    ok(&out);
    let preds = json_lines(&out_dir.join("predictions.jsonl"));
    assert_eq!(preds.len(), 1);
    // The edit of `return 1` applied: the workspace was the base commit, not the clone's head.
    assert_eq!(preds[0]["check_passed"], true, "{}", preds[0]);
    assert!(preds[0]["model_patch"]
        .as_str()
        .unwrap()
        .contains("-    return 1\n+    return 2"));
    // The clone itself is untouched.
    assert_eq!(
        std::fs::read_to_string(clone.join("src/app.py")).unwrap(),
        "def f():\n    return 3\n"
    );
    assert_eq!(git(&clone, &["status", "--porcelain"]), "");
}

#[test]
fn a_batch_on_a_terminal_shows_a_live_progress_view() {
    use super::e2e_demo::{have_tmux, Tmux};
    if !have_tmux() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("skipped: no tmux");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let script = tmp.path().join("fix.script");
    std::fs::write(&script, fix_script(2)).unwrap();
    let tasks = tasks_file(tmp.path(), &["p1", "p2", "p3"]);
    let out_dir = tmp.path().join("batch");
    let done = tmp.path().join("done");
    let term = Tmux::start(&format!(
        "LILYPAD_CONFIG='{cfg}' LILYPAD_SESSION_DIR='{sessions}' LILYPAD_SCRIPT_DELAY_MS=30 '{bin}' run --sandbox host --allow-host --tasks '{tasks}' --repo '{repo}' --engine 'script:{script}' --out '{out}' --parallel 2; echo $? > '{done}'; sleep 60",
        cfg = tmp.path().join("no-config.toml").display(),
        sessions = tmp.path().join("sessions").display(),
        bin = env!("CARGO_BIN_EXE_lilypad"),
        tasks = tasks.display(),
        repo = r.display(),
        script = script.display(),
        out = out_dir.display(),
        done = done.display(),
    ));
    // The view: attempts done of all, running and failed counts, the rate, and a line per
    // running attempt with its step.
    let screen = term.wait_for(&["attempts", "running 2", "tok/s", "#1 step"]);
    assert!(screen.contains("/3 attempts"), "{screen}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done.exists() {
        assert!(std::time::Instant::now() < deadline, "{}", term.screen());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&done).unwrap().trim(), "0");
    assert_eq!(json_lines(&out_dir.join("predictions.jsonl")).len(), 3);
    let screen = term.screen();
    assert!(
        screen.contains("3 of 3 attempts ran now"),
        "the summary after the view: {screen}"
    );
}
