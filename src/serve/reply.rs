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
use crate::engine::{EngineError, EngineEvent, Generation};
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
    pub(super) tracking: Tracking,
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
                        let body = api::completion(&self.header(), &turn, g.stop, &g.figures);
                        return axum::Json(body).into_response();
                    }
                }
                Some(Err(e)) => return ApiError::from_engine(&e).into_response(),
                None => return ApiError::from_engine(&EngineError::Ended).into_response(),
            }
        }
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
                        send(&api::chunk(&self.header(), delta, None));
                    }
                    for e in settled {
                        log_error(&e);
                        if let ParseEvent::ToolCallComplete { call, .. } = e {
                            calls += 1;
                            names.push(call.name.clone());
                            let delta =
                                json!({"tool_calls": [api::tool_call(&call, Some(calls - 1))]});
                            send(&api::chunk(&self.header(), delta, None));
                        }
                    }
                    if let Some(g) = g {
                        log_done(&self.id, &g);
                        let reason = finished_reason(&g, calls > 0);
                        self.tracking
                            .end(reason, 200, Some(&g), std::mem::take(&mut names));
                        let finish = api::finish_reason(g.stop, calls > 0);
                        send(&api::chunk(&self.header(), json!({}), Some(finish)));
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
