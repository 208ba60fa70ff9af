//! `lilypad sweep` on the real Docker engine: a container labelled as a dead Lilypad
//! process's sandbox on this host is removed, one of a live process is left alone.
//!
//! Without a Docker engine (and its CLI) the test skips loudly, unless
//! LILYPAD_REQUIRE_DOCKER=1 (CI), where it fails.

use std::process::Command;

fn docker(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A stopped container with a Lilypad sandbox's labels for process `pid`.
fn leftover(image: &str, pid: u32) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    docker(&[
        "create",
        "--label",
        "dev.lilypad.sandbox=1",
        "--label",
        &format!("dev.lilypad.host={host}"),
        "--label",
        &format!("dev.lilypad.pid={pid}"),
        image,
        "true",
    ])
    .expect("docker create")
}

#[test]
fn sweep_removes_the_containers_of_dead_processes_only() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let why = match rt.block_on(lilypad::sandbox::docker::connect()) {
        Err(e) => Some(e.to_string()),
        Ok(_) if docker(&["version"]).is_none() => Some("no docker CLI".into()),
        Ok(_) => None,
    };
    if let Some(why) = why {
        let required = std::env::var("LILYPAD_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "LILYPAD_REQUIRE_DOCKER=1 but: {why}");
        eprintln!("!!!!! SKIPPED: the sweep test: {why}");
        return;
    }
    let image =
        std::env::var("LILYPAD_TEST_IMAGE").unwrap_or_else(|_| "lilypad-sandbox:busybox".into());
    // A process that ran and is gone (reaped), and this test's own, alive.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let dead = leftover(&image, dead_pid);
    let alive = leftover(&image, std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lilypad"))
        .env("LILYPAD_CONFIG", tmp.path().join("no-config.toml"))
        .env("KUBECONFIG", tmp.path().join("no-kubeconfig"))
        .arg("sweep")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let exists = |id: &str| docker(&["inspect", "--format", "{{.Id}}", id]).is_some();
    let still_dead = exists(&dead);
    let still_alive = exists(&alive);
    let _ = docker(&["rm", "-f", &alive]);
    let _ = docker(&["rm", "-f", &dead]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        !still_dead,
        "the dead process's container is left: {stdout}"
    );
    assert!(
        still_alive,
        "a live process's container was removed: {stdout}"
    );
    assert!(stdout.contains("docker containers: removed"), "{stdout}");
    assert!(
        stdout.contains("kubernetes sessions: not swept"),
        "{stdout}"
    );
}
