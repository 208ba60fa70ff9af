//! `lilypad run` on a Docker image the engine lacks, through the real binary with the scripted
//! engine: the start-up lines on stderr say that the image is pulled and how the pull ended;
//! with no registry to pull from, the run fails with the pull's reason and the hint. The image
//! pulled for real is the busybox test image pushed, under a name of its own, to the registry
//! of `scripts/registry-up.sh` (LILYPAD_TEST_REGISTRY); its layer is on the engine already, so
//! the pull fetches the manifest and says that every layer was there.

use super::batch::fix_script;
use super::batch_image::docker_missing;
use crate::common::git_repo;
use std::path::Path;
use std::process::{Command, Output};

fn run(tmp: &Path, image: &str) -> Output {
    let repo = git_repo(
        &tmp.join("repo"),
        &[("src/app.py", "def f():\n    return 1\n")],
    );
    let script = tmp.join("script.txt");
    std::fs::write(&script, fix_script(2)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.join("no-config.toml"))
        .env("XDG_CONFIG_HOME", tmp.join("config"))
        .env("LILYPAD_SESSION_DIR", tmp.join("sessions"))
        .env_remove("LILYPAD_MODEL")
        .env_remove("LILYPAD_SCRIPT_DELAY_MS")
        .args(["run", "--task", "make f return 2", "--sandbox", "docker"])
        .args(["--image", image])
        .arg("--repo")
        .arg(&repo)
        .arg("--engine")
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(tmp.join("out"))
        .current_dir(tmp)
        .output()
        .unwrap()
}

fn docker(args: &[&str]) {
    let o = Command::new("docker").args(args).output().unwrap();
    assert!(
        o.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_run_pulls_a_missing_image_and_says_so_or_says_why_not() {
    if let Some(why) = docker_missing() {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: pulling a missing image: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let nowhere = "127.0.0.1:1/lilypad-nothing:1";
    let out = run(tmp.path(), nowhere);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "sandbox: {nowhere} is not on the Docker engine: pulling it"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("pulling it failed") && stderr.contains("connection refused"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "hint: pull or build it first (`docker pull {nowhere}`)"
        )),
        "{stderr}"
    );

    let Ok(registry) = std::env::var("LILYPAD_TEST_REGISTRY") else {
        let strict = std::env::var("LILYPAD_TEST_STRICT").is_ok_and(|v| v == "1");
        assert!(
            !strict,
            "LILYPAD_TEST_REGISTRY is not set (scripts/test.sh sets it)"
        );
        eprintln!("!!!!! SKIPPED: the pull from a registry: set LILYPAD_TEST_REGISTRY (scripts/registry-up.sh)");
        return;
    };
    let base =
        std::env::var("LILYPAD_TEST_IMAGE").unwrap_or_else(|_| "lilypad-sandbox:busybox".into());
    let image = format!("{registry}/lilypad-run-pull:{}", std::process::id());
    docker(&["tag", &base, &image]);
    docker(&["push", &image]);
    docker(&["rmi", &image]);
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &image);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = Command::new("docker").args(["rmi", &image]).output();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "sandbox: {image} is not on the Docker engine: pulling it"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "sandbox: pulled {image}: every layer was on the engine already"
        )),
        "{stderr}"
    );
}
