//! Where tool calls run: `host` (this machine, a copy of the repository; contained with
//! bubblewrap where it works), `docker` (one hardened container per session, bollard) and
//! `kube` (one hardened pod per session, kube-rs).
//!
//! Owns: the [`Sandbox`] trait the tools are written against (what the sandbox is, execution
//! and files, plus the two primitives the workspace needs: the current files and applying a
//! restore; what every sandbox derives from those is [`SandboxExt`]), the
//! workspace (a git checkout of its own of the user's repository), the session patch and the
//! per-turn records ([`workspace::Checkout`], written once over any sandbox), command
//! execution with timeouts that kill inside the sandbox, and container start-up and clean-up
//! ([`container`], on the Docker and Kubernetes runtimes).
//!
//! Does not own: path policy (staying inside the workspace, `~`, display paths) or result
//! formats; those live in `crate::tools`. A sandbox resolves and reads paths it is given; the
//! tools decide whether a path may be touched at all.
//!
//! Invariant: every sandbox path is an absolute, `/`-separated string as seen *inside* the
//! sandbox ([`Sandbox::root`] is `/workspace` in containers, the workspace copy on the host).

mod about;
pub mod container;
pub mod host;
pub mod image;
mod machine;
pub mod output;
mod pool;
pub mod settings;
mod stash;
pub mod sweep;
pub mod tarball;
pub mod workspace;

pub use container::{docker, kube};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

pub use about::{About, SandboxExt};
pub use output::{Captured, OutputChunk, StreamKind};
pub use pool::SandboxPool;
pub use settings::SandboxSettings;

/// Largest file the file primitives read or write (a Read of a larger file is refused).
pub const MAX_FILE_BYTES: usize = 32 * 1024 * 1024;

/// Which kind of sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    /// Commands run on this machine, with your permissions, in a copy of the repository.
    Host,
    /// One hardened container per session on a Docker engine.
    Docker,
    /// One hardened pod per session on a Kubernetes cluster.
    Kube,
}

impl std::fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SandboxKind::Host => "host",
            SandboxKind::Docker => "docker",
            SandboxKind::Kube => "kube",
        })
    }
}

/// Errors of the sandbox layer. File errors carry the sandbox path; the tools turn them into
/// the `{ErrorKind}: {message}` results the model sees.
#[derive(Debug, Error)]
pub enum SandboxError {
    #[error("no such file or directory: {path}")]
    NotFound { path: String },
    #[error("is a directory: {path}")]
    IsADirectory { path: String },
    #[error("not a directory: {path}")]
    NotADirectory { path: String },
    #[error("permission denied: {path}")]
    PermissionDenied { path: String },
    #[error("no space left on device while writing {path}")]
    NoSpace { path: String },
    #[error("file too large ({size} bytes, limit {limit}): {path}")]
    TooLarge {
        path: String,
        size: usize,
        limit: usize,
    },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        source: std::io::Error,
    },
    /// The container runtime (Docker, Kubernetes) answered with an error.
    #[error("{runtime}: {context}: {source}")]
    Runtime {
        runtime: &'static str,
        context: String,
        #[source]
        source: RuntimeError,
    },
    /// The sandbox cannot start; `hint` says what the user can do about it.
    #[error("{what}\n  hint: {hint}")]
    Unavailable { what: String, hint: String },
    /// A helper inside the sandbox answered something unexpected.
    #[error("sandbox helper {helper} failed (exit {code}): {stderr}")]
    Helper {
        helper: &'static str,
        code: i64,
        stderr: String,
    },
    /// Computing the session patch failed.
    #[error("exporting the patch: {0}")]
    Patch(#[source] PatchError),
    /// The sandbox image could not be built or set up.
    #[error(transparent)]
    Image(#[from] image::ImageError),
}

/// What a container runtime's client reported (the source of [`SandboxError::Runtime`]). The
/// clients' errors are boxed: they are large, and every `Result` of the seam would carry them.
#[derive(Debug, Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Docker(Box<bollard::errors::Error>),
    #[error(transparent)]
    Kubernetes(Box<::kube::Error>),
    /// An API object built here from JSON does not fit the API's types.
    #[error(transparent)]
    Object(#[from] serde_json::Error),
    /// The runtime answered, but not as its API says it does.
    #[error("{0}")]
    Protocol(&'static str),
}

impl From<bollard::errors::Error> for RuntimeError {
    fn from(e: bollard::errors::Error) -> Self {
        RuntimeError::Docker(Box::new(e))
    }
}

impl From<::kube::Error> for RuntimeError {
    fn from(e: ::kube::Error) -> Self {
        RuntimeError::Kubernetes(Box::new(e))
    }
}

/// Why the session patch could not be computed (the source of [`SandboxError::Patch`]).
#[derive(Debug, Error)]
pub enum PatchError {
    #[error("walking {path}: {source}")]
    Walk {
        path: String,
        #[source]
        source: ignore::Error,
    },
    #[error("running git (is it installed?): {0}")]
    GitSpawn(#[source] std::io::Error),
    #[error("git {args} failed: {stderr}")]
    Git { args: String, stderr: String },
    /// The container's workspace could not be fetched (`exit` as the runtime reported it).
    #[error("downloading the workspace failed ({exit}): {stderr}")]
    Download { exit: String, stderr: String },
}

impl SandboxError {
    pub(crate) fn io(op: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.kind() {
            std::io::ErrorKind::NotFound => SandboxError::NotFound { path },
            std::io::ErrorKind::PermissionDenied => SandboxError::PermissionDenied { path },
            std::io::ErrorKind::IsADirectory => SandboxError::IsADirectory { path },
            std::io::ErrorKind::NotADirectory => SandboxError::NotADirectory { path },
            std::io::ErrorKind::StorageFull => SandboxError::NoSpace { path },
            _ => SandboxError::Io { op, path, source },
        }
    }
}

/// What a path names after resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    /// Nothing there yet (some trailing components do not exist).
    Missing,
    /// A device, socket, fifo...
    Other,
}

/// A path with every existing component's symlinks resolved (`realpath -m` semantics, except
/// that a dangling final symlink counts as missing and is not followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub path: String,
    pub kind: EntryKind,
}

/// One command to run through the sandbox's shell.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// Shell command text (run as `/bin/bash -lc COMMAND`, or `sh -c` where bash is absent).
    pub command: String,
    /// Absolute sandbox directory to start in.
    pub cwd: String,
    pub timeout: Duration,
    /// Bytes of each stream kept in memory (the rest is counted, not kept).
    pub keep_bytes: usize,
    /// Receives output as it arrives, for a live view.
    pub stream: Option<tokio::sync::mpsc::UnboundedSender<OutputChunk>>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecExit {
    Exited(i64),
    /// Killed at the timeout (with its whole process group, and any escapees).
    TimedOut,
}

/// The outcome of [`Sandbox::exec`].
#[derive(Debug, Clone)]
pub struct ExecOutput {
    pub exit: ExecExit,
    pub stdout: Captured,
    pub stderr: Captured,
    pub elapsed: Duration,
}

/// The surface the tools are written against. Implementations: [`host::HostSandbox`] and
/// [`container::ContainerSandbox`] ([`docker::DockerSandbox`], [`kube::KubeSandbox`]).
#[async_trait]
pub trait Sandbox: Send + Sync {
    /// What this sandbox is: its kind, a note on what the model's commands can reach, and its
    /// image's digest (read through [`SandboxExt`]'s `kind`, `describe`, `image_digest`).
    fn about(&self) -> About;
    /// The workspace root inside the sandbox (canonical: no symlinks in it), which is also
    /// where commands start and relative paths resolve ([`SandboxExt::workdir`]).
    fn root(&self) -> &str;
    /// Run a shell command; output is streamed and capped; the timeout kills inside.
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, SandboxError>;
    /// Resolve an absolute, lexically normalised path (see [`Resolved`]).
    async fn resolve(&self, path: &str) -> Result<Resolved, SandboxError>;
    /// Read a whole file (at most [`MAX_FILE_BYTES`]).
    async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError>;
    /// Write a whole file atomically (temporary file then rename), creating parent
    /// directories, keeping an existing file's mode.
    async fn write(&self, path: &str, data: &[u8]) -> Result<(), SandboxError>;
    /// Regular files below `dir` (relative to it, sorted), skipping `.git` and ignored files.
    async fn list_files(&self, dir: &str) -> Result<Vec<String>, SandboxError>;
    /// The workspace's private record of the baseline and the turns (see [`workspace`]); the
    /// patch and the turn records are made through [`workspace::Checkout`].
    fn workspace(&self) -> &workspace::Workspace;
    /// The workspace's files as they are now, where the host can read them (the working copy
    /// itself, or a download of the container's).
    async fn current_files(&self) -> Result<workspace::Files, SandboxError>;
    /// Carry out a restore plan on the workspace's files (see
    /// [`workspace::Workspace::restore_plan`]).
    async fn apply_restore(&self, plan: &workspace::RestorePlan) -> Result<(), SandboxError>;
    /// Remove everything the session created (container, pod, copies). Idempotent.
    async fn close(&self) -> Result<(), SandboxError>;
}

/// Which sandbox to open, on which repository: the kind, with that kind's settings only.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// The user's repository (copied; never written), unless `in_place`.
    pub repo: PathBuf,
    /// `repo` is a copy made for this session (an image's repository): the workspace takes it
    /// as it is and works in it ([`workspace::Workspace::adopt`]).
    pub in_place: bool,
    pub settings: KindSettings,
}

/// One sandbox kind with its own settings.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per session, made once and matched often: boxing buys nothing"
)]
pub enum KindSettings {
    Host(host::HostSettings),
    Docker(docker::DockerSettings),
    Kube(kube::KubeSettings),
}

impl KindSettings {
    pub fn kind(&self) -> SandboxKind {
        match self {
            KindSettings::Host(_) => SandboxKind::Host,
            KindSettings::Docker(_) => SandboxKind::Docker,
            KindSettings::Kube(_) => SandboxKind::Kube,
        }
    }
}

impl SandboxSpec {
    /// The host sandbox on `repo`, with default settings (contained where bubblewrap works).
    pub fn host(repo: impl Into<PathBuf>) -> Self {
        Self {
            repo: repo.into(),
            in_place: false,
            settings: KindSettings::Host(Default::default()),
        }
    }

    pub fn kind(&self) -> SandboxKind {
        self.settings.kind()
    }

    /// The session's workspace on `repo`: a copy by git's rules, or `repo` itself when
    /// `in_place`.
    pub fn workspace(&self) -> Result<workspace::Workspace, SandboxError> {
        match self.in_place {
            true => workspace::Workspace::adopt(&self.repo),
            false => workspace::Workspace::create(&self.repo),
        }
    }

    /// The image in words, for messages: its name, or where it is built from.
    pub fn image_label(&self) -> String {
        let devcontainer = |on: bool| on.then(|| image::devcontainer::find(&self.repo)).flatten();
        match &self.settings {
            KindSettings::Host(_) => "(the host)".into(),
            KindSettings::Docker(d) => match (&d.build, devcontainer(d.devcontainer)) {
                (Some(b), _) => format!("built from {}", b.dockerfile.display()),
                (None, Some(dc)) => format!("of {}", dc.display()),
                (None, None) => d.image.clone(),
            },
            KindSettings::Kube(k) => match devcontainer(k.devcontainer) {
                Some(dc) => format!("of {}", dc.display()),
                None => k.image.clone(),
            },
        }
    }
}

/// Start a sandbox of the requested kind on a fresh copy of `spec.repo`.
pub async fn open(spec: &SandboxSpec) -> Result<Arc<dyn Sandbox>, SandboxError> {
    open_reporting(spec, &|_| {}).await
}

/// [`open`], first making the image ready (a build, the setup command: see [`image`]) and
/// telling `progress` what it does.
pub async fn open_reporting(
    spec: &SandboxSpec,
    progress: image::Progress<'_>,
) -> Result<Arc<dyn Sandbox>, SandboxError> {
    Ok(match &spec.settings {
        KindSettings::Host(host) => Arc::new(host::HostSandbox::new(spec.workspace()?, host)?),
        KindSettings::Docker(docker) => {
            let mut settings = docker.clone();
            settings.image =
                image::prepare(&docker::connect().await?, &spec.repo, &settings, progress).await?;
            Arc::new(docker::DockerSandbox::start(spec.workspace()?, &settings).await?)
        }
        KindSettings::Kube(kube) => {
            let mut settings = kube.clone();
            settings.image = image::kube_image(&spec.repo, &settings)?;
            Arc::new(kube::KubeSandbox::start(spec.workspace()?, &settings).await?)
        }
    })
}

/// [`open_reporting`], or the next of `pool`'s sandboxes made ahead of need when there is a
/// pool and `spec` is of its kind.
pub async fn open_from(
    spec: &SandboxSpec,
    pool: Option<&SandboxPool>,
    progress: image::Progress<'_>,
) -> Result<Arc<dyn Sandbox>, SandboxError> {
    match (pool, &spec.settings) {
        (Some(SandboxPool(pool)), KindSettings::Kube(_)) => {
            Ok(Arc::new(pool.sandbox(spec.workspace()?).await?))
        }
        _ => open_reporting(spec, progress).await,
    }
}

/// What `lilypad doctor` can report about a sandbox kind: the runtime and its version, or
/// why it cannot be used (with what to do).
pub async fn probe(spec: &SandboxSpec) -> Result<String, SandboxError> {
    match &spec.settings {
        KindSettings::Host(host) => Ok(match host::containment(host) {
            host::Containment::Bwrap { version, .. } => {
                format!("host: contained ({version}: host read-only, network off, secrets hidden)")
            }
            host::Containment::Uncontained { why } => {
                format!("host: uncontained (contains only files): {why}")
            }
        }),
        KindSettings::Docker(docker) => docker::probe(docker).await,
        KindSettings::Kube(kube) => kube::probe(kube).await,
    }
}

/// The warning shown whenever the uncontained host sandbox is chosen.
pub const HOST_WARNING: &str = "warning: the host sandbox runs the model's commands directly on \
this machine with your permissions (network included); only the files are a copy. Use \
--sandbox docker or --sandbox kube to contain them.";

/// What to tell the user whenever the host sandbox is chosen: a note when commands are
/// contained with bubblewrap, else [`HOST_WARNING`] and why they are not.
pub fn host_notice(settings: &host::HostSettings) -> String {
    match host::containment(settings) {
        host::Containment::Bwrap { .. } => "note: the host sandbox runs the model's commands \
            under bubblewrap: your files are read-only outside the workspace copy, the network \
            is off and your secrets are hidden, but memory, CPU and processes are not limited \
            (use --sandbox docker for that)."
            .into(),
        host::Containment::Uncontained { why } => format!("{HOST_WARNING} (Not contained: {why}.)"),
    }
}

/// A session-unique id for labels and names: `{unix seconds hex}-{pid hex}-{counter}`.
pub(crate) fn session_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{secs:x}-{:x}-{n}", std::process::id())
}
