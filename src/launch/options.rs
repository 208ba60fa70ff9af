//! The flags every session-running command shares (`lilypad`, `run`, `resume`, `demo`):
//! where the repository is, which sandbox, which engine, the approval policy and limits.

use crate::sandbox::{SandboxKind, SandboxSpec};
use std::path::{Path, PathBuf};

/// The flags that choose and configure a sandbox, shared by every command that opens one.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SandboxFlags {
    /// Where commands run: a Docker container, a Kubernetes pod, or this machine
    #[arg(long = "sandbox", value_enum)]
    pub kind: Option<SandboxKind>,
    /// Container image for the docker and kube sandboxes
    #[arg(long)]
    pub image: Option<String>,
    /// Kubeconfig for the kube sandbox [default: KUBECONFIG, ~/.kube/config, in-cluster]
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context for the kube sandbox
    #[arg(long)]
    pub kube_context: Option<String>,
    /// Namespace for the kube sandbox [default: the context's]
    #[arg(long)]
    pub kube_namespace: Option<String>,
}

impl SandboxFlags {
    /// The sandbox specification for `repo`, of kind `default` unless `--sandbox` says.
    pub fn spec(&self, repo: &Path, default: SandboxKind) -> SandboxSpec {
        let mut spec = SandboxSpec {
            kind: self.kind.unwrap_or(default),
            repo: repo.to_path_buf(),
            docker: Default::default(),
            kube: Default::default(),
        };
        if let Some(image) = &self.image {
            spec.docker.image = image.clone();
            spec.kube.image = image.clone();
        }
        spec.kube.kubeconfig = self.kubeconfig.clone();
        spec.kube.context = self.kube_context.clone();
        spec.kube.namespace = self.kube_namespace.clone();
        spec
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct SessionOptions {
    /// The repository to work on (default: the current directory)
    #[arg(long)]
    pub repo: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxFlags,
    /// Allow the host sandbox to run commands without asking in headless runs
    #[arg(long)]
    pub allow_host: bool,
    /// Approval policy: `ask`, `auto`, `deny`, or per category, e.g. `edits=auto,commands=ask`
    #[arg(long)]
    pub approve: Option<String>,
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
    pub engine: Option<String>,
    /// Directory for session logs (default: the platform data dir's lilypad/sessions)
    #[arg(long, env = "LILYPAD_SESSION_DIR")]
    pub session_dir: Option<PathBuf>,
}
