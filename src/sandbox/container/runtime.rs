//! What differs between the container runtimes: the [`ContainerRuntime`] trait that Docker
//! ([`super::docker::DockerRuntime`]) and Kubernetes ([`super::kube::KubeRuntime`]) implement
//! for the one [`super::ContainerSandbox`].
//!
//! Owns: the trait (create, exec, recycle, copy in, the current files on the host, remove), how
//! a raw exec ends ([`RawExit`]), where the workspace appears in every container
//! ([`WORKSPACE`]) and the host-side view of its files ([`Files`]).
//!
//! Does not own: anything built on exec (shell detection, file helpers, timeouts and killing:
//! `super::ops`), the exec counter, the closed flag and clean-up on drop (`super`), and the
//! facts about this machine that the leftover sweeps share (`crate::sandbox::machine`).
//!
//! Invariants every runtime keeps: exec runs as the sandbox's non-root user with no environment
//! from the host; [`ContainerRuntime::create`] leaves nothing behind when it fails;
//! [`ContainerRuntime::remove`] is idempotent (a container already gone is success).

use crate::sandbox::output::Collector;
pub use crate::sandbox::workspace::Files;
use crate::sandbox::workspace::Workspace;
use crate::sandbox::{SandboxError, SandboxKind};
use async_trait::async_trait;
use futures_util::future::BoxFuture;
use std::time::Instant;

/// Where the workspace appears inside the container.
pub const WORKSPACE: &str = "/workspace";

/// How a raw exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawExit {
    Exited(i64),
    /// The deadline passed; the stream was dropped (the process may still run).
    Deadline,
}

/// One runtime's container life-cycle and exec (see the module docs).
#[async_trait]
pub trait ContainerRuntime: Send + Sync + Sized + 'static {
    /// The sandbox kind this runtime serves.
    const KIND: SandboxKind;
    /// The runtime's settings (a config section).
    type Settings: Send + Sync;

    /// Create and start the session's container for `ws` (`session` names it and labels it);
    /// on failure, remove whatever was created.
    async fn create(
        ws: &Workspace,
        settings: &Self::Settings,
        session: &str,
    ) -> Result<Self, SandboxError>;

    /// Run `argv` in the container as the sandbox user, feeding `stdin`, collecting output
    /// until the process ends or `deadline` passes.
    async fn exec(
        &self,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        out: &mut Collector,
        err: &mut Collector,
        deadline: Instant,
    ) -> Result<RawExit, SandboxError>;

    /// Kill every process of the sandbox user (escapees a timeout could not reach), keeping
    /// the workspace.
    async fn recycle(&self) -> Result<(), SandboxError>;

    /// Bring the workspace copy into the started container (once, after exec is known to
    /// work). A bind mount needs nothing.
    async fn copy_in(&self, ws: &Workspace) -> Result<(), SandboxError>;

    /// The container workspace's current files, on the host (for the patch and the turn
    /// records). The in-container `.git` need not come along: nothing is read from it.
    async fn current_files(&self, ws: &Workspace) -> Result<Files, SandboxError>;

    /// Remove the container and everything created with it. Idempotent.
    async fn remove(&self) -> Result<(), SandboxError>;

    /// [`Self::remove`] as a future that owns what it needs and opens its own connection: it
    /// runs on a fresh tokio runtime when the sandbox is dropped unclosed, since the caller's
    /// runtime (which drives this connection) may be shutting down.
    fn remove_detached(&self) -> BoxFuture<'static, Result<(), SandboxError>>;

    /// What the model's commands can reach, for [`crate::sandbox::Sandbox::describe`].
    fn describe(&self, ws: &Workspace) -> String;

    /// Where the workspace appears in this container: [`WORKSPACE`], or the directory an image
    /// documents as its repository's (`/testbed` in SWE-bench's images).
    fn workdir(&self) -> &str {
        WORKSPACE
    }

    /// The `sha256:` digest of the image this container runs, where the runtime told it.
    fn image_digest(&self) -> Option<&str> {
        None
    }
}
