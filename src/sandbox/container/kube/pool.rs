//! Pods created ahead of need: a batch with `--parallel N` keeps up to N pods being created or
//! ready beside the running ones, so that an attempt that finishes is followed by the next
//! one on a pod that already exists (only the workspace is copied in then).
//!
//! Owns: creating the pods (at most `ahead` at once, `total` in all), handing them out, and
//! deleting the ones nobody took ([`KubePool::close`]). Does not own: the pods' objects
//! (`super::objects`) or the sandbox made on one (`super::KubeSandbox::adopt`).

use super::{KubeRuntime, KubeSandbox, KubeSettings};
use crate::sandbox::container::ContainerRuntime;
use crate::sandbox::workspace::Workspace;
use crate::sandbox::SandboxError;
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex, OwnedSemaphorePermit, Semaphore};

type Made = (
    Result<KubeRuntime, SandboxError>,
    String,
    OwnedSemaphorePermit,
);

/// A pool of pods on the same settings (see the module docs).
pub struct KubePool {
    ready: Mutex<mpsc::UnboundedReceiver<Made>>,
    producer: tokio::task::JoinHandle<()>,
}

impl KubePool {
    /// Start creating `total` pods, at most `ahead` created or waiting at a time.
    pub fn start(settings: KubeSettings, ahead: usize, total: usize) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let budget = Arc::new(Semaphore::new(ahead.max(1)));
        let settings = Arc::new(settings);
        let producer = tokio::spawn(async move {
            for _ in 0..total {
                let Ok(permit) = budget.clone().acquire_owned().await else {
                    return;
                };
                let (tx, s) = (tx.clone(), settings.clone());
                tokio::spawn(async move {
                    let session = crate::sandbox::session_id();
                    let made = KubeRuntime::create_pod(&s, &session, false).await;
                    if let Err(mpsc::error::SendError((Ok(rt), _, _))) =
                        tx.send((made, session, permit))
                    {
                        // Nobody is left to take it.
                        let _ = rt.remove().await;
                    }
                });
            }
        });
        Self {
            ready: Mutex::new(rx),
            producer,
        }
    }

    /// A sandbox for `ws` on the next pod (waiting for one when none is ready yet).
    pub async fn sandbox(&self, ws: Workspace) -> Result<KubeSandbox, SandboxError> {
        let next = self.ready.lock().await.recv().await;
        let Some((made, session, permit)) = next else {
            return Err(SandboxError::Unavailable {
                what: "the batch's pods ran out".into(),
                hint: "this is a bug: the pool makes one pod per attempt".into(),
            });
        };
        // Taken: the next pod may be created.
        drop(permit);
        KubeSandbox::adopt(ws, made?, session).await
    }

    /// Stop creating pods and delete the ones nobody took.
    pub async fn close(self) {
        self.producer.abort();
        let mut rx = self.ready.into_inner();
        rx.close();
        while let Some((made, _, _)) = rx.recv().await {
            if let Ok(rt) = made {
                let _ = rt.remove().await;
            }
        }
    }
}
