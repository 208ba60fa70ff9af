//! The test-only fault route, compiled into debug builds only (the ones tests run): `POST /test/replicas/{index}/halt` stops replica `index`'s
//! engine thread as a failure would, so that the project's tests can check that its
//! conversations move to the other replicas and their replies stay right. It answers 404 (as
//! any unknown route) unless the process was started with `LILYPAD_TEST_FAULTS=1`
//! ([`Server::test_faults`]), and is the operator's, like every route that changes what all
//! users are served (`door.rs`). Not for
//! production use: it exists only to test failure handling.
//!
//! Does not own: noticing the failure (the next request routed there finds the engine stopped,
//! `chat.rs`), moving conversations (`replicas.rs`).

use super::api;
use super::door::{self, Endpoint};
use super::server::Server;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{Extensions, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The environment variable that opens the fault route; tests only.
pub const TEST_FAULTS_ENV: &str = "LILYPAD_TEST_FAULTS";

pub(super) async fn halt(
    State(server): State<Arc<Server>>,
    Path(index): Path<usize>,
    extensions: Extensions,
    headers: HeaderMap,
) -> Response {
    if !server.test_faults {
        return api::error(StatusCode::NOT_FOUND, "not_found", "no such route".into());
    }
    let admitted = match door::enter(
        &server,
        Endpoint::Faults,
        &extensions,
        &headers,
        Body::empty(),
    )
    .await
    {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let r = halted(&server, index).await;
    admitted.answer(r)
}

/// Halt replica `index`, answered.
async fn halted(server: &Server, index: usize) -> Response {
    let Some((_, replica)) = server
        .replicas
        .snapshot()
        .into_iter()
        .find(|(i, _)| *i == index)
    else {
        return api::bad(format!("there is no replica {index}")).into_response();
    };
    if replica.halt_for_tests.is_none() {
        return api::bad("this replica's engine cannot be halted").into_response();
    }
    // Waits for the engine thread to finish its current decode step.
    let halted = tokio::task::spawn_blocking(move || {
        if let Some(h) = &replica.halt_for_tests {
            h();
        }
    })
    .await;
    match halted {
        Ok(()) => {
            tracing::warn!(
                replica = index,
                "test fault: replica {index}'s engine halted"
            );
            (StatusCode::OK, "halted").into_response()
        }
        Err(_) => api::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "halt_failed",
            "the halt did not finish".into(),
        ),
    }
}
