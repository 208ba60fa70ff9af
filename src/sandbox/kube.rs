//! The Kubernetes sandbox (placeholder while it is built).

use super::workspace::Workspace;
use super::SandboxError;

/// Kubernetes sandbox settings.
#[derive(Debug, Clone, Default)]
pub struct KubeSettings {
    pub image: String,
}

/// See the module docs.
#[derive(Debug)]
pub struct KubeSandbox {}

impl KubeSandbox {
    pub async fn start(
        _ws: Workspace,
        _s: &KubeSettings,
    ) -> Result<std::sync::Arc<dyn super::Sandbox>, SandboxError> {
        Err(SandboxError::Unavailable {
            what: "not yet".into(),
            hint: "".into(),
        })
    }
}
