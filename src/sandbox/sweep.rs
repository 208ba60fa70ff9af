//! The leftovers sweep of every runtime at once: the containers (Docker) and pods with their
//! ConfigMaps and policies (Kubernetes) that Lilypad's labels say belong to dead processes of
//! this host (or, in Kubernetes, that outlived their deadline), and the host-side workspaces
//! of dead processes. `lilypad sweep` runs it, and so does a batch at its start; every
//! sandbox start sweeps its own runtime as well.
//!
//! Owns: running the three sweeps and saying what each found. Does not own: which objects
//! are leftovers (the runtimes' `sweep_leftovers`, `workspace::sweep_leftovers`).

use super::settings::SandboxSettings;
use super::SandboxError;
use std::path::Path;
use thiserror::Error;

/// What one sweep removed, per runtime; a runtime that could not be reached says why.
#[derive(Debug)]
pub struct Swept {
    pub docker: Result<usize, SweepError>,
    pub kube: Result<usize, SweepError>,
    pub workspaces: usize,
}

/// Why a runtime was not swept.
#[derive(Debug, Error)]
pub enum SweepError {
    /// The caller did not ask for this runtime (Kubernetes needs a kubeconfig).
    #[error("not asked for")]
    NotAsked,
    /// The runtime could not be reached, or failed while listing or removing.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// Sweep Docker, the Kubernetes namespace `settings` names (its `[sandbox.kube]`), and this
/// host's temporary directory. `kube`: whether to try Kubernetes at all (it needs a
/// kubeconfig; without one the answer is an error saying so).
pub async fn sweep_all(settings: &SandboxSettings, repo: &Path, kube: bool) -> Swept {
    let docker = match super::docker::connect().await {
        Ok(d) => super::docker::sweep_leftovers(&d)
            .await
            .map_err(SweepError::from),
        Err(e) => Err(e.into()),
    };
    let kube = if kube {
        let s = settings.kube(repo);
        match super::kube::connect(&s).await {
            Ok((client, ns)) => super::kube::sweep_leftovers(&client, &ns)
                .await
                .map_err(SweepError::from),
            Err(e) => Err(e.into()),
        }
    } else {
        Err(SweepError::NotAsked)
    };
    let workspaces = super::workspace::sweep_leftovers();
    Swept {
        docker,
        kube,
        workspaces,
    }
}
