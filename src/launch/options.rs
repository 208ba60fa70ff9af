//! The options every session-running command shares (`lilypad`, `run`, `resume`, `demo`):
//! where the repository is, which sandbox, which engine, the approval policy and limits.
//! Plain data: `crate::cli` fills them from its flags.

use crate::sandbox::{SandboxKind, SandboxSpec};
use std::path::{Path, PathBuf};

/// What chooses and configures a sandbox, shared by every command that opens one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxOptions {
    /// Where commands run: a Docker container, a Kubernetes pod, or this machine
    pub kind: Option<SandboxKind>,
    /// Container image for the docker and kube sandboxes
    pub image: Option<String>,
    /// Kubeconfig for the kube sandbox [default: KUBECONFIG, ~/.kube/config, in-cluster]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context for the kube sandbox
    pub kube_context: Option<String>,
    /// Namespace for the kube sandbox [default: the context's]
    pub kube_namespace: Option<String>,
    /// Run host commands without bubblewrap even where it is available
    pub uncontained: bool,
}

impl SandboxOptions {
    /// The sandbox specification for `repo`, of kind `default` unless `--sandbox` says.
    pub fn spec(&self, repo: &Path, default: SandboxKind) -> SandboxSpec {
        let mut spec = SandboxSpec {
            kind: self.kind.unwrap_or(default),
            repo: repo.to_path_buf(),
            host: crate::sandbox::host::HostSettings {
                uncontained: self.uncontained,
            },
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

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionOptions {
    /// The repository to work on (default: the current directory)
    pub repo: Option<PathBuf>,
    pub sandbox: SandboxOptions,
    /// Allow the host sandbox to run commands without asking in headless runs
    pub allow_host: bool,
    /// Approval policy: `ask`, `auto`, `deny`, or per category, e.g. `edits=auto,commands=ask`
    pub approve: Option<String>,
    /// Step limit per session
    pub max_steps: Option<u32>,
    /// Wall-time limit per task, in seconds
    pub wall_time: Option<u64>,
    /// Pause after every model turn
    pub step: bool,
    /// Engine: `llama` (the in-process model, default) or `script:FILE` (a scripted mock
    /// that replays raw model outputs, for demos and tests)
    pub engine: Option<String>,
    /// Directory for session logs (default: the platform data dir's lilypad/sessions)
    pub session_dir: Option<PathBuf>,
}
