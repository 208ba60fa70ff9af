//! The sandbox and session flags shared by several subcommands, and their conversion to the
//! typed options of the layers below (`crate::config::SandboxOverrides`,
//! `crate::launch::SessionOptions`, `crate::sandbox::SandboxKind`): clap stays in `cli`.

use crate::config::SandboxOverrides;
use crate::launch::{SandboxOptions, SessionOptions};
use crate::sandbox::settings::ByteSize;
use crate::sandbox::SandboxKind;
use std::path::PathBuf;

/// `--sandbox`: where commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxKindArg {
    /// Commands run on this machine, with your permissions, in a copy of the repository.
    Host,
    /// One hardened container per session on a Docker engine.
    Docker,
    /// One hardened pod per session on a Kubernetes cluster.
    Kube,
}

impl From<SandboxKindArg> for SandboxKind {
    fn from(k: SandboxKindArg) -> Self {
        match k {
            SandboxKindArg::Host => SandboxKind::Host,
            SandboxKindArg::Docker => SandboxKind::Docker,
            SandboxKindArg::Kube => SandboxKind::Kube,
        }
    }
}

/// The flags that choose and configure a sandbox, shared by every command that opens one;
/// each replaces the config file's `[sandbox]` value (docs/configuration.md).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SandboxArgs {
    /// Where commands run: a Docker container, a Kubernetes pod, or this machine
    #[arg(long = "sandbox", value_enum)]
    pub kind: Option<SandboxKindArg>,
    /// Container image for the docker and kube sandboxes
    #[arg(long)]
    pub image: Option<String>,
    /// Build the docker sandbox's image from this Dockerfile (relative to the repository)
    #[arg(long, conflicts_with = "image")]
    pub dockerfile: Option<PathBuf>,
    /// Run this command once on the image, with the network, before the session (docker;
    /// cached), e.g. "pip install -e .[test]"
    #[arg(long)]
    pub setup: Option<String>,
    /// Ignore the repository's .devcontainer/devcontainer.json
    #[arg(long)]
    pub no_devcontainer: bool,
    /// CPUs for the sandbox
    #[arg(long)]
    pub cpus: Option<f64>,
    /// Memory for the sandbox, e.g. 2g
    #[arg(long)]
    pub memory: Option<ByteSize>,
    /// Processes in the docker sandbox
    #[arg(long)]
    pub pids: Option<i64>,
    /// Scratch space: /tmp in docker, ephemeral storage in kube, e.g. 1g
    #[arg(long)]
    pub disk: Option<ByteSize>,
    /// Docker network mode of the session's container [default: none]
    #[arg(long)]
    pub network: Option<String>,
    /// Bash timeout in seconds when a call gives none [default: 120]
    #[arg(long)]
    pub command_timeout: Option<u64>,
    /// Kubeconfig for the kube sandbox [default: KUBECONFIG, ~/.kube/config, in-cluster]
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context for the kube sandbox
    #[arg(long)]
    pub kube_context: Option<String>,
    /// Namespace for the kube sandbox [default: the context's]
    #[arg(long)]
    pub kube_namespace: Option<String>,
    /// With --sandbox host: run commands without bubblewrap (your permissions and network)
    #[arg(long)]
    pub uncontained: bool,
    /// runtimeClassName of the kube sandbox's pod, e.g. gvisor
    #[arg(long)]
    pub runtime_class: Option<String>,
}

impl From<&SandboxArgs> for SandboxOptions {
    fn from(a: &SandboxArgs) -> Self {
        Self {
            kind: a.kind.map(SandboxKind::from),
            uncontained: a.uncontained,
        }
    }
}

impl From<&SandboxArgs> for SandboxOverrides {
    fn from(a: &SandboxArgs) -> Self {
        Self {
            kind: a.kind.map(SandboxKind::from),
            image: a.image.clone(),
            dockerfile: a.dockerfile.clone(),
            setup: a.setup.clone(),
            no_devcontainer: a.no_devcontainer,
            cpus: a.cpus,
            memory: a.memory,
            pids: a.pids,
            disk: a.disk,
            network: a.network.clone(),
            command_timeout_secs: a.command_timeout,
            kubeconfig: a.kubeconfig.clone(),
            kube_context: a.kube_context.clone(),
            kube_namespace: a.kube_namespace.clone(),
            runtime_class: a.runtime_class.clone(),
            image_registry: None,
            pull_secrets: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// The repository to work on (default: the current directory)
    #[arg(long)]
    pub repo: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// Allow the host sandbox to run commands without asking in headless runs
    #[arg(long)]
    pub allow_host: bool,
    /// Approval policy: `ask`, `auto`, `deny`, or per category, e.g. `edits=auto,commands=ask`
    #[arg(long)]
    pub approve: Option<crate::agent::PolicyOverride>,
    /// Step limit per session
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Wall-time limit per task, in seconds
    #[arg(long)]
    pub wall_time: Option<u64>,
    /// Pause after every model turn
    #[arg(long)]
    pub step: bool,
    /// Engine: `llama` (the in-process model, default) or `script:FILE` (a scripted mock
    /// that replays raw model outputs, for demos and tests)
    #[arg(long)]
    pub engine: Option<crate::launch::EngineFlag>,
    /// Directory for session logs (default: the platform data dir's lilypad/sessions)
    #[arg(long, env = "LILYPAD_SESSION_DIR")]
    pub session_dir: Option<PathBuf>,
    /// Do not put the project instructions (AGENTS.md files) at the head of the first message
    #[arg(long)]
    pub no_project_doc: bool,
}

impl From<&SessionArgs> for SessionOptions {
    fn from(a: &SessionArgs) -> Self {
        Self {
            repo: a.repo.clone(),
            sandbox: (&a.sandbox).into(),
            allow_host: a.allow_host,
            approve: a.approve,
            max_steps: a.max_steps,
            wall_time: a.wall_time,
            step: a.step,
            engine: a.engine.clone(),
            session_dir: a.session_dir.clone(),
            no_project_doc: a.no_project_doc,
        }
    }
}
