//! [`Server`]: the state every handler shares (replicas, keys and their use, the gate, the
//! audit log, the weights, the metrics, the defaults of a request), and whether it takes
//! requests now ([`Server::readiness`]). Does not own what a request goes through (`door.rs`)
//! or the routes (`mod.rs`).

use super::audit::AuditLog;
use super::backend::ServedModel;
use super::keys::KeyStore;
use super::metrics::Metrics;
use super::replicas::{Replica, Replicas};
use super::settings::ServeSettings;
use super::vocabulary::Vocabulary;
use super::weights::Weights;
use super::{limits, queue};
use crate::engine::{EngineError, EngineSettings, SamplingSettings};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Everything the handlers share.
pub struct Server {
    /// The engines, each with its renderers (at least one).
    pub replicas: Replicas,
    pub model_name: String,
    /// The keys clients must present (none: every request is the key `default`).
    pub keys: KeyStore,
    /// Each key's use against its limits.
    pub(crate) usages: Arc<limits::Usages>,
    /// The wait for a place to generate, by priority.
    pub(crate) gate: Arc<queue::PriorityGate>,
    /// Where each request's audit line goes, if anywhere.
    pub audit: Option<AuditLog>,
    /// The weights in force, and their updates when `--weight-updates` opened them.
    pub weights: Weights,
    /// The test-only fault route is open (`LILYPAD_TEST_FAULTS=1`, see `faults.rs`).
    pub test_faults: bool,
    pub max_queue: usize,
    /// Requests of the model endpoints in flight (let in by the door, not answered yet).
    pub(crate) in_line: AtomicUsize,
    /// Set once shutdown began: new requests are turned away.
    pub(crate) draining: AtomicBool,
    /// What `GET /metrics` reports.
    pub metrics: Metrics,
    /// Server defaults for requests that leave sampling fields out.
    pub sampling: SamplingSettings,
    pub max_tokens: u32,
    /// The most choices one request may ask for (`[serve] max_n`).
    pub max_n: usize,
    /// Sequences each replica's engine decodes together (`[engine] sequences`): the most
    /// choices of one request that generate at once, each in a sequence of its own.
    pub(crate) sequences: usize,
    /// The time a client has to send a request's headers, then its body (`door.rs`).
    pub read_timeout: std::time::Duration,
    /// The engine's vocabulary, fetched when a request first needs it.
    vocabulary: tokio::sync::OnceCell<Option<Arc<Vocabulary>>>,
}

impl Server {
    /// A server for `backend` with the `[serve]` settings and the engine's defaults for
    /// requests that leave sampling and the token cap out.
    pub fn new(
        backend: ServedModel,
        model_name: String,
        serve: &ServeSettings,
        engine: &EngineSettings,
    ) -> Self {
        Self::with_replicas(
            Replicas::new(Replica::new(backend), Vec::new()),
            model_name,
            serve,
            engine,
        )
    }

    /// Like [`Self::new`], for several engines: requests generating at once default to the
    /// engine's `sequences` on each.
    pub fn with_replicas(
        replicas: Replicas,
        model_name: String,
        serve: &ServeSettings,
        engine: &EngineSettings,
    ) -> Self {
        let parallel = engine.sequences.max(1) as usize * replicas.len();
        Self {
            replicas,
            metrics: Metrics::new(&model_name),
            model_name,
            keys: KeyStore::open(),
            usages: Arc::default(),
            gate: queue::PriorityGate::new(serve.parallel.unwrap_or(parallel)),
            audit: None,
            weights: Weights::default(),
            test_faults: false,
            max_queue: serve.max_queue,
            in_line: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            sampling: engine.sampling.clone(),
            max_tokens: engine.max_turn_tokens,
            max_n: serve.max_n.max(1),
            sequences: engine.sequences.max(1) as usize,
            read_timeout: std::time::Duration::from_secs(serve.read_timeout_secs.max(1)),
            vocabulary: tokio::sync::OnceCell::new(),
        }
    }

    /// The engine's vocabulary; `None` for engines that do not tokenise here.
    pub(crate) async fn vocabulary(&self) -> Result<Option<Arc<Vocabulary>>, EngineError> {
        let engine = self.replicas.any().1.model.engine().clone();
        self.vocabulary
            .get_or_try_init(|| async move {
                // One engine job: the engine answers it between two decode steps.
                tokio::task::spawn_blocking(move || Vocabulary::of(engine.as_ref()))
                    .await
                    .map_err(|_| EngineError::Stopped)?
                    .map(|v| v.map(Arc::new))
            })
            .await
            .cloned()
    }
}

/// Why the server is not ready for requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// Shutdown began: requests in flight finish, new ones are turned away.
    Draining,
    /// `max_queue` requests are in flight already.
    Busy,
    /// Every replica's engine stopped.
    NoEngine,
}

impl Server {
    /// Whether a request would be taken now.
    pub fn readiness(&self) -> Result<(), NotReady> {
        if self.draining.load(Ordering::SeqCst) {
            Err(NotReady::Draining)
        } else if self.replicas.live() == 0 {
            Err(NotReady::NoEngine)
        } else if self.in_line.load(Ordering::SeqCst) >= self.max_queue {
            Err(NotReady::Busy)
        } else {
            Ok(())
        }
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_line.load(Ordering::SeqCst)
    }
}
