//! What several integration-test binaries share: the git repository a test starts from. A binary
//! takes it in with `#[path = "../common/mod.rs"] mod common;` (`tests/common/` has no
//! `main.rs`, so cargo builds no binary of its own for it).
//!
//! Invariant: a fixture is the same on every machine. git runs with a fixed identity and with
//! neither the system's nor the user's config, so a signing key, a hook path or a default branch
//! set on the machine cannot change or break it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The branch of every fixture: not `main`, the branch of a sandbox's own checkout, so that a
/// test can tell the user's repository from the sandbox's copy.
pub const FIXTURE_BRANCH: &str = "trunk";

/// Run `git ARGS` in `dir` as the test identity, isolated from the machine's git config; its
/// standard output. Panics with git's standard error when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Write `files` (a path relative to `root`, its text) under `root`, folders made as needed, and
/// make `root` a git repository on [`FIXTURE_BRANCH`] with one commit, "init", of everything
/// then in it (files written before the call included). Returns `root`.
pub fn git_repo(root: &Path, files: &[(&str, &str)]) -> PathBuf {
    for (path, text) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    git(root, &["init", "-q", "-b", FIXTURE_BRANCH]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "init"]);
    root.to_path_buf()
}
