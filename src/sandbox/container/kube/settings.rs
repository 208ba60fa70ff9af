//! The Kubernetes sandbox's settings: a `[sandbox.kube]`-style config section, and what the
//! pod and its connection are made from.
//!
//! Owns: the fields and their defaults. Does not own: building the pod from them
//! (`super::objects`) or connecting (`super`).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Kubernetes sandbox settings (a `[sandbox.kube]`-style config section; every field optional).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubeSettings {
    pub image: String,
    /// `IfNotPresent`, `Always` or `Never`.
    pub image_pull_policy: String,
    /// The pod's `imagePullSecrets`: Secrets in the namespace to pull the image with.
    pub pull_secrets: Vec<String>,
    /// Namespace; `None`: the kubeconfig context's (or the in-cluster) namespace.
    pub namespace: Option<String>,
    /// A kubeconfig file; `None`: `KUBECONFIG`, `~/.kube/config`, then in-cluster.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// Limits.
    pub cpu: String,
    pub memory: String,
    /// Requests (what the scheduler reserves).
    pub cpu_request: String,
    pub memory_request: String,
    pub ephemeral_storage: String,
    pub workspace_size: String,
    pub tmp_size: String,
    /// User and group id the sandbox runs as.
    pub uid: i64,
    /// The pod is stopped by the cluster after this long, whatever happens to Lilypad.
    pub active_deadline_secs: i64,
    /// Seconds to wait for the pod to be ready (image pulls included).
    pub ready_timeout_secs: u64,
    /// The pod's `runtimeClassName` (e.g. `gvisor`, `kata`).
    pub runtime_class: Option<String>,
    /// The pod's `nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// Resource requests and limits given as they are, over the ones above (e.g.
    /// `nvidia.com/gpu`, or `cpu` itself).
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
    /// Take the image from the repository's devcontainer.json when it names one.
    pub devcontainer: bool,
    /// A setup command or Dockerfile asked for (refused: the cluster's image must hold what
    /// the tests need), kept to say so at start.
    pub setup: Option<String>,
    pub dockerfile: Option<PathBuf>,
    /// Where the workspace is mounted and commands run (default `/workspace`): an image's own
    /// repository directory (`/testbed`).
    pub workdir: Option<String>,
    /// Empty, writable directories the pod gets besides /tmp (emptyDir volumes: a Harbor
    /// task's `/tests` and `/logs`).
    pub scratch_dirs: Vec<String>,
    /// The workspace is the image's own repository at `workdir` (a batch's image task, see
    /// `crate::sandbox::workspace::Workspace::adopt`): an init container copies it from the
    /// image into the workspace volume inside the pod, and only what Lilypad added to it is
    /// uploaded. Not a config key.
    #[serde(skip)]
    pub seed_from_image: bool,
}

impl KubeSettings {
    /// Where the workspace appears in the pod.
    pub fn workdir(&self) -> &str {
        self.workdir.as_deref().unwrap_or(super::WORKSPACE)
    }
}

impl Default for KubeSettings {
    fn default() -> Self {
        Self {
            image: "debian:bookworm-slim".into(),
            image_pull_policy: "IfNotPresent".into(),
            pull_secrets: Vec::new(),
            namespace: None,
            kubeconfig: None,
            context: None,
            cpu: "1".into(),
            memory: "2Gi".into(),
            cpu_request: "50m".into(),
            memory_request: "64Mi".into(),
            ephemeral_storage: "4Gi".into(),
            workspace_size: "2Gi".into(),
            tmp_size: "512Mi".into(),
            uid: 1000,
            active_deadline_secs: 4 * 3600,
            ready_timeout_secs: 180,
            runtime_class: None,
            node_selector: BTreeMap::new(),
            requests: BTreeMap::new(),
            limits: BTreeMap::new(),
            devcontainer: false,
            setup: None,
            dockerfile: None,
            workdir: None,
            scratch_dirs: Vec::new(),
            seed_from_image: false,
        }
    }
}
