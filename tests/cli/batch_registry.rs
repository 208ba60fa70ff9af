//! Images at cluster scale, through the real binary: a digest lock that misses a task stops
//! the batch before anything starts (no sandbox, no session, no result); `--image-lock` alone
//! reads the lock the preset names; `--pull-secret` is refused with Docker; a pinned image
//! under `--image-registry` is the reference the sandbox is asked to run; and a result records
//! its image's digest as the Docker engine tells it.
//!
//! The tests that start sandboxes skip loudly without a Docker engine, unless
//! LILYPAD_REQUIRE_DOCKER=1 (CI), where they fail.

use std::path::Path;
use std::process::{Command, Output};

use super::batch::fix_script;
use super::batch_image::docker_missing;
use crate::common::git_repo;

/// `lilypad run` over `tasks` with a scripted engine, in `tmp`, with `extra` flags.
fn run(tmp: &Path, tasks: &Path, extra: &[&str]) -> Output {
    let repo = tmp.join("repo");
    if !repo.exists() {
        git_repo(&repo, &[("src/app.py", "def f():\n    return 1\n")]);
    }
    let script = tmp.join("script.txt");
    std::fs::write(&script, fix_script(2)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.join("no-config.toml"))
        .env("LILYPAD_SESSION_DIR", tmp.join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--sandbox", "docker"])
        .arg("--tasks")
        .arg(tasks)
        .arg("--repo")
        .arg(&repo)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(tmp.join("batch"))
        .args(extra)
        .current_dir(tmp)
        .output()
        .unwrap()
}

/// A tasks file whose tasks name these images.
fn tasks(tmp: &Path, images: &[(&str, &str)]) -> std::path::PathBuf {
    let path = tmp.join("tasks.jsonl");
    let lines: String = images
        .iter()
        .map(|(id, image)| {
            format!(
                "{{\"instance_id\": \"{id}\", \"task\": \"change f\", \"image\": \"{image}\"}}\n"
            )
        })
        .collect();
    std::fs::write(&path, lines).unwrap();
    path
}

fn skip_without_docker(what: &str) -> bool {
    let Some(why) = docker_missing() else {
        return false;
    };
    let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
    eprintln!("!!!!! SKIPPED: {what}: {why}");
    true
}

/// The `sha256:` id of a local image.
fn image_id(image: &str) -> String {
    let o = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", image])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn result(tmp: &Path, id: &str) -> serde_json::Value {
    let p = tmp.join("batch/results").join(id).join("1/result.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn a_task_missing_from_the_digest_lock_stops_the_run_before_any_sandbox_starts() {
    let tmp = tempfile::tempdir().unwrap();
    // The first task's image is on the engine: without the lock's check it would run.
    let image =
        std::env::var("LILYPAD_TEST_IMAGE").unwrap_or_else(|_| "lilypad-sandbox:busybox".into());
    let tasks = tasks(
        tmp.path(),
        &[
            ("pinned", image.as_str()),
            ("unpinned", "swebench/sweb.eval.x86_64.b:latest"),
            ("also-unpinned", "swebench/sweb.eval.x86_64.c:latest"),
        ],
    );
    let hex = "ab".repeat(32);
    let lock = tmp.path().join("lock.json");
    std::fs::write(
        &lock,
        format!(r#"{{"{image}": "lilypad-sandbox@sha256:{hex}"}}"#),
    )
    .unwrap();
    let out = run(
        tmp.path(),
        &tasks,
        &["--image-lock", lock.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("has no image for 2 task(s)")
            && stderr.contains("unpinned (swebench/sweb.eval.x86_64.b:latest)")
            && stderr.contains("also-unpinned (swebench/sweb.eval.x86_64.c:latest)"),
        "{stderr}"
    );
    assert!(!stderr.contains("pinned (lilypad"), "{stderr}");
    // Nothing started: no session was logged, no attempt recorded, no results folder made.
    assert!(!tmp.path().join("sessions").exists(), "a session started");
    assert!(
        !tmp.path().join("batch").exists(),
        "the batch wrote results"
    );

    // A pin that is not a digest is refused the same way, before anything.
    std::fs::write(&lock, format!(r#"{{"{image}": "lilypad-sandbox:v2"}}"#)).unwrap();
    let out = run(
        tmp.path(),
        &tasks,
        &["--image-lock", lock.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is not `name@sha256:"), "{stderr}");
    assert!(!tmp.path().join("batch").exists());
}

#[test]
fn image_lock_without_a_file_reads_the_presets_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tasks(tmp.path(), &[("t", "swebench/sweb.eval.x86_64.t:latest")]);
    // No preset: no lock to take.
    let out = run(tmp.path(), &tasks, &["--image-lock"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("and no preset was given"), "{stderr}");
    let out = run(
        tmp.path(),
        &tasks,
        &["--preset", "swebench-pro", "--image-lock"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("preset swebench-pro names none"),
        "{stderr}"
    );
    // swebench-verified names image_locks/sweb-v-20260904.json, read from the current folder.
    let locks = tmp.path().join("image_locks");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::write(
        locks.join("sweb-v-20260904.json"),
        r#"{"other:1": "other@sha256:00"}"#,
    )
    .unwrap();
    let preset = ["--preset", "swebench-verified", "--image-lock"];
    let out = run(tmp.path(), &tasks, &preset);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("image_locks/sweb-v-20260904.json")
            && stderr.contains("pins other:1 to \"other@sha256:00\""),
        "{stderr}"
    );
    let hex = "0f".repeat(32);
    std::fs::write(
        locks.join("sweb-v-20260904.json"),
        format!(r#"{{"other:1": "other@sha256:{hex}"}}"#),
    )
    .unwrap();
    let out = run(tmp.path(), &tasks, &preset);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("t (swebench/sweb.eval.x86_64.t:latest)"),
        "{stderr}"
    );
    assert!(!tmp.path().join("batch").exists());
    // Without --image-lock the preset's lock is named, and not read.
    let out = run(
        tmp.path(),
        &tasks,
        &[
            "--preset",
            "swebench-verified",
            "--max-attempts",
            "1",
            "--attempts",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pass --image-lock [FILE] to pin them"),
        "{stderr}"
    );
}

#[test]
fn a_pull_secret_is_refused_with_docker_and_a_bad_registry_prefix_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tasks(tmp.path(), &[("t", "lilypad-sandbox:busybox")]);
    let out = run(tmp.path(), &tasks, &["--pull-secret", "regcred"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--pull-secret") && stderr.contains("docker sandbox has no pods"),
        "{stderr}"
    );
    let out = run(tmp.path(), &tasks, &["--image-registry", "a b"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a registry prefix"), "{stderr}");
    assert!(!tmp.path().join("sessions").exists());
    assert!(!tmp.path().join("batch").exists());
}

#[test]
fn results_record_the_image_digest_and_pinned_images_run_under_the_registry() {
    if skip_without_docker("the image provenance test") {
        return;
    }
    let image =
        std::env::var("LILYPAD_TEST_IMAGE").unwrap_or_else(|_| "lilypad-sandbox:busybox".into());
    let id = image_id(&image);

    // A task on a local image: its result and its trajectory's provenance name the image
    // and the digest Docker gives it (its id: a local image has no repository digest).
    let tmp = tempfile::tempdir().unwrap();
    let t = tasks(tmp.path(), &[("local", image.as_str())]);
    let out = run(tmp.path(), &t, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = result(tmp.path(), "local");
    assert_eq!(r["image"], image.as_str(), "{r}");
    assert_eq!(r["image_digest"], id.as_str(), "{r}");
    let traj: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("batch/results/local/1/trajectory.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(traj["provenance"]["image_digest"], id.as_str());

    // The same task pinned by a lock and run under a registry prefix: the sandbox is asked
    // for the prefixed, pinned reference (which this engine does not hold, so the attempt
    // ends in an error that names it), and the result records that reference.
    let tmp = tempfile::tempdir().unwrap();
    let t = tasks(tmp.path(), &[("pinned", image.as_str())]);
    let pinned = format!("lilypad-sandbox@{id}");
    let lock = tmp.path().join("lock.json");
    std::fs::write(&lock, format!(r#"{{"images": {{"{image}": "{pinned}"}}}}"#)).unwrap();
    let out = run(
        tmp.path(),
        &t,
        &[
            "--image-lock",
            lock.to_str().unwrap(),
            "--image-registry",
            "localhost:5999/mirror",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let r = result(tmp.path(), "pinned");
    let want = format!("localhost:5999/mirror/{pinned}");
    assert_eq!(r["image"], want.as_str(), "{r}");
    assert!(
        r["error"].as_str().unwrap_or_default().contains(&want),
        "{r}"
    );
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("batch/report.json")).unwrap(),
    )
    .unwrap();
    let header = report.to_string();
    assert!(
        header.contains("localhost:5999/mirror") && header.contains("lock.json"),
        "{header}"
    );
}
