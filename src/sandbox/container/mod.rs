//! The container sandboxes: one hardened container per session on a container runtime, Docker
//! ([`docker`], bollard) or Kubernetes ([`kube`], kube-rs). Both are the one
//! [`ContainerSandbox`]; a [`ContainerRuntime`] supplies what differs between them.
//!
//! Owns: the [`Sandbox`] impl of every container sandbox (commands and file operations over
//! the runtime's exec, see `ops`), the shell each image runs commands with (asked once per
//! image and process), the session's exec counter (each command's kill marker is
//! `{session}-{n}`), the closed flag, and clean-up: [`Sandbox::close`] removes the container,
//! and a sandbox dropped unclosed removes it from a fresh tokio runtime.
//!
//! Does not own: how a container is created, reached, filled and removed (the runtimes), the
//! workspace, the patch and the turn records (`crate::sandbox::workspace`: the runtime hands
//! it the container's current files, and the restore plan it makes is applied here by exec).
//!
//! Invariants: the workspace is at the runtime's workdir in every container ([`WORKSPACE`],
//! or the image's own repository directory such as `/testbed`), which is both the root and
//! the working directory; a started sandbox has a working shell and the workspace copy in
//! place; the container is removed at most once by `close`, and by `Drop` only when `close`
//! never ran.

pub mod docker;
pub mod kube;
mod listing;
mod ops;
mod runtime;
mod scripts;

pub use runtime::{ContainerRuntime, Files, RawExit, WORKSPACE};

use super::workspace::{RestorePlan, Workspace};
use super::{About, ExecOutput, ExecRequest, Resolved, Sandbox, SandboxError};
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A sandbox in one container of runtime `R` (see the module docs).
pub struct ContainerSandbox<R: ContainerRuntime> {
    ws: Workspace,
    runtime: R,
    /// `bash -lc` or `sh -c`, chosen once at start.
    shell: Vec<String>,
    session: String,
    closed: AtomicBool,
    execs: AtomicU64,
}

impl<R: ContainerRuntime + std::fmt::Debug> std::fmt::Debug for ContainerSandbox<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerSandbox")
            .field("runtime", &self.runtime)
            .field("session", &self.session)
            .finish()
    }
}

impl<R: ContainerRuntime> ContainerSandbox<R> {
    /// Start a container for this workspace: create it, check that exec works and pick the
    /// shell, copy the workspace in. Whatever was created is removed when a step fails.
    pub async fn start(ws: Workspace, settings: &R::Settings) -> Result<Self, SandboxError> {
        let session = super::session_id();
        let runtime = R::create(&ws, settings, &session).await?;
        Self::adopt(ws, runtime, session).await
    }

    /// [`Self::start`] on a container created earlier (for `session`), e.g. a pod created
    /// ahead of need: check exec, pick the shell, copy the workspace in; on failure the
    /// container is removed.
    pub async fn adopt(ws: Workspace, runtime: R, session: String) -> Result<Self, SandboxError> {
        let shell = match Self::prepare(&runtime, &ws).await {
            Ok(shell) => shell,
            Err(e) => {
                // The start-up error is the one to report; a failed removal is swept later.
                let _ = runtime.remove().await;
                return Err(e);
            }
        };
        Ok(Self {
            ws,
            runtime,
            shell,
            session,
            closed: AtomicBool::new(false),
            execs: AtomicU64::new(0),
        })
    }

    async fn prepare(runtime: &R, ws: &Workspace) -> Result<Vec<String>, SandboxError> {
        let digest = runtime.image_digest();
        let shell = match digest.and_then(known_shell) {
            Some(shell) => shell,
            None => {
                let shell = ops::detect_shell(runtime).await?;
                if let Some(d) = digest {
                    remember_shell(d, &shell);
                }
                shell
            }
        };
        runtime.copy_in(ws).await?;
        Ok(shell)
    }

    /// The runtime's side of this sandbox (container id, pod name...).
    pub fn runtime(&self) -> &R {
        &self.runtime
    }

    /// Stop every process in the sandbox, keeping the workspace (the last resort of a
    /// timeout, also useful to stop left-over servers): Docker restarts the container,
    /// Kubernetes kills everything but the pod's PID 1.
    pub async fn kill_all(&self) -> Result<(), SandboxError> {
        self.runtime.recycle().await
    }

    /// The shell commands run with (`/bin/bash -lc`, or `sh -c` for images without bash).
    pub fn shell(&self) -> String {
        self.shell.join(" ")
    }
}

#[async_trait]
impl<R: ContainerRuntime> Sandbox for ContainerSandbox<R> {
    fn about(&self) -> About {
        About {
            kind: R::KIND,
            description: self.runtime.describe(&self.ws),
            image_digest: self.runtime.image_digest().map(str::to_string),
        }
    }
    fn root(&self) -> &str {
        self.runtime.workdir()
    }
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, SandboxError> {
        let n = self.execs.fetch_add(1, Ordering::Relaxed);
        let exec_id = format!("{}-{n}", self.session);
        ops::exec(&self.runtime, &self.shell, req, &exec_id).await
    }
    async fn resolve(&self, path: &str) -> Result<Resolved, SandboxError> {
        ops::resolve(&self.runtime, path).await
    }
    async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        ops::read(&self.runtime, path).await
    }
    async fn write(&self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        ops::write(&self.runtime, path, data).await
    }
    async fn list_files(&self, dir: &str) -> Result<Vec<String>, SandboxError> {
        ops::list_files(&self.runtime, dir).await
    }
    fn workspace(&self) -> &Workspace {
        &self.ws
    }
    async fn current_files(&self) -> Result<Files, SandboxError> {
        self.runtime.current_files(&self.ws).await
    }
    async fn apply_restore(&self, plan: &RestorePlan) -> Result<(), SandboxError> {
        ops::restore(&self.runtime, plan).await
    }

    async fn close(&self) -> Result<(), SandboxError> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.runtime.remove().await
    }
}

/// The shells found in images this process has started, by image digest: an image's shell
/// does not change, and asking costs every sandbox an exec (a short test run in `tasks mine`
/// is a few of them). The first sandbox of an image asks, which also checks that exec works.
static SHELLS: std::sync::Mutex<Vec<(String, Vec<String>)>> = std::sync::Mutex::new(Vec::new());

fn known_shell(digest: &str) -> Option<Vec<String>> {
    // A poisoned lock only means a panic elsewhere mid-push; the list is still valid.
    let shells = SHELLS.lock().unwrap_or_else(|e| e.into_inner());
    shells
        .iter()
        .find(|(d, _)| d == digest)
        .map(|(_, shell)| shell.clone())
}

fn remember_shell(digest: &str, shell: &[String]) {
    let mut shells = SHELLS.lock().unwrap_or_else(|e| e.into_inner());
    if !shells.iter().any(|(d, _)| d == digest) {
        shells.push((digest.to_string(), shell.to_vec()));
    }
}

impl<R: ContainerRuntime> Drop for ContainerSandbox<R> {
    fn drop(&mut self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // Not closed (an early return or a panic): remove the container from a fresh runtime
        // and connection, since the caller's runtime may be shutting down. Nobody is left to
        // tell of a failure; the next session's sweep removes what remains.
        let remove = self.runtime.remove_detached();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(remove).ok()
        })
        .join();
    }
}
