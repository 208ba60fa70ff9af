//! Running git for the miner: one command in one repository, its output as text, and a failure
//! as a typed error with git's own words ([`GitError`]). Pathspecs are literal
//! (`--literal-pathspecs`), so a file name is never read as a pattern.
//!
//! Owns: spawning git. Does not own: what the commands mean (`super::history`,
//! `super::validate`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use thiserror::Error;

/// A git command that could not run or did not succeed.
#[derive(Debug, Error)]
pub enum GitError {
    #[error("running git (is it installed?): {0}")]
    Spawn(#[source] std::io::Error),
    #[error("git {args} in {dir}: {stderr}")]
    Failed {
        args: String,
        dir: String,
        stderr: String,
    },
}

/// Run `git ARGS` in `dir`, giving it `stdin`; its standard output.
pub fn run(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
    run_env(dir, args, stdin, &[])
}

/// [`run`] with the environment variables `env` set for git (a scratch `GIT_INDEX_FILE`, a
/// commit's dates).
pub fn run_env(
    dir: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    env: &[(&str, &str)],
) -> Result<Vec<u8>, GitError> {
    let mut cmd = Command::new("git");
    cmd.args(["--literal-pathspecs", "-c", "core.quotepath=false"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(GitError::Spawn)?;
    if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error (git gone early) shows in git's own exit status below.
        let _ = pipe.write_all(data);
    }
    let out = child.wait_with_output().map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: args.join(" "),
            dir: dir.display().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// [`run`] without input, its output as (lossy) UTF-8 text.
pub fn text(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    run(dir, args, None).map(|o| String::from_utf8_lossy(&o).into_owned())
}
