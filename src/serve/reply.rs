//! One reply in progress: the engine's events through Lilypad's parser, answered whole or as
//! server-sent events, with the request's accounting ended once (`track.rs`).
//!
//! Tool calls are sent whole (name and all arguments in one delta) when the parser completes
//! them; ids are `call_{n}`, numbered after the calls already in the conversation so that they
//! stay unique within it. A call the parser cannot read is left out (and logged).
//!
//! Does not own: taking the request (`chat.rs`), the wire shapes (`api.rs`).

use super::api::{self, ApiError, Header};
use super::track::Tracking;
use super::{Server, Vocabulary};
use crate::engine::{EngineError, EngineEvent, Generation, SampledToken};
use crate::prompt::{ParseEvent, ParsedTurn, Parser};
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// The end of a generation and the turn's settled events.
type Settled = (Generation, Vec<ParseEvent>);

/// The finish reason the metrics count: the API's, or `abort` for a cancelled reply.
fn finished_reason(g: &Generation, has_calls: bool) -> &'static str {
    match g.stop {
        crate::engine::StopReason::Cancelled => "abort",
        stop => api::finish_reason(stop, has_calls),
    }
}

/// One reply in progress.
pub(super) struct Reply {
    pub(super) id: String,
    pub(super) created: u64,
    pub(super) model: String,
    pub(super) parser: Parser,
    pub(super) events: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>,
    pub(super) tokens: TokensAsked,
    /// Tokens sampled and not yet sent with a chunk.
    pub(super) pending: Vec<SampledToken>,
    pub(super) tracking: Tracking,
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
                self.tracking.token();
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
                let status = ApiError::from_engine(&e).status.as_u16();
                self.tracking.end("error", status, None, Vec::new());
                Err(e)
            }
        })
    }

    pub(super) async fn whole(mut self) -> Response {
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
                        let names = turn.tool_calls.iter().map(|c| c.name.clone()).collect();
                        self.tracking.end(reason, 200, Some(&g), names);
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

    pub(super) async fn stream(
        mut self,
        tx: UnboundedSender<Bytes>,
        cancel: Arc<AtomicBool>,
        usage: bool,
    ) {
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
        let mut names = Vec::new();
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
                            names.push(call.name.clone());
                            let delta =
                                json!({"tool_calls": [api::tool_call(&call, Some(calls - 1))]});
                            let chunk = self.chunk(delta, None);
                            send(&chunk);
                        }
                    }
                    if let Some(g) = g {
                        log_done(&self.id, &g);
                        let reason = finished_reason(&g, calls > 0);
                        self.tracking
                            .end(reason, 200, Some(&g), std::mem::take(&mut names));
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
