//! `POST /v1/chat/completions`: render, wait for the engine, generate in the conversation's
//! slot, parse the output with Lilypad's parser, and answer streamed or whole.
//!
//! Tool calls are sent whole (name and all arguments in one delta) when the parser completes
//! them; ids are `call_{n}`, numbered after the calls already in the conversation so that they
//! stay unique within it. A call the parser cannot read is left out (and logged).

use super::api::{self, ApiError, Header};
use super::Vocabulary;
use super::{authorized, conversation_key, Rejection, Server};
use crate::engine::{EngineError, EngineEvent, Generation, SampledToken, SequenceId, TurnRequest};
use crate::prompt::{ParseEvent, ParsedTurn, Parser, Start, Thinking, ToolSchemas};
use crate::protocol::Message;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

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

pub(super) async fn completions(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let arrived = Instant::now();
    if let Err(e) = authorized(&server, &headers) {
        server.metrics.rejected(Rejection::Unauthorized);
        return e.into_response();
    }
    let params = match api::parse_request(&body, &server.sampling, server.max_tokens) {
        Ok(p) => p,
        Err(e) => {
            server.metrics.rejected(Rejection::InvalidRequest);
            return e.into_response();
        }
    };
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
            server.metrics.rejected(Rejection::InvalidRequest);
            return e.into_response();
        }
    };
    let request = match server.backend.request(params.thinking, &turn) {
        Ok(r) => r,
        Err(e) => {
            server.metrics.rejected(rejection(&e));
            return ApiError::from_engine(&e).into_response();
        }
    };
    if server.draining.load(Ordering::SeqCst) {
        server.metrics.rejected(Rejection::Draining);
        let mut r = api::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_draining",
            "the server is shutting down; send the request to another one".into(),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
        return r;
    }
    if server.in_line.fetch_add(1, Ordering::SeqCst) > server.max_queue {
        server.in_line.fetch_sub(1, Ordering::SeqCst);
        server.metrics.rejected(Rejection::QueueFull);
        let mut r = api::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_busy",
            format!(
                "{} requests are already waiting; try again later",
                server.max_queue
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
        return r;
    }
    let place = InLine(server.clone());
    // No lock: the engine decodes concurrent requests together (one sequence each) and queues
    // those beyond its sequences itself.
    let stream = match server.backend.generate(request) {
        Ok(s) => s,
        Err(e) => {
            server.metrics.rejected(rejection(&e));
            return ApiError::from_engine(&e).into_response();
        }
    };
    server.metrics.taken();
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
        timing: Timing {
            server: server.clone(),
            arrived,
            first: None,
            last: None,
            ended: false,
        },
    };
    if !params.stream {
        let _cancel = CancelOnDrop(cancel);
        let r = reply.whole().await;
        drop(place);
        return r;
    }
    let (tx, rx) = unbounded_channel::<Bytes>();
    let include_usage = params.include_usage;
    tokio::spawn(async move {
        // The request holds its place in line until the generation has really ended.
        let _held = place;
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

/// The end of a generation and the turn's settled events.
type Settled = (Generation, Vec<ParseEvent>);

/// The rejection reason of an engine's refusal.
fn rejection(e: &EngineError) -> Rejection {
    match e {
        EngineError::PromptTooLong { .. } | EngineError::PromptTooLarge { .. } => {
            Rejection::ContextLengthExceeded
        }
        _ => Rejection::InvalidRequest,
    }
}

/// One reply's times, for the metrics; a reply dropped before its end counts as aborted.
struct Timing {
    server: Arc<Server>,
    arrived: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
    ended: bool,
}

impl Timing {
    fn token(&mut self) {
        let now = Instant::now();
        match self.last {
            None => {
                self.first = Some(now);
                self.server.metrics.first_token(now - self.arrived);
            }
            Some(last) => self.server.metrics.next_token(now - last),
        }
        self.last = Some(now);
    }

    fn end(&mut self, reason: &str, g: Option<&Generation>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let to_first = self.first.map(|f| f - self.arrived);
        self.server.metrics.ended(
            self.first.is_some(),
            reason,
            self.arrived.elapsed(),
            to_first,
            g,
        );
    }
}

impl Drop for Timing {
    fn drop(&mut self) {
        self.end("abort", None);
    }
}

/// The finish reason the metrics count: the API's, or `abort` for a cancelled reply.
fn finished_reason(g: &Generation, has_calls: bool) -> &'static str {
    match g.stop {
        crate::engine::StopReason::Cancelled => "abort",
        stop => api::finish_reason(stop, has_calls),
    }
}

/// One reply in progress.
struct Reply {
    id: String,
    created: u64,
    model: String,
    parser: Parser,
    events: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>,
    tokens: TokensAsked,
    /// Tokens sampled and not yet sent with a chunk.
    pending: Vec<SampledToken>,
    timing: Timing,
}

/// What a request asked to see of the tokens, and the vocabulary that shows them.
pub(super) struct TokensAsked {
    vocabulary: Option<Arc<Vocabulary>>,
    logprobs: bool,
    ids: bool,
}

impl TokensAsked {
    /// For a request asking for log-probabilities and/or ids: an error when the engine
    /// cannot report them.
    pub(super) async fn of(server: &Server, logprobs: bool, ids: bool) -> Result<Self, ApiError> {
        let vocabulary = if logprobs || ids {
            match server.vocabulary().await {
                Ok(Some(v)) => Some(v),
                Ok(None) => {
                    return Err(api::bad(
                        "this server's engine does not report tokens (\"logprobs\", \"return_token_ids\"): only the in-process engine does",
                    ))
                }
                Err(e) => return Err(ApiError::from_engine(&e)),
            }
        } else {
            None
        };
        Ok(Self {
            vocabulary,
            logprobs,
            ids,
        })
    }

    /// Add what was asked of `sampled` to choice 0 of `body` (a response or a chunk).
    fn decorate(&self, body: &mut Value, sampled: &[SampledToken]) {
        let Some(v) = &self.vocabulary else { return };
        let choice = &mut body["choices"][0];
        if self.logprobs {
            choice["logprobs"] = v.chat_logprobs(sampled);
        }
        if self.ids {
            choice["token_ids"] = json!(sampled.iter().map(|t| t.id).collect::<Vec<_>>());
        }
    }

    /// Add the prompt's ids to `body` when asked (vLLM's top-level `prompt_token_ids`).
    fn prompt_ids(&self, body: &mut Value, g: &Generation) {
        if self.ids {
            body["prompt_token_ids"] = json!(g.prompt_tokens);
        }
    }
}

impl Reply {
    fn header(&self) -> Header<'_> {
        Header {
            id: &self.id,
            created: self.created,
            model: &self.model,
        }
    }

    /// Parse events until the end; `Err` carries the engine's failure.
    /// The next live events; with the generation's end, also the settled turn's events.
    async fn next(&mut self) -> Option<Result<(Vec<ParseEvent>, Option<Settled>), EngineError>> {
        let ev = self.events.recv().await?;
        Some(match ev {
            EngineEvent::Piece(p) => {
                self.timing.token();
                Ok((self.parser.push(&p), None))
            }
            // The in-process engines send raw text only.
            EngineEvent::Parsed(_) => Ok((Vec::new(), None)),
            EngineEvent::Sampled(t) => {
                self.pending.push(t);
                Ok((Vec::new(), None))
            }
            EngineEvent::Done(g) => {
                let tail = self.parser.finish();
                Ok((tail, Some((g, self.parser.settle()))))
            }
            EngineEvent::Failed(e) => {
                self.timing.end("error", None);
                Err(e)
            }
        })
    }

    async fn whole(mut self) -> Response {
        loop {
            match self.next().await {
                // Live events are only for streaming; the settled ones come with `done`.
                Some(Ok((_, done))) => {
                    if let Some((g, settled)) = done {
                        for e in &settled {
                            log_error(e);
                        }
                        let turn = ParsedTurn::from_events(settled);
                        log_done(&self.id, &g);
                        let reason = finished_reason(&g, !turn.tool_calls.is_empty());
                        self.timing.end(reason, Some(&g));
                        let mut body = api::completion(&self.header(), &turn, g.stop, &g.figures);
                        self.tokens.decorate(&mut body, &g.sampled);
                        self.tokens.prompt_ids(&mut body, &g);
                        return axum::Json(body).into_response();
                    }
                }
                Some(Err(e)) => return ApiError::from_engine(&e).into_response(),
                None => return ApiError::from_engine(&EngineError::Ended).into_response(),
            }
        }
    }

    /// A chunk carrying `delta`, and the tokens sampled since the last chunk when asked.
    fn chunk(&mut self, delta: Value, finish: Option<&str>) -> Value {
        let mut c = api::chunk(&self.header(), delta, finish);
        if self.tokens.vocabulary.is_some() {
            let sampled = std::mem::take(&mut self.pending);
            self.tokens.decorate(&mut c, &sampled);
        }
        c
    }

    async fn stream(mut self, tx: UnboundedSender<Bytes>, cancel: Arc<AtomicBool>, usage: bool) {
        let send = |v: &Value| {
            if tx.send(Bytes::from(format!("data: {v}\n\n"))).is_err() {
                // The client went away: stop the engine, then drain to the end.
                cancel.store(true, Ordering::Relaxed);
            }
        };
        send(&api::chunk(
            &self.header(),
            json!({"role": "assistant", "content": ""}),
            None,
        ));
        let mut calls = 0usize;
        // While the model's output is held back (whitespace the parser has not placed yet), an
        // SSE comment now and then lets a closed connection show, so a client that left stops
        // the engine even when nothing else would be written.
        let mut last_write = std::time::Instant::now();
        loop {
            match self.next().await {
                Some(Ok((events, done))) => {
                    // Only reasoning and content are written live: a piece inside a tool call
                    // (argument deltas) writes nothing, so it counts as held back too.
                    let writes = events
                        .iter()
                        .any(|e| matches!(e, ParseEvent::Reasoning(_) | ParseEvent::Content(_)));
                    if !writes && done.is_none() {
                        if last_write.elapsed() >= std::time::Duration::from_millis(200) {
                            if tx.send(Bytes::from_static(b": waiting\n\n")).is_err() {
                                cancel.store(true, Ordering::Relaxed);
                            }
                            last_write = std::time::Instant::now();
                        }
                        continue;
                    }
                    last_write = std::time::Instant::now();
                    // Text streams as it comes; calls are sent once the turn is settled (a
                    // later </think> can still make a call reasoning).
                    let (g, settled) = match done {
                        Some((g, settled)) => (Some(g), settled),
                        None => (None, Vec::new()),
                    };
                    let live = events.into_iter().filter_map(|e| match e {
                        ParseEvent::Reasoning(t) => Some(json!({"reasoning_content": t})),
                        ParseEvent::Content(t) => Some(json!({"content": t})),
                        _ => None,
                    });
                    let live: Vec<Value> = live.collect();
                    for delta in live {
                        let chunk = self.chunk(delta, None);
                        send(&chunk);
                    }
                    for e in settled {
                        log_error(&e);
                        if let ParseEvent::ToolCallComplete { call, .. } = e {
                            calls += 1;
                            let delta =
                                json!({"tool_calls": [api::tool_call(&call, Some(calls - 1))]});
                            let chunk = self.chunk(delta, None);
                            send(&chunk);
                        }
                    }
                    if let Some(g) = g {
                        log_done(&self.id, &g);
                        self.timing.end(finished_reason(&g, calls > 0), Some(&g));
                        let finish = api::finish_reason(g.stop, calls > 0);
                        // The tokens not sent yet (the end-of-turn token, text held back),
                        // and the prompt's ids, come with the last chunk.
                        let mut last = self.chunk(json!({}), Some(finish));
                        self.tokens.prompt_ids(&mut last, &g);
                        send(&last);
                        if usage {
                            send(&api::usage_chunk(&self.header(), &g.figures));
                        }
                        break;
                    }
                }
                Some(Err(e)) => {
                    let e = ApiError::from_engine(&e);
                    send(&api::error_body(e.kind, &e.message));
                    break;
                }
                None => {
                    let e = ApiError::from_engine(&EngineError::Ended);
                    send(&api::error_body(e.kind, &e.message));
                    break;
                }
            }
        }
        let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n"));
    }
}

fn log_error(e: &ParseEvent) {
    if let ParseEvent::ToolCallError(err) = e {
        tracing::warn!("left out a malformed tool call: {}", err.message);
    }
}

fn log_done(id: &str, g: &Generation) {
    let f = &g.figures;
    tracing::info!(
        "{id}: {:?}; prompt {} tokens ({} reused, {:?}), generated {}",
        g.stop,
        f.prompt_tokens,
        f.reused_tokens,
        f.reuse,
        f.generated_tokens
    );
}
