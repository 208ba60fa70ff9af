//! The repository a task's attempt starts from ([`checkout_at`]): a clone's `base_commit` in
//! a temporary folder, made so that nothing in it leads past the base. A fresh repository
//! fetches that one commit alone (`git fetch --depth=1`, its tree's objects copied, nothing
//! borrowed from the clone, no `FETCH_HEAD` naming the clone) and checks it out detached.
//! So it holds no remote and no remote-tracking ref, no branch, no tag, no other
//! ref, no reflog (`core.logAllRefUpdates` off) and no object of the clone's other commits:
//! `git log --all` shows the base commit only, and a later commit (a mined task's fix, the
//! unbroken code a mutant was made from) is not in its object store.
//!
//! The sandbox copies this checkout's files, never its `.git`, and gives its workspace a git
//! directory of its own (`crate::sandbox::workspace`); this module makes sure the checkout on
//! the host leaks nothing either. What it cannot hide is the clone itself: the host sandbox
//! reads the host's files (all of them uncontained, the host read-only under bubblewrap, which
//! hides only secrets and the checkout's own git directory), so an agent there can read the
//! clone where it lies; Docker and Kubernetes sandboxes see only the workspace.
//!
//! Owns: those git commands. Does not own: finding the clone (`super::sources`).

use super::sources::{SourceError, TaskRepo};
use std::path::Path;
use std::process::Command;

/// A checkout of `clone` at `commit` in a temporary folder, removed with the returned
/// repository (see the module docs).
pub fn checkout_at(id: &str, clone: &Path, commit: &str) -> Result<TaskRepo, SourceError> {
    let fail = |why: String| SourceError::Checkout {
        id: id.to_string(),
        commit: commit.to_string(),
        clone: clone.to_path_buf(),
        why,
    };
    // git runs in the new repository: a relative clone is made absolute first (a path that
    // cannot be is left as it is, for git to name in its error).
    let clone = std::path::absolute(clone).unwrap_or_else(|_| clone.to_path_buf());
    let tmp = tempfile::Builder::new()
        .prefix("lilypad-task-")
        .tempdir()
        .map_err(|e| fail(e.to_string()))?;
    let target = tmp.path().join("repo");
    std::fs::create_dir(&target)
        .map_err(|e| fail(format!("creating {}: {e}", target.display())))?;
    let git = |dir: &Path, args: &[&str]| -> Result<String, SourceError> {
        let out = Command::new("git")
            .args(["-c", "advice.detachedHead=false"])
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| fail(format!("running git: {e}")))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(fail(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ))
        }
    };
    // A commit is fetched by its full sha: an abbreviated one (or a ref's name) is resolved
    // in the clone first.
    let spec = format!("{commit}^{{commit}}");
    let sha = git(&clone, &["rev-parse", "--verify", "--quiet", &spec])
        .map_err(|_| fail("the clone has no such commit".into()))?;
    let git = |args: &[&str]| git(&target, args);
    // No template: no sample hooks, nothing but what git needs.
    git(&["init", "-q", "--template="])?;
    git(&["config", "core.logAllRefUpdates", "false"])?;
    // Protocol 2 lets a commit be asked for by its sha, whether or not a ref names it.
    let clone_s = clone.to_string_lossy();
    git(&[
        "-c",
        "protocol.version=2",
        "fetch",
        "-q",
        "--no-tags",
        "--no-write-fetch-head",
        "--depth=1",
        &clone_s,
        &sha,
    ])?;
    git(&["checkout", "-q", "--detach", &sha])?;
    Ok(TaskRepo::in_temp(target, tmp))
}
