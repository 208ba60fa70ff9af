//! Applying a session patch to the user's repository: the one place Lilypad writes to it, only
//! when the person says so (the interface's apply, `lilypad tool --apply`). `git apply` runs
//! twice: `--check` first, so a patch that does not apply whole changes nothing, then for
//! real. It works from a subdirectory of a work tree (the patch's paths are the repository
//! root's, given as `--directory`) and in a folder that is no git repository at all.
//!
//! Does not own: making the patch ([`super::Checkout::export_patch`]) or deciding to apply it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use thiserror::Error;

/// Why a patch was not applied.
#[derive(Debug, Error)]
pub enum ApplyError {
    #[error("{doing}: {source}")]
    Io {
        doing: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// git refused the patch; with `check`, nothing was changed.
    #[error("git apply{} failed: {stderr}", if *.check { " --check" } else { "" })]
    GitApply { check: bool, stderr: String },
}

/// `git apply` the patch in `repo`, checked first (see the module docs).
pub fn apply_to_repository(repo: &Path, patch: &[u8]) -> Result<(), ApplyError> {
    let prefix = Command::new("git")
        .args(["rev-parse", "--show-prefix"])
        .current_dir(repo)
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let run = |check: bool| -> Result<(), ApplyError> {
        let io = |doing| move |source| ApplyError::Io { doing, source };
        let mut cmd = Command::new("git");
        cmd.arg("apply").arg("--whitespace=nowarn");
        if !prefix.is_empty() {
            cmd.arg(format!("--directory={}", prefix.trim_end_matches('/')));
        }
        if check {
            cmd.arg("--check");
        }
        let mut child = cmd
            .arg("-")
            .current_dir(repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("running git"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(patch)
                .map_err(io("writing the patch to git"))?;
        }
        let out = child.wait_with_output().map_err(io("running git"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(ApplyError::GitApply {
                check,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    };
    run(true)?;
    run(false)
}
