//! The host sandbox: the model's commands run on this machine, in a copy of the repository.
//! Only chosen on explicit request; the caller shows [`super::host_notice`].
//!
//! Contained (the default where bubblewrap works, see [`bwrap`]): each command runs under
//! `bwrap` with the host read-only, the workspace writable, no network, its own PID namespace
//! and the user's secrets hidden. Uncontained (no working `bwrap`, or `--uncontained`): commands
//! run with the user's permissions and network, as before; only the files are a copy.
//!
//! Either way it contains the environment (contained: the user's minus secrets; uncontained: a
//! fresh, minimal one with a throwaway `HOME`) and time (a timeout kills the command's process
//! group, then any process still carrying this command's exec marker, i.e. children that
//! escaped with `setsid`; contained, the PID namespace ends with the command anyway).
//! `close` likewise stops the background processes of the session (found by a session marker
//! in their environment).
//!
//! Owns: running commands and the [`Sandbox`] impl on the host. Does not own: the file helpers
//! ([`files`]), the jail's mounts and environment ([`bwrap`]), the workspace (`super::workspace`).

pub mod bwrap;
mod files;

pub use bwrap::{containment, Containment, HostSettings};
pub(crate) use files::{apply_restore, list_local, resolve_local, write_atomic};

use super::output::{pump, Collector};
use super::workspace::{Files, RestorePlan, Workspace};
use super::{
    About, ExecExit, ExecOutput, ExecRequest, Resolved, Sandbox, SandboxError, SandboxKind,
    StreamKind, MAX_FILE_BYTES,
};
use async_trait::async_trait;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// See the module docs.
#[derive(Debug)]
pub struct HostSandbox {
    ws: Workspace,
    root: String,
    /// Uncontained: the commands' `HOME`. Contained: the session's `/tmp` (and `HOME`).
    scratch: tempfile::TempDir,
    session: String,
    jail: Option<bwrap::Jail>,
}

impl HostSandbox {
    pub fn new(ws: Workspace, settings: &HostSettings) -> Result<Self, SandboxError> {
        // The temporary directory may sit behind a symlink (/tmp on some systems): the root
        // must be canonical for the tools' containment check.
        let root = fs::canonicalize(ws.work_dir()).unwrap_or_else(|_| ws.work_dir().to_path_buf());
        let scratch = tempfile::Builder::new()
            .prefix("lilypad-home-")
            .tempdir()
            .map_err(|e| SandboxError::io("creating", "a temporary HOME", e))?;
        let jail = match containment(settings) {
            Containment::Bwrap { program, .. } => {
                let home = std::env::var_os("HOME").map(PathBuf::from);
                Some(bwrap::Jail::new(
                    program,
                    &root,
                    scratch.path(),
                    home.as_deref(),
                    ws.origin(),
                ))
            }
            Containment::Uncontained { .. } => None,
        };
        Ok(Self {
            root: root.to_string_lossy().into_owned(),
            ws,
            scratch,
            session: super::session_id(),
            jail,
        })
    }

    /// True when commands run under bubblewrap.
    pub fn contained(&self) -> bool {
        self.jail.is_some()
    }

    /// The paths hidden inside the sandbox (none when uncontained).
    pub fn hidden(&self) -> Vec<PathBuf> {
        self.jail
            .iter()
            .flat_map(|j| j.hidden().map(Path::to_path_buf))
            .collect()
    }

    /// The command for `sh flag command` in `cwd`, contained or not.
    fn command(
        &self,
        sh: &str,
        flag: &str,
        req: &ExecRequest,
        id: &str,
    ) -> tokio::process::Command {
        let markers = [
            (MARKER, OsStr::new(id)),
            (SESSION_MARKER, OsStr::new(&self.session)),
        ];
        if let Some(jail) = &self.jail {
            let argv = [OsStr::new(sh), OsStr::new(flag), OsStr::new(&req.command)];
            return jail.command(&argv, &req.cwd, &markers);
        }
        let mut cmd = tokio::process::Command::new(sh);
        cmd.arg(flag)
            .arg(&req.command)
            .current_dir(&req.cwd)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.scratch.path())
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb");
        for (k, v) in markers {
            cmd.env(k, v);
        }
        cmd
    }
}

/// Monotonic exec ids (the marker children inherit).
fn next_exec_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

const MARKER: &str = "LILYPAD_EXEC_ID";
/// Carried by every process of the session, so that `close` can stop background ones.
const SESSION_MARKER: &str = "LILYPAD_SESSION";

#[async_trait]
impl Sandbox for HostSandbox {
    fn about(&self) -> About {
        let how = if self.contained() {
            "contained with bubblewrap: host read-only, network off, secrets hidden"
        } else {
            "uncontained: your permissions and network"
        };
        About {
            kind: SandboxKind::Host,
            description: format!(
                "host sandbox ({how}): a copy of {} at {}",
                self.ws.origin().display(),
                self.root
            ),
            image_digest: None,
        }
    }
    fn root(&self) -> &str {
        &self.root
    }

    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, SandboxError> {
        let start = Instant::now();
        let deadline = start + req.timeout;
        let id = next_exec_id();
        let (sh, flag) = if Path::new("/bin/bash").exists() {
            ("/bin/bash", "-lc")
        } else {
            ("/bin/sh", "-c")
        };
        let mut cmd = self.command(sh, flag, &req, &id);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| SandboxError::io("starting", format!("{sh} in {}", req.cwd), e))?;
        let pgid = child.id();
        let mut out =
            Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stdout);
        let mut err =
            Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stderr);
        let mut so = child.stdout.take();
        let mut se = child.stderr.take();
        let finished = pump(&mut so, &mut se, &mut out, &mut err, deadline).await;
        let status = if finished {
            tokio::time::timeout_at(deadline.into(), child.wait())
                .await
                .ok()
        } else {
            None
        };
        let exit = match status {
            Some(Ok(st)) => ExecExit::Exited(exit_code(st)),
            Some(Err(e)) => return Err(SandboxError::io("waiting for", sh, e)),
            None => {
                if let Some(pg) = pgid {
                    kill_group(pg);
                }
                kill_marked(MARKER, &id);
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                ExecExit::TimedOut
            }
        };
        Ok(ExecOutput {
            exit,
            stdout: out.finish(),
            stderr: err.finish(),
            elapsed: start.elapsed(),
        })
    }

    async fn resolve(&self, path: &str) -> Result<Resolved, SandboxError> {
        resolve_local(Path::new(path))
    }

    async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let meta = fs::metadata(path).map_err(|e| SandboxError::io("reading", path, e))?;
        if meta.is_dir() {
            return Err(SandboxError::IsADirectory { path: path.into() });
        }
        if meta.len() > MAX_FILE_BYTES as u64 {
            return Err(SandboxError::TooLarge {
                path: path.into(),
                size: meta.len() as usize,
                limit: MAX_FILE_BYTES,
            });
        }
        fs::read(path).map_err(|e| SandboxError::io("reading", path, e))
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        write_atomic(Path::new(path), data)
    }

    async fn list_files(&self, dir: &str) -> Result<Vec<String>, SandboxError> {
        // A large tree takes a while to walk: keep it off the async threads.
        let (root, dir) = (PathBuf::from(&self.root), PathBuf::from(dir));
        tokio::task::spawn_blocking(move || list_local(&root, &dir))
            .await
            .map_err(|e| {
                SandboxError::io(
                    "listing files in",
                    self.root.clone(),
                    std::io::Error::other(e),
                )
            })?
    }

    fn workspace(&self) -> &Workspace {
        &self.ws
    }

    async fn current_files(&self) -> Result<Files, SandboxError> {
        Ok(Files::Shared(self.ws.work_dir().to_path_buf()))
    }

    async fn apply_restore(&self, plan: &RestorePlan) -> Result<(), SandboxError> {
        apply_restore(Path::new(&self.root), plan)
    }

    async fn close(&self) -> Result<(), SandboxError> {
        // Background processes the model started (servers, `nohup`) end with the session.
        kill_marked(SESSION_MARKER, &self.session);
        Ok(())
    }
}

fn exit_code(st: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c as i64,
        (None, Some(sig)) => 128 + sig as i64,
        (None, None) => -1,
    }
}

fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// Kill every process of ours whose environment carries `var=id` (for an exec's marker:
/// escapees that left the process group). Repeated because a forking escapee may add processes meanwhile.
fn kill_marked(var: &str, id: &str) {
    let needle = format!("{var}={id}\0");
    for _ in 0..3 {
        let mut found = Vec::new();
        let Ok(dir) = fs::read_dir("/proc") else {
            return;
        };
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(env) = fs::read(e.path().join("environ")) {
                if env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(pid.to_string());
                }
            }
        }
        if found.is_empty() {
            return;
        }
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(&found)
            .stderr(Stdio::null())
            .status();
    }
}
