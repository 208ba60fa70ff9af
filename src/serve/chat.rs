//! `POST /v1/chat/completions`: through the door (`door.rs`: the key, its limits, the drain and
//! the queue), read the request, render, wait for a place to generate (by the key's priority),
//! generate in the conversation's slot on its replica (`replicas.rs`), parse the output with
//! Lilypad's parser, and answer streamed or whole (`reply.rs`). Every answer carries
//! `X-Request-Id`: the client's own, or a new one.

use super::api::{self, ApiError};
use super::door::{self, Endpoint};
use super::replicas::Assigned;
use super::reply::{Reply, TokensAsked};
use super::track::Tracking;
use super::{conversation_key, Rejection, Server};
use crate::engine::{EngineError, GenerateRequest, GenerationStream, SequenceId, TurnRequest};
use crate::prompt::{Parser, Start, Thinking, ToolSchemas};
use crate::protocol::Message;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, Extensions, HeaderMap};
use axum::response::{IntoResponse, Response};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::unbounded_channel;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Cancels the generation when dropped (a whole response whose client went away).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

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
    let params = match api::parse_request(&body, &server.sampling, server.max_tokens) {
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
    // Held until the generation ends: new weights wait for it, and it for them (`weights.rs`).
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
    let priority = admitted.caller.priority;
    let tracking = Tracking::new(admitted, assigned.index());
    // Wait for a place to generate, higher priorities first. A client that leaves meanwhile
    // drops this future: its tracking ends as an abort.
    let permit = server.gate.enter(priority).await;
    let (generated, tracking) =
        match generate_off(&server, &route, assigned, request, tracking).await {
            Ok(g) => g,
            Err(e) => return e.into_response(),
        };
    let (stream, assigned) = match generated {
        Ok(s) => s,
        Err(e) => {
            let a = ApiError::from_engine(&e);
            tracking.refused(rejection(&e), a.status.as_u16());
            return a.into_response();
        }
    };
    let cancel = stream.canceller();
    let events = stream.events;
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
    let parser =
        Parser::new(ToolSchemas::new(&params.tools), start).with_first_call_number(prior_calls);
    let id = format!(
        "chatcmpl-{}-{}",
        api::now(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    let reply = Reply {
        id,
        created: api::now(),
        model: server.model_name.clone(),
        parser,
        events,
        tokens,
        pending: Vec::new(),
        tracking,
    };
    if !params.stream {
        let _cancel = CancelOnDrop(cancel);
        let r = reply.whole().await;
        drop((permit, assigned, weights));
        return r;
    }
    let (tx, rx) = unbounded_channel::<Bytes>();
    let include_usage = params.include_usage;
    tokio::spawn(async move {
        // The request holds its place in line until the generation has really ended.
        let _held = (permit, assigned, weights);
        reply.stream(tx, cancel, include_usage).await;
    });
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

/// Start `request` on its replica; when that replica's engine has stopped, mark it failed and
/// start it on the replica the conversation moves to (read in full there), until one takes it
/// or none lives.
pub(super) fn generate(
    server: &Server,
    route: &str,
    mut assigned: Assigned,
    request: GenerateRequest,
    tracking: &mut Tracking,
) -> Result<(GenerationStream, Assigned), EngineError> {
    loop {
        match assigned.model().generate(request.clone()) {
            Ok(stream) => return Ok((stream, assigned)),
            Err(EngineError::Stopped) => {
                server.replicas.failed(assigned.index());
                assigned = server.replicas.route(route).ok_or(EngineError::Stopped)?;
                tracking.moved(assigned.index());
            }
            Err(e) => return Err(e),
        }
    }
}

/// What [`generate_off`] gives back: the generation (or the engine's refusal) and the tracking.
pub(super) type Started = (Result<(GenerationStream, Assigned), EngineError>, Tracking);

/// [`generate`] on a blocking thread: the in-process engine tokenises a text prompt on the
/// caller's thread (so that a long prompt never holds up the engine's), and that must not be
/// one of the runtime's few, which answer every other request. Fails only if that thread
/// panicked (the tracking then ended as an abort).
pub(super) async fn generate_off(
    server: &Arc<Server>,
    route: &str,
    assigned: Assigned,
    request: GenerateRequest,
    mut tracking: Tracking,
) -> Result<Started, ApiError> {
    let (s, r) = (server.clone(), route.to_string());
    tokio::task::spawn_blocking(move || {
        let generated = generate(&s, &r, assigned, request, &mut tracking);
        (generated, tracking)
    })
    .await
    .map_err(|_| ApiError::from_engine(&EngineError::Stopped))
}

/// The rejection reason of an engine's refusal.
pub(super) fn rejection(e: &EngineError) -> Rejection {
    match e {
        EngineError::PromptTooLong { .. } | EngineError::PromptTooLarge { .. } => {
            Rejection::ContextLengthExceeded
        }
        _ => Rejection::InvalidRequest,
    }
}
