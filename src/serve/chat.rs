//! `POST /v1/chat/completions`: check the key (401 for a token no key has) and its limits (429
//! with `Retry-After`), render, wait for a place to generate (by the key's priority), generate
//! in the conversation's slot on its replica (`replicas.rs`), parse the output with Lilypad's parser, and answer streamed or
//! whole (`reply.rs`). Every answer carries `X-Request-Id`: the client's own, or a new one.

use super::api::{self, ApiError};
use super::limits::OverLimit;
use super::replicas::Assigned;
use super::reply::{Reply, TokensAsked};
use super::track::{self, Tracking};
use super::{authorized, conversation_key, Rejection, Server};
use crate::engine::{EngineError, GenerateRequest, GenerationStream, SequenceId, TurnRequest};
use crate::prompt::{Parser, Start, Thinking, ToolSchemas};
use crate::protocol::Message;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, Extensions, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::unbounded_channel;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A place in the queue, given back on drop.
struct InLine(Arc<Server>);

impl Drop for InLine {
    fn drop(&mut self) {
        self.0.in_line.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Cancels the generation when dropped (a whole response whose client went away).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The header a request's id comes in and goes back in.
const REQUEST_ID: &str = "x-request-id";

/// The header a client names its conversation in (for routers; recorded in the audit).
const SESSION_ID: &str = "x-session-id";

/// Header `name` when it is a sensible identifier: 1 to 200 visible ASCII characters.
fn identifier<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| (1..=200).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
}

/// The client's `X-Request-Id` when it is a sensible one, else a new one.
fn request_id(headers: &HeaderMap) -> String {
    match identifier(headers, REQUEST_ID) {
        Some(v) => v.to_string(),
        None => {
            let mut bytes = [0u8; 8];
            use ring::rand::SecureRandom;
            let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            match ring::rand::SystemRandom::new().fill(&mut bytes) {
                Ok(()) => format!("req-{}", super::keys::hex(&bytes)),
                // Without randomness: unique within this process.
                Err(_) => format!("req-{}-{n}", api::now()),
            }
        }
    }
}

/// A `Retry-After` of `secs` seconds on `r`.
fn retry_after(mut r: Response, secs: u64) -> Response {
    if let Ok(v) = header::HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

pub(super) async fn completions(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
    body: String,
) -> Response {
    let id = request_id(&headers);
    let client = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.to_string())
        // Served without connection info (a router used directly): say so, not "".
        .unwrap_or_else(|| "unknown".to_string());
    let session = identifier(&headers, SESSION_ID).map(str::to_string);
    let mut r = answer(server, &headers, body, &id, &client, session.as_deref()).await;
    if let Ok(v) = header::HeaderValue::from_str(&id) {
        r.headers_mut().insert(REQUEST_ID, v);
    }
    r
}

async fn answer(
    server: Arc<Server>,
    headers: &HeaderMap,
    body: String,
    request_id: &str,
    client: &str,
    session: Option<&str>,
) -> Response {
    let arrived = Instant::now();
    let mut record = track::draft(&server, request_id, client, session);
    let caller = match authorized(&server, headers) {
        Ok(c) => c,
        Err(e) => {
            let status = e.status.as_u16();
            track::refused(
                &server,
                record,
                "unknown",
                Rejection::Unauthorized,
                status,
                arrived,
            );
            return e.into_response();
        }
    };
    let key = caller.id.as_str();
    let params = match api::parse_request(&body, &server.sampling, server.max_tokens) {
        Ok(p) => p,
        Err(e) => {
            let status = e.status.as_u16();
            track::refused(
                &server,
                record,
                key,
                Rejection::InvalidRequest,
                status,
                arrived,
            );
            return e.into_response();
        }
    };
    drop(body);
    if let Some(r) = record.as_mut() {
        match serde_json::to_vec(&params.messages) {
            Ok(bytes) => r.prompt_sha256 = Some(super::keys::hex(&super::keys::sha256(&bytes))),
            Err(e) => tracing::warn!("the messages could not be hashed for the audit: {e}"),
        }
        if server.audit.as_ref().is_some_and(|a| a.content()) {
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
        Err(e) => {
            track::refused(
                &server,
                record,
                key,
                Rejection::InvalidRequest,
                e.status.as_u16(),
                arrived,
            );
            return e.into_response();
        }
    };
    let request = match server
        .replicas
        .renderer()
        .model
        .request(params.thinking, &turn)
    {
        Ok(r) => r,
        Err(e) => {
            let e2 = ApiError::from_engine(&e);
            track::refused(
                &server,
                record,
                key,
                rejection(&e),
                e2.status.as_u16(),
                arrived,
            );
            return e2.into_response();
        }
    };
    if server.draining.load(Ordering::SeqCst) {
        let status = StatusCode::SERVICE_UNAVAILABLE;
        track::refused(
            &server,
            record,
            key,
            Rejection::Draining,
            status.as_u16(),
            arrived,
        );
        let r = api::error(
            status,
            "server_draining",
            "the server is shutting down; send the request to another one".into(),
        );
        return retry_after(r, 5);
    }
    let held = match server.usages.admit(&caller) {
        Ok(h) => h,
        Err(over) => {
            let status = StatusCode::TOO_MANY_REQUESTS;
            track::refused(
                &server,
                record,
                key,
                Rejection::RateLimited,
                status.as_u16(),
                arrived,
            );
            let message = match over {
                OverLimit::Parallel { limit } => format!(
                    "the key {key:?} has {limit} requests in flight, its max_parallel_requests"
                ),
                OverLimit::Tokens { limit, .. } => {
                    format!("the key {key:?} used its {limit} tokens per minute; try again later")
                }
            };
            let r = api::error(status, "rate_limit_exceeded", message);
            return retry_after(r, over.retry_after_secs());
        }
    };
    if server.in_line.fetch_add(1, Ordering::SeqCst) > server.max_queue {
        server.in_line.fetch_sub(1, Ordering::SeqCst);
        let status = StatusCode::SERVICE_UNAVAILABLE;
        track::refused(
            &server,
            record,
            key,
            Rejection::QueueFull,
            status.as_u16(),
            arrived,
        );
        let r = api::error(
            status,
            "server_busy",
            format!(
                "{} requests are already waiting; try again later",
                server.max_queue
            ),
        );
        return retry_after(r, 5);
    }
    let place = InLine(server.clone());
    // Held until the generation ends: new weights wait for it, and it for them (`weights.rs`).
    let weights = server.weights.share().await;
    // The conversation's replica: the client's session, else the conversation itself.
    let route = match session {
        Some(s) => format!("session:{s}"),
        None => format!("conversation:{}", turn.sequence.0),
    };
    let Some(assigned) = server.replicas.route(&route) else {
        let e = ApiError::from_engine(&EngineError::Stopped);
        track::refused(
            &server,
            record,
            key,
            Rejection::InvalidRequest,
            e.status.as_u16(),
            arrived,
        );
        return e.into_response();
    };
    let tracking = Tracking::new(
        server.clone(),
        &caller,
        assigned.index(),
        held,
        record,
        arrived,
    );
    // Wait for a place to generate, higher priorities first. A client that leaves meanwhile
    // drops this future: its tracking ends as an abort.
    let permit = server.gate.enter(caller.priority).await;
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
        drop((permit, place, assigned, weights));
        return r;
    }
    let (tx, rx) = unbounded_channel::<Bytes>();
    let include_usage = params.include_usage;
    tokio::spawn(async move {
        // The request holds its place in line until the generation has really ended.
        let _held = (permit, place, assigned, weights);
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
fn rejection(e: &EngineError) -> Rejection {
    match e {
        EngineError::PromptTooLong { .. } | EngineError::PromptTooLarge { .. } => {
            Rejection::ContextLengthExceeded
        }
        _ => Rejection::InvalidRequest,
    }
}
