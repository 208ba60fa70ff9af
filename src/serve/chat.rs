//! `POST /v1/chat/completions`: through the door (`door.rs`: the key, its limits, the drain and
//! the queue), read the request, render, wait for a place to generate (by the key's priority),
//! generate its `n` choices (`choices.rs`: the first in the conversation's slot on its replica,
//! `replicas.rs`), parse each choice's output with Lilypad's parser, and answer streamed or
//! whole (`reply.rs`). Every answer carries `X-Request-Id`: the client's own, or a new one.

use super::api::{self, ApiError};
use super::choices::{self, rejection, Ask};
use super::door::{self, Endpoint};
use super::metrics::Rejection;
use super::reply::{Choice, Reply, TokensAsked};
use super::server::Server;
use super::track::Tracking;
use crate::engine::{EngineError, SequenceId, TurnRequest};
use crate::prompt::{Parser, Start, Thinking, ToolSchemas};
use crate::protocol::conversation_key;
use crate::protocol::Message;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, Extensions, HeaderMap};
use axum::response::{IntoResponse, Response};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::unbounded_channel;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(super) async fn completions(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match door::enter(&server, Endpoint::Chat, &extensions, &headers, body).await {
        Ok(admitted) => {
            let id = admitted.request_id.clone();
            door::with_id(answer(server, admitted).await, &id)
        }
        Err(refused) => refused,
    }
}

async fn answer(server: Arc<Server>, mut admitted: door::Admitted) -> Response {
    let body = admitted.take_body();
    let params = match api::parse_request(&body, &server.sampling, server.max_tokens, server.max_n)
    {
        Ok(p) => p,
        Err(e) => return admitted.refuse(Rejection::InvalidRequest, e),
    };
    drop(body);
    let content = server.audit.as_ref().is_some_and(|a| a.content());
    if let Some(r) = admitted.record() {
        match serde_json::to_vec(&params.messages) {
            Ok(bytes) => r.prompt_sha256 = Some(super::keys::hex(&super::keys::sha256(&bytes))),
            Err(e) => tracing::warn!("the messages could not be hashed for the audit: {e}"),
        }
        if content {
            match serde_json::to_value(&params.messages) {
                Ok(v) => r.messages = Some(v),
                Err(e) => tracing::warn!("the messages could not be kept for the audit: {e}"),
            }
        }
    }
    let turn = TurnRequest {
        messages: params.messages.clone(),
        tools: params.tools.clone(),
        max_tokens: params.max_tokens,
        sampling: params.sampling.clone(),
        sequence: SequenceId(conversation_key(&params.messages)),
        pin_turn: false,
        report: params.report,
    };
    let tokens = match TokensAsked::of(&server, params.logprobs, params.return_token_ids).await {
        Ok(t) => t,
        Err(e) => return admitted.refuse(Rejection::InvalidRequest, e),
    };
    let request = match server
        .replicas
        .renderer()
        .model
        .request(params.thinking, &turn)
    {
        Ok(r) => r,
        Err(e) => return admitted.refuse(rejection(&e), ApiError::from_engine(&e)),
    };
    // Held until the generations end: new weights wait for them, and they for them
    // (`weights.rs`).
    let weights = server.weights.share().await;
    // The conversation's replica: the client's session, else the conversation itself.
    let route = match &admitted.session {
        Some(s) => format!("session:{s}"),
        None => format!("conversation:{}", turn.sequence.0),
    };
    let Some(assigned) = server.replicas.route(&route) else {
        let e = ApiError::from_engine(&EngineError::Stopped);
        return admitted.refuse(Rejection::InvalidRequest, e);
    };
    let ask = Ask {
        request,
        n: params.n,
        route,
        priority: admitted.caller.priority,
    };
    let tracking = Tracking::new(admitted, assigned.index());
    let (generating, tracking) =
        match choices::start(&server, ask, assigned, tracking, weights).await {
            Ok(g) => g,
            Err(refused) => return refused,
        };
    let prior_calls = params
        .messages
        .iter()
        .map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.len(),
            _ => 0,
        })
        .sum();
    let start = match params.thinking {
        Thinking::On => Start::Reasoning,
        Thinking::Off => Start::Content,
    };
    let choices = (0..params.n)
        .map(|_| {
            Choice::new(
                Parser::new(ToolSchemas::new(&params.tools), start)
                    .with_first_call_number(prior_calls),
            )
        })
        .collect();
    let id = format!(
        "chatcmpl-{}-{}",
        api::now(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    let reply = Reply {
        id,
        created: api::now(),
        model: server.model_name.clone(),
        choices,
        generating,
        tokens,
        tracking,
    };
    if !params.stream {
        return reply.whole().await;
    }
    let (tx, rx) = unbounded_channel::<Bytes>();
    let include_usage = params.include_usage;
    // Each choice holds its place in line until its generation has really ended
    // (`choices.rs`); the reply only writes.
    tokio::spawn(reply.stream(tx, include_usage));
    let body = Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    }));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
