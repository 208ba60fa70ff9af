//! Sandboxes made ahead of need, for a batch whose attempts all take the same sandbox: on
//! Kubernetes, where a pod takes seconds to schedule and start, the next pods are created while
//! the running attempts work ([`super::kube::pool`]); the other kinds start fast enough that a
//! pool would only hold resources, so they have none.
//!
//! Owns: choosing whether a batch gets a pool, and handing its sandboxes out through
//! [`super::open_from`]. Does not own: the pods themselves (`kube::pool`).

use super::kube::pool::KubePool;
use super::{SandboxError, SandboxKind, SandboxSettings};
use std::path::Path;

/// A batch's sandboxes made ahead of need (see the module docs).
pub struct SandboxPool(pub(super) KubePool);

impl std::fmt::Debug for SandboxPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SandboxPool(kube)")
    }
}

impl SandboxPool {
    /// A pool for `count` attempts on `repo`, `ahead` of them made in advance, when `kind` is
    /// one that gets a pool; `None` otherwise (and for no attempts).
    pub fn start(
        kind: SandboxKind,
        settings: &SandboxSettings,
        repo: &Path,
        ahead: usize,
        count: usize,
    ) -> Result<Option<Self>, SandboxError> {
        if kind != SandboxKind::Kube || count == 0 {
            return Ok(None);
        }
        let mut s = settings.kube(repo);
        s.image = super::image::kube_image(repo, &s)?;
        Ok(Some(Self(KubePool::start(s, ahead.max(1), count))))
    }

    /// Remove the sandboxes that were made and not used.
    pub async fn close(self) {
        self.0.close().await
    }
}
