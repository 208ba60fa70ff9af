//! The routes outside the model: `GET /metrics` and the readiness probe (open to anyone who
//! can reach the port), and `GET /v1/models` (through the door like every keyed endpoint).
//! Does not own the metrics themselves (`metrics.rs`) or the readiness rule (`server.rs`).

use super::api;
use super::door::{self, Endpoint};
use super::server::{NotReady, Server};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The metrics in the exposition format (see [`Metrics`]); like the probes, open to anyone who
/// can reach the port.
pub(super) async fn metrics(State(server): State<Arc<Server>>) -> Response {
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
pub(super) async fn ready(State(server): State<Arc<Server>>) -> Response {
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

/// The served model, with the weights in force.
pub(super) async fn models(
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
