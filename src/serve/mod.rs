//! `lilypad serve`: the in-process engine behind an OpenAI-compatible HTTP API, so that a team
//! can share one machine's model. Routes: `POST /v1/chat/completions` (streamed as server-sent
//! events, or whole), `GET /v1/models`, `GET /health`.
//!
//! Owns: the HTTP surface (request fields, response and chunk shapes, errors in OpenAI's
//! `{"error": {...}}` form), the bearer-token check, the request queue, and the mapping of
//! requests to conversation slots. Replies come back parsed the way SGLang's `qwen3` and
//! `qwen3_coder` parsers return them: `reasoning_content`, `content` and `tool_calls` (typed
//! by the request's tool schemas with Lilypad's own parser).
//!
//! Invariants:
//! - concurrent requests of different conversations decode together, each in its own engine
//!   sequence (`[engine] sequences` at once; the engine queues the others); at most
//!   `max_queue` requests are in flight, beyond which the server answers 503 with
//!   `Retry-After`. Two requests of one conversation run one after the other;
//! - a client that goes away cancels its request (the engine stops it within one token; the
//!   others go on);
//! - each conversation keeps its own memory, so interleaved conversations keep their prefix
//!   reuse: in a sequence of the context while there is room, parked in host memory otherwise
//!   (`crate::engine::llama`, least recently used dropped first). A conversation is known by
//!   its system prompt and first user message, which an agent never rewrites (see
//!   `backend::conversation_key`);
//! - the listening address is a loopback one unless `allow_remote` is set (checked by the
//!   command, `crate::cli`).
//!
//! Does not own: the engine (`crate::engine`), rendering and parsing (`crate::prompt`).

mod api;
mod backend;
mod chat;
mod status;

pub use backend::{conversation_key, ServedModel};

use crate::engine::{EngineSettings, SamplingSettings};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicUsize;
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
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_string(),
            allow_remote: false,
            api_key_env: None,
            model_name: None,
            max_queue: 64,
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
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

/// Everything the handlers share.
pub struct Server {
    pub backend: ServedModel,
    pub model_name: String,
    /// The bearer token clients must present, if any.
    pub api_key: Option<String>,
    pub max_queue: usize,
    /// Requests in flight (generating or waiting for a sequence).
    pub(crate) in_line: AtomicUsize,
    /// Server defaults for requests that leave sampling fields out.
    pub sampling: SamplingSettings,
    pub max_tokens: u32,
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
        Self {
            backend,
            model_name,
            api_key: None,
            max_queue: serve.max_queue,
            in_line: AtomicUsize::new(0),
            sampling: engine.sampling.clone(),
            max_tokens: engine.max_turn_tokens,
        }
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
    Router::new()
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { "ok" }))
        // Long conversations with big tool results exceed axum's 2 MB default.
        .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
        .fallback(|| async {
            api::error(StatusCode::NOT_FOUND, "not_found", "no such route".into())
        })
        .with_state(server)
}

/// Serve on `listener` until the process ends.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Arc<Server>,
) -> Result<(), ServeError> {
    axum::serve(listener, router(server)).await?;
    Ok(())
}

/// `Authorization: Bearer KEY` matches, compared in constant time.
pub(crate) fn authorized(server: &Server, headers: &HeaderMap) -> Result<(), api::ApiError> {
    let Some(key) = &server.api_key else {
        return Ok(());
    };
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let (a, b) = (given.as_bytes(), key.as_bytes());
    let same = a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0;
    if same {
        Ok(())
    } else {
        Err(api::ApiError {
            status: StatusCode::UNAUTHORIZED,
            kind: "invalid_api_key",
            message: "missing or wrong API key (send Authorization: Bearer KEY)".into(),
        })
    }
}

async fn models(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    if let Err(e) = authorized(&server, &headers) {
        return e.into_response();
    }
    axum::Json(serde_json::json!({
        "object": "list",
        "data": [{
            "id": server.model_name,
            "object": "model",
            "created": api::now(),
            "owned_by": "lilypad",
        }],
    }))
    .into_response()
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
