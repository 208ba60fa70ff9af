//! The flags every session-running command shares (`lilypad`, `run`, `resume`, `demo`):
//! where the repository is, which sandbox, which engine, the approval policy and limits.

use crate::sandbox::SandboxKind;
use std::path::PathBuf;

#[derive(Debug, Clone, clap::Args)]
pub struct SessionOptions {
    /// The repository to work on (default: the current directory)
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Where commands run: a Docker container, a Kubernetes pod, or this machine
    #[arg(long, value_enum)]
    pub sandbox: Option<SandboxKind>,
    /// Allow the host sandbox to run commands without asking in headless runs
    #[arg(long)]
    pub allow_host: bool,
    /// Docker image for the sandbox
    #[arg(long)]
    pub image: Option<String>,
    /// Kubernetes: kubeconfig file, context and namespace
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long)]
    pub kube_context: Option<String>,
    #[arg(long)]
    pub kube_namespace: Option<String>,
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
