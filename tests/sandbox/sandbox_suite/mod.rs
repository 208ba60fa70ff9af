//! Checks shared by the sandbox tests (`sandbox_host`, `sandbox_docker`, `sandbox_kube`):
//! the tool formats and path rules, and the attack cases of docs/testing.md, each asserted. Every
//! sandbox kind runs the same checks; [`Containment`] says which guarantees a kind makes.

pub mod attacks;
pub mod formats;
pub mod git;

use lilypad::protocol::ToolCall;
use lilypad::sandbox::Sandbox;
use lilypad::tools::{ToolLimits, ToolResult, Tools};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

/// Hold this (across the whole test) while running the attack cases. The host, Docker and
/// Kubernetes tests share one process and one machine: the host sandbox's checks look for
/// marker processes (`sleep 1001`...) among all of the machine's processes, where a container
/// running the same attack would show too, and the fork bombs and memory hogs of two engines at
/// once would starve each other's timeouts. An async lock: it is held across `.await`, and a
/// failed test does not poison it for the others.
pub async fn exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// bollard's own client, for the Docker tests that look at the engine behind the sandbox's back
/// (the library's `docker::connect` hands out no bollard type).
pub async fn bollard_client() -> bollard::Docker {
    bollard::Docker::connect_with_local_defaults()
        .unwrap()
        .negotiate_version()
        .await
        .unwrap()
}

/// An engine the tests need: present, or absent (skip locally, fail where required).
pub fn engine_missing(name: &str, require_var: &str, why: &str) {
    let set = |v: &str| std::env::var(v).is_ok_and(|v| v == "1");
    let required = set(require_var) || set("LILYPAD_TEST_STRICT");
    if required {
        panic!("{name} is required ({require_var}=1) but not available: {why}");
    }
    let bring_up = if name.contains("Kube") {
        "Bring it up with scripts/k8s-up.sh"
    } else if name.contains("bubblewrap") {
        "Install it with scripts/setup.sh"
    } else {
        "Bring it up with scripts/docker-up.sh"
    };
    eprintln!(
        "\n!!!!! SKIPPED: {name} is not available ({why}).\n!!!!! These tests did NOT run. \
         {bring_up}, or set {require_var}=1 to make this a failure.\n"
    );
}

/// The image with bash for the `*_with_bash` tests (LILYPAD_TEST_BASH_IMAGE); `None` skips
/// them loudly, or fails where engines are required.
pub fn bash_image() -> Option<String> {
    match std::env::var("LILYPAD_TEST_BASH_IMAGE") {
        Ok(i) if !i.is_empty() => Some(i),
        _ => {
            let strict = std::env::var("LILYPAD_TEST_STRICT").is_ok_and(|v| v == "1");
            assert!(
                !strict,
                "LILYPAD_TEST_BASH_IMAGE is not set (scripts/test.sh sets it)"
            );
            eprintln!("\n!!!!! SKIPPED: set LILYPAD_TEST_BASH_IMAGE (e.g. lilypad-sandbox:debian from `scripts/docker-up.sh --debian`) to run the bash-image tests\n");
            None
        }
    }
}

/// The repository every check starts from.
pub fn fixture() -> tempfile::TempDir {
    fill_fixture(
        tempfile::Builder::new()
            .prefix("lilypad-fixture-")
            .tempdir()
            .unwrap(),
    )
}

/// [`fixture`] outside the temporary directory (which the contained host sandbox replaces, so
/// that what it must hide there would be out of sight anyway).
pub fn fixture_outside_tmp() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    fs::create_dir_all(base).unwrap();
    fill_fixture(
        tempfile::Builder::new()
            .prefix("lilypad-fixture-")
            .tempdir_in(base)
            .unwrap(),
    )
}

fn fill_fixture(d: tempfile::TempDir) -> tempfile::TempDir {
    let r = d.path();
    let w = |p: &str, s: &[u8]| {
        let f = r.join(p);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(f, s).unwrap();
    };
    w("src/app.py", b"def f():\n    return 1\n");
    w("README.md", b"# demo\n");
    w(".gitignore", b"build/\n*.log\n");
    w("build/out.o", b"obj");
    w("debug.log", b"log");
    w("crlf.txt", b"a\r\nb\r\n");
    w("bin.dat", &[0x89, b'P', 0, 1, 0xff]);
    w("run.sh", b"#!/bin/sh\necho run\n");
    fs::set_permissions(r.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    w("dup.txt", b"x x x\n");
    w(".github/ci.yml", b"on: push\n");
    std::os::unix::fs::symlink("/etc", r.join("link_out")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", r.join("link_passwd")).unwrap();
    std::os::unix::fs::symlink("src", r.join("link_in")).unwrap();
    d
}

/// Tools over a sandbox, with a call helper.
pub struct Harness {
    pub tools: Tools,
    n: std::sync::atomic::AtomicU32,
}

impl Harness {
    pub fn new(sb: Arc<dyn Sandbox>) -> Self {
        // Warnings (e.g. a sandbox recycled after a timeout) show with --nocapture.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("lilypad=info"))
            .with_test_writer()
            .try_init();
        Self {
            tools: Tools::new(sb, ToolLimits::default()),
            n: Default::default(),
        }
    }

    pub fn sb(&self) -> &Arc<dyn Sandbox> {
        self.tools.sandbox()
    }

    pub fn call(&self, name: &str, args: Value) -> ToolCall {
        let n = self.n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ToolCall {
            id: format!("call_{n}"),
            name: name.into(),
            arguments: args.as_object().cloned().unwrap_or_default(),
        }
    }

    pub async fn run(&self, name: &str, args: Value) -> ToolResult {
        self.tools.run(&self.call(name, args)).await
    }

    /// The result text of a call.
    pub async fn text(&self, name: &str, args: Value) -> String {
        self.run(name, args).await.content
    }

    /// Run a shell command (long default timeout), returning the Bash result text.
    pub async fn sh(&self, command: &str) -> String {
        self.text("Bash", json!({"command": command, "timeout": 60}))
            .await
    }

    /// Run a shell command, returning its stdout (asserting exit 0).
    pub async fn out(&self, command: &str) -> String {
        let r = self.sh(command).await;
        let rest = r
            .strip_prefix("Exit code: 0\nSTDOUT:\n")
            .unwrap_or_else(|| panic!("`{command}` failed: {r}"));
        rest.split("\nSTDERR:\n").next().unwrap().to_string()
    }
}

/// The expected Bash result for a finished command.
pub fn bash_result(code: i64, out: &str, err: &str) -> String {
    format!("Exit code: {code}\nSTDOUT:\n{out}\nSTDERR:\n{err}")
}

/// True when `path` exists on the host (for "nothing written outside" checks).
pub fn host_exists(path: &str) -> bool {
    Path::new(path).exists()
}
