//! Running git on the host for the workspace, in a neutral environment: no system or global
//! config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`, a `HOME` with nothing in it),
//! none of the caller's `GIT_*` variables, a fixed author, committer and date, no hooks, no
//! signing, no pager, and the file-mode, symlink and line-ending settings the patch relies on.
//!
//! Owns: the [`Git`] runner and the identity and date every Lilypad commit carries.
//!
//! Does not own: which git directory is trusted (the workspace decides; it never points this at
//! the in-sandbox `.git`, which the model controls).

use crate::sandbox::{PatchError, SandboxError};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Who made the commits Lilypad writes (baseline, turn records, and the in-sandbox identity).
pub const AUTHOR_NAME: &str = "Lilypad";
pub const AUTHOR_EMAIL: &str = "lilypad@localhost";
/// The date of every Lilypad commit (2000-01-01 UTC), so that a baseline of the same files is
/// the same commit.
const DATE: &str = "946684800 +0000";
/// The branch the in-sandbox repository starts on.
pub const BRANCH: &str = "main";

/// One git invocation's context: the git directory, an optional work tree and index file.
#[derive(Debug, Clone, Copy)]
pub struct Git<'a> {
    pub git_dir: &'a Path,
    pub work_tree: Option<&'a Path>,
    pub index: Option<&'a Path>,
}

impl<'a> Git<'a> {
    pub fn new(git_dir: &'a Path) -> Self {
        Self {
            git_dir,
            work_tree: None,
            index: None,
        }
    }

    pub fn tree(self, work_tree: &'a Path) -> Self {
        Self {
            work_tree: Some(work_tree),
            ..self
        }
    }

    pub fn index(self, index: &'a Path) -> Self {
        Self {
            index: Some(index),
            ..self
        }
    }

    /// Run `git ARGS`; its stdout, or the error with its stderr.
    pub fn run(&self, args: &[&str]) -> Result<Vec<u8>, SandboxError> {
        self.run_with(args, None)
    }

    /// Run `git ARGS` with `stdin` fed to it.
    pub fn run_with(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, SandboxError> {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir").arg(self.git_dir);
        if let Some(t) = self.work_tree {
            cmd.arg("--work-tree").arg(t).current_dir(t);
        } else {
            cmd.current_dir(self.git_dir);
        }
        for (k, v) in [
            ("core.autocrlf", "false"),
            ("core.fileMode", "true"),
            ("core.symlinks", "true"),
            ("core.quotePath", "false"),
            ("core.hooksPath", "/dev/null"),
            ("core.fsmonitor", "false"),
            ("commit.gpgSign", "false"),
            ("tar.umask", "022"),
            ("gc.auto", "0"),
        ] {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd.args(args).env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            // An empty, existing directory: nothing of the user's home is read.
            .env("HOME", self.git_dir)
            .env("LANG", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", AUTHOR_NAME)
            .env("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL)
            .env("GIT_AUTHOR_DATE", DATE)
            .env("GIT_COMMITTER_NAME", AUTHOR_NAME)
            .env("GIT_COMMITTER_EMAIL", AUTHOR_EMAIL)
            .env("GIT_COMMITTER_DATE", DATE);
        if let Some(i) = self.index {
            cmd.env("GIT_INDEX_FILE", i);
        }
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| SandboxError::Patch(PatchError::GitSpawn(e)))?;
        let pipe = child.stdin.take();
        // Fed from a second thread while this one drains stdout, so neither pipe can fill up
        // and stall the other. A git that exits early closes its stdin: its exit status then
        // says what went wrong.
        let out = std::thread::scope(|s| {
            if let (Some(data), Some(mut pipe)) = (stdin, pipe) {
                s.spawn(move || {
                    let _ = pipe.write_all(data);
                });
            }
            child.wait_with_output()
        })
        .map_err(|e| SandboxError::Patch(PatchError::GitSpawn(e)))?;
        if !out.status.success() {
            return Err(SandboxError::Patch(PatchError::Git {
                args: args.join(" "),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            }));
        }
        Ok(out.stdout)
    }

    /// Run `git ARGS` and return its stdout as one trimmed line (an object id, say).
    pub fn line(&self, args: &[&str]) -> Result<String, SandboxError> {
        Ok(String::from_utf8_lossy(&self.run(args)?).trim().to_string())
    }
}
