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
mod lifecycle;
// The test-only fault route is not in release builds: the tests run debug builds.
#[cfg(debug_assertions)]
mod faults;
mod keys;
mod limits;
mod metrics;
mod probes;
mod queue;
mod replicas;
mod reply;
mod server;
mod settings;
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
pub use lifecycle::{drain_then, reload_keys_on_hangup, termination};
pub use metrics::{Metrics, Rejection};
pub use replicas::{HaltForTests, OccupancyReader, Replica, Replicas};
pub use server::{NotReady, Server};
pub use settings::{check_listen, ServeError, ServeSettings};
pub use weights::{LoadError, WeightLoader, Weights};

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// The routes, over shared state.
pub fn router(server: Arc<Server>) -> Router {
    let routes = Router::new()
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/completions", post(completions::completions))
        .route("/tokenize", post(tokenize::tokenize))
        .route("/detokenize", post(tokenize::detokenize))
        .route("/v1/models", get(probes::models))
        .route("/update_weights", post(weights::update))
        .route("/update_weights_from_disk", post(weights::update))
        .route("/get_weight_version", get(weights::version))
        .route("/metrics", get(probes::metrics))
        .route("/health/live", get(|| async { "ok" }))
        .route("/health/ready", get(probes::ready))
        .route("/health", get(probes::ready));
    #[cfg(debug_assertions)]
    let routes = routes.route("/test/replicas/{index}/halt", post(faults::halt));
    routes
        .fallback(|| async {
            api::error(StatusCode::NOT_FOUND, "not_found", "no such route".into())
        })
        .with_state(server)
}

/// Serve on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, server: Arc<Server>) {
    let timeout = server.read_timeout;
    serve_with_limits(listener, router(server), timeout, std::future::pending()).await;
}
