//! `lilypad serve`: the in-process engine behind an OpenAI-compatible HTTP API, so that a team
//! can share one machine's model. Routes: `POST /v1/chat/completions` (streamed as server-sent
//! events, or whole), `GET /v1/models`, and the probes `GET /health/live` (the process
//! answers), `GET /health/ready` (it takes requests now: not draining, queue not full; `GET
//! /health` is the same).
//!
//! Shutting down ([`drain_then`], on SIGTERM or Ctrl-C): the server stops taking requests (503
//! with `Retry-After`, and not ready), lets those in flight finish, then returns so that the
//! process exits 0, as Kubernetes expects of a pod it stops.
//!
//! The door (`door.rs`): every endpoint but the probes and `/metrics` lets its requests in
//! through one function, which checks the key, its role, the body's form, and for the model
//! endpoints the drain, the key's limits and the queue bound, and counts and audits every
//! request once, by endpoint.
//!
//! Keys (`keys.rs`, `limits.rs`, `queue.rs`): with `--keys FILE` each bearer token belongs to a
//! key with an id, limits (429 with `Retry-After` beyond them), a priority (requests waiting
//! for a place to generate go in higher first) and a role (`"admin": true` for the operator's
//! endpoints); SIGHUP reads the file again ([`reload_keys_on_hangup`]). The `--api-key-env`
//! token is the key `default`, an admin. With `--audit DIR` each request leaves one JSON line
//! (`audit.rs`, written by `door.rs`).
//!
//! Choices (`choices.rs`): a request may ask for `n` choices of one prompt (1 to `[serve]
//! max_n`); it passes the door once, the prompt is read once and forked into the choices'
//! sequences, and each choice takes its own place to generate.
//!
//! Replicas (`replicas.rs`): `--replicas N` puts N engines behind the one front end; each
//! conversation stays on the replica that holds its memory, and the conversations of a replica
//! whose engine stopped move to the others. `faults.rs` is a test-only route (the operator's) that stops one.
//! With `--weight-updates`, `POST /update_weights` (the operator's) puts new weights in every replica's place
//! between requests (`weights.rs`).
//!
//! Owns: the HTTP surface (request fields, response and chunk shapes, errors in OpenAI's
//! `{"error": {...}}` form), the bearer-token check, the request queue, and the mapping of
//! requests to conversation slots. Replies come back parsed the way SGLang's `qwen3` and
//! `qwen3_coder` parsers return them: `reasoning_content`, `content` and `tool_calls` (typed
//! by the request's tool schemas with Lilypad's own parser).
//!
//! Invariants:
//! - concurrent requests of different conversations decode together, each in its own engine
//!   sequence (`[engine] sequences` at once; the engine queues the others); exactly
//!   `max_queue` requests of the model endpoints may be in flight, beyond which the server
//!   answers 503 with `Retry-After`. Two requests of one conversation run one after the other;
//! - a client that goes away cancels its request (the engine stops it within one token; the
//!   others go on);
//! - each conversation keeps its own memory, so interleaved conversations keep their prefix
//!   reuse: in a sequence of the context while there is room, parked in host memory otherwise
//!   (`crate::engine::llama`, least recently used dropped first). A conversation is known by
//!   its system prompt and first user message, which an agent never rewrites (see
//!   `crate::protocol::conversation_key`);
//! - the listening address is a loopback one unless `allow_remote` is set (checked by the
//!   command, `crate::cli`).
//!
//! Does not own: the engine (`crate::engine`), rendering and parsing (`crate::prompt`).

mod api;
mod audit;
mod backend;
mod chat;
mod choices;
mod completions;
mod connections;
mod door;
// The test-only fault route is not in release builds: the tests run debug builds.
#[cfg(debug_assertions)]
mod faults;
mod keys;
mod limits;
mod metrics;
mod queue;
mod replicas;
mod reply;
mod status;
mod tokenize;
mod track;
mod vocabulary;
mod weights;

pub use vocabulary::Vocabulary;

pub use crate::protocol::conversation_key;
pub use audit::{AuditError, AuditLog, AuditRecord};
pub use backend::ServedModel;
pub use connections::serve_with_limits;
pub use door::Endpoint;
#[cfg(debug_assertions)]
pub use faults::TEST_FAULTS_ENV;
pub use keys::{Caller, KeyStore, KeyTable, KeysError, Limits, Role, DEFAULT_KEY_ID, RESERVED_IDS};
pub use metrics::{Metrics, Rejection};
pub use replicas::{HaltForTests, OccupancyReader, Replica, Replicas};
pub use weights::{LoadError, WeightLoader, Weights};

use crate::engine::{EngineError, EngineSettings, SamplingSettings};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// Settings of `lilypad serve` (the `[serve]` section of the config file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// Address and port to listen on.
    pub listen: String,
    /// Allow a non-loopback listening address (then set `api_key_env` too).
    pub allow_remote: bool,
    /// Environment variable holding the token clients must send (`Authorization: Bearer`).
    pub api_key_env: Option<String>,
    /// Name of the served model in `/v1/models` (default: the model file's name).
    pub model_name: Option<String>,
    /// Requests that may be in flight (generating or waiting for a sequence); more are turned
    /// away with 503.
    pub max_queue: usize,
    /// Generations at once (each choice of a request is one); the others wait, higher key
    /// priority first (default: the engine's `sequences` times the replicas).
    pub parallel: Option<usize>,
    /// API keys with their limits and priorities, JSON Lines (`--keys FILE`); re-read on
    /// SIGHUP.
    pub keys_file: Option<PathBuf>,
    /// Directory of the audit trail, one JSON line per request (`--audit DIR`).
    pub audit_dir: Option<PathBuf>,
    /// Audit lines hold the request's messages too (`--audit-content`).
    pub audit_content: bool,
    /// Remove audit files of days older than this.
    pub audit_retention_days: Option<u32>,
    /// Engines behind the one front end (`--replicas N`), each with its own context (default:
    /// one per GPU device, one on a CPU-only build).
    pub replicas: Option<usize>,
    /// Seconds a client has to send a request's headers, and then its body; a keep-alive
    /// connection idle this long is closed.
    pub read_timeout_secs: u64,
    /// The most choices one request may ask for (`"n"`, see `choices.rs`).
    pub max_n: usize,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_string(),
            allow_remote: false,
            api_key_env: None,
            model_name: None,
            max_queue: 64,
            parallel: None,
            keys_file: None,
            audit_dir: None,
            audit_content: false,
            audit_retention_days: None,
            replicas: None,
            read_timeout_secs: 30,
            max_n: 16,
        }
    }
}

/// Errors of starting the server.
#[derive(Debug, Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr} is not a valid listening address (use HOST:PORT, e.g. 127.0.0.1:8080)")]
    BadAddress { addr: String },
    #[error("refusing to listen on {addr}: it is not a loopback address; pass --allow-remote (and protect it with --api-key-env NAME) to serve other machines")]
    NotLoopback { addr: String },
    #[error("environment variable {name} (from --api-key-env) is not set or empty")]
    MissingKey { name: String },
    #[error(transparent)]
    Keys(#[from] KeysError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

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

/// Check a listening address: valid, and loopback unless `allow_remote`.
pub fn check_listen(addr: &str, allow_remote: bool) -> Result<std::net::SocketAddr, ServeError> {
    let parsed: std::net::SocketAddr = addr.parse().map_err(|_| ServeError::BadAddress {
        addr: addr.to_string(),
    })?;
    if !parsed.ip().is_loopback() && !allow_remote {
        return Err(ServeError::NotLoopback {
            addr: addr.to_string(),
        });
    }
    Ok(parsed)
}

/// The routes, over shared state.
pub fn router(server: Arc<Server>) -> Router {
    let routes = Router::new()
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/completions", post(completions::completions))
        .route("/tokenize", post(tokenize::tokenize))
        .route("/detokenize", post(tokenize::detokenize))
        .route("/v1/models", get(models))
        .route("/update_weights", post(weights::update))
        .route("/update_weights_from_disk", post(weights::update))
        .route("/get_weight_version", get(weights::version))
        .route("/metrics", get(metrics))
        .route("/health/live", get(|| async { "ok" }))
        .route("/health/ready", get(ready))
        .route("/health", get(ready));
    #[cfg(debug_assertions)]
    let routes = routes.route("/test/replicas/{index}/halt", post(faults::halt));
    routes
        .fallback(|| async {
            api::error(StatusCode::NOT_FOUND, "not_found", "no such route".into())
        })
        .with_state(server)
}

/// The metrics in the exposition format (see [`Metrics`]); like the probes, open to anyone who
/// can reach the port.
async fn metrics(State(server): State<Arc<Server>>) -> Response {
    for (i, replica) in server.replicas.snapshot() {
        if let Some(read) = &replica.occupancy {
            server.metrics.engine_memory(i, read());
        }
    }
    match server.metrics.encode() {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => api::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "metrics_error",
            "the metrics could not be written".into(),
        ),
    }
}

/// 200 when the server takes requests now, else 503 with why and `Retry-After`.
async fn ready(State(server): State<Arc<Server>>) -> Response {
    let why = match server.readiness() {
        Ok(()) => return (StatusCode::OK, "ready").into_response(),
        Err(NotReady::Draining) => "draining",
        Err(NotReady::Busy) => "busy",
        Err(NotReady::NoEngine) => "no engine runs",
    };
    let mut r = (StatusCode::SERVICE_UNAVAILABLE, why).into_response();
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("5"),
    );
    r
}

/// Wait for `signal`, then drain: turn new requests away and wait until none is in flight. The
/// future ends when the server may stop (give it to `axum::serve(..).with_graceful_shutdown`).
pub async fn drain_then(server: Arc<Server>, signal: impl std::future::Future<Output = ()>) {
    signal.await;
    server.draining.store(true, Ordering::SeqCst);
    tracing::info!(
        in_flight = server.in_flight(),
        "shutting down: new requests are turned away, those in flight finish"
    );
    while server.in_flight() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// SIGTERM (what Kubernetes and systemd send) or Ctrl-C, whichever comes first.
pub async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                return;
            }
            Err(e) => tracing::warn!("SIGTERM cannot be caught ({e}); only Ctrl-C drains"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Serve on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, server: Arc<Server>) {
    let timeout = server.read_timeout;
    serve_with_limits(listener, router(server), timeout, std::future::pending()).await;
}

/// The key of `Authorization: Bearer TOKEN` (see [`KeyStore::caller`]), or 401.
pub(crate) fn authorized(server: &Server, headers: &HeaderMap) -> Result<Caller, api::ApiError> {
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    server.keys.caller(token).ok_or_else(|| api::ApiError {
        status: StatusCode::UNAUTHORIZED,
        kind: "invalid_api_key",
        message: "missing or unknown API key (send Authorization: Bearer KEY)".into(),
    })
}

/// Read the keys file again on each SIGHUP, for the life of the process; a file that cannot be
/// read keeps the keys in use (and says why in the log). Without a keys file, SIGHUP is logged
/// and ignored (rather than ending the process).
pub async fn reload_keys_on_hangup(server: Arc<Server>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = match signal(SignalKind::hangup()) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(
                    "SIGHUP cannot be caught ({e}); the keys file is read only at start"
                );
                return;
            }
        };
        while hup.recv().await.is_some() {
            match server.keys.reload() {
                Ok(_) if server.keys.file().is_none() => {
                    tracing::info!("SIGHUP: no keys file to read")
                }
                Ok(n) => tracing::info!("SIGHUP: read {n} keys"),
                Err(e) => tracing::warn!("SIGHUP: {e}; the keys in use stay"),
            }
        }
    }
    #[cfg(not(unix))]
    let _ = server;
}

async fn models(
    State(server): State<Arc<Server>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
) -> Response {
    let admitted = match door::enter(
        &server,
        Endpoint::Models,
        &extensions,
        &headers,
        axum::body::Body::empty(),
    )
    .await
    {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let r = axum::Json(serde_json::json!({
        "object": "list",
        "data": [{
            "id": server.model_name,
            "object": "model",
            "created": api::now(),
            "owned_by": "lilypad",
            "weight_version": server.weights.version(),
        }],
    }))
    .into_response();
    admitted.answer(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_unless_told_otherwise() {
        assert!(check_listen("127.0.0.1:8080", false).is_ok());
        assert!(check_listen("[::1]:8080", false).is_ok());
        let err = check_listen("0.0.0.0:8080", false).unwrap_err().to_string();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(check_listen("0.0.0.0:8080", true).is_ok());
        assert!(check_listen("localhost", false).is_err());
    }
}
