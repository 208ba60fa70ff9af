//! One reply in progress: the engine's events of each choice through a parser of its own
//! (Lilypad's), answered whole or as server-sent events, with the request's accounting ended
//! once (`track.rs`), when every choice has ended.
//!
//! Streamed, each chunk carries one choice, named by its `index` (as OpenAI streams `n`
//! choices): every choice's role chunk first, then the choices' deltas as they come, each
//! choice's last chunk with its own `finish_reason`, then the usage chunk when asked (the
//! prompt counted once, every choice's tokens) and `[DONE]`.
//!
//! Tool calls are sent whole (name and all arguments in one delta) when the parser completes
//! them; ids are `call_{n}`, numbered after the calls already in the conversation so that they
//! stay unique within it. A call the parser cannot read is left out (and logged).
//!
//! Does not own: taking the request (`chat.rs`), the wire shapes (`api.rs`).

use super::api::{self, ApiError, Header};
use super::choices::Generating;
use super::door::CLIENT_GONE;
use super::server::Server;
use super::track::Tracking;
use super::vocabulary::Vocabulary;
use crate::engine::{EngineError, EngineEvent, Figures, Generation, SampledToken};
use crate::prompt::{ParseEvent, ParsedTurn, Parser};
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// The end of a generation and the turn's settled events.
type Settled = (Generation, Vec<ParseEvent>);

/// One choice of a reply in progress.
pub(super) struct Choice {
    parser: Parser,
    /// Tokens sampled and not yet sent with a chunk.
    pending: Vec<SampledToken>,
    /// Tool calls sent (streamed).
    calls: usize,
    /// Its end, once it came, with its turn as parsed.
    end: Option<(Generation, ParsedTurn)>,
}

impl Choice {
    pub(super) fn new(parser: Parser) -> Self {
        Self {
            parser,
            pending: Vec::new(),
            calls: 0,
            end: None,
        }
    }
}

/// One reply in progress.
pub(super) struct Reply {
    pub(super) id: String,
    pub(super) created: u64,
    pub(super) model: String,
    /// One per choice, in index order.
    pub(super) choices: Vec<Choice>,
    pub(super) generating: Generating,
    pub(super) tokens: TokensAsked,
    pub(super) tracking: Tracking,
}

/// What one engine event of choice `.0` gave: the live parse events, and with the choice's
/// end, its generation and settled events.
type Next = (usize, Vec<ParseEvent>, Option<Settled>);

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

    /// Add what was asked of `sampled` to `choice` (of a response or a chunk).
    fn decorate(&self, choice: &mut Value, sampled: &[SampledToken]) {
        let Some(v) = &self.vocabulary else { return };
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

    /// The next event of any choice; `Err` carries an engine's failure (the request then ended
    /// as an error, and the other choices are cancelled); `None` once no choice can send more.
    async fn next(&mut self) -> Option<Result<Next, EngineError>> {
        let (i, ev) = self.generating.events.recv().await?;
        let choice = self.choices.get_mut(i)?;
        Some(match ev {
            EngineEvent::Piece(p) => {
                self.tracking.token();
                Ok((i, choice.parser.push(&p), None))
            }
            // The in-process engines send raw text only.
            EngineEvent::Parsed(_) => Ok((i, Vec::new(), None)),
            EngineEvent::Sampled(t) => {
                choice.pending.push(t);
                Ok((i, Vec::new(), None))
            }
            EngineEvent::Done(g) => {
                let tail = choice.parser.finish();
                Ok((i, tail, Some((g, choice.parser.settle()))))
            }
            EngineEvent::Failed(e) => {
                self.generating.cancel.cancel();
                let status = ApiError::from_engine(&e).status.as_u16();
                self.tracking.end("error", status, None, Vec::new());
                Err(e)
            }
        })
    }

    /// End the request's accounting with what the choices that ended gave: the first
    /// choice's finish reason (`abort` when any was cancelled), the request's figures (the
    /// prompt once, every choice's tokens) and the tools every choice called; `status` as the
    /// client got it (499 when it went away before the end).
    fn end(&mut self, status: u16) -> Option<Figures> {
        let ended: Vec<&(Generation, ParsedTurn)> =
            self.choices.iter().filter_map(|c| c.end.as_ref()).collect();
        let figures: Vec<&Figures> = ended.iter().map(|(g, _)| &g.figures).collect();
        let all = super::choices::figures(self.generating.shared.as_ref(), &figures);
        let stops: Vec<_> = ended
            .iter()
            .map(|(g, turn)| (g.stop, !turn.tool_calls.is_empty()))
            .collect();
        let reason = super::choices::finish_reason(&stops);
        let names = ended
            .iter()
            .flat_map(|(_, t)| t.tool_calls.iter().map(|c| c.name.clone()))
            .collect();
        self.tracking.end(reason, status, all.as_ref(), names);
        all
    }

    pub(super) async fn whole(mut self) -> Response {
        // Dropped before the end (the client went away, an error): the other choices stop.
        let _stop = self.generating.cancel.on_drop();
        while self.choices.iter().any(|c| c.end.is_none()) {
            match self.next().await {
                // Live events are only for streaming; the settled ones come with the end.
                Some(Ok((i, _, Some((g, settled))))) => {
                    for e in &settled {
                        log_error(e);
                    }
                    log_done(&self.id, i, &g);
                    self.choices[i].end = Some((g, ParsedTurn::from_events(settled)));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return ApiError::from_engine(&e).into_response(),
                None => {
                    let e = ApiError::from_engine(&EngineError::Ended);
                    self.tracking
                        .end("error", e.status.as_u16(), None, Vec::new());
                    return e.into_response();
                }
            }
        }
        let Some(figures) = self.end(200) else {
            return ApiError::from_engine(&EngineError::Ended).into_response();
        };
        let choices = self
            .choices
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let (g, turn) = c.end.as_ref()?;
                let mut choice = api::choice(i, turn, g.stop);
                self.tokens.decorate(&mut choice, &g.sampled);
                Some(choice)
            })
            .collect();
        let mut body = api::completion(&self.header(), choices, &figures);
        if let Some((g, _)) = self.choices.first().and_then(|c| c.end.as_ref()) {
            self.tokens.prompt_ids(&mut body, g);
        }
        axum::Json(body).into_response()
    }

    /// A chunk of choice `i` carrying `delta`, and the tokens it sampled since its last chunk
    /// when asked.
    fn chunk(&mut self, i: usize, delta: Value, finish: Option<&str>) -> Value {
        let mut c = api::chunk(&self.header(), i, delta, finish);
        if self.tokens.vocabulary.is_some() {
            let sampled = std::mem::take(&mut self.choices[i].pending);
            self.tokens.decorate(&mut c["choices"][0], &sampled);
        }
        c
    }

    pub(super) async fn stream(mut self, tx: UnboundedSender<Bytes>, usage: bool) {
        let cancel = self.generating.cancel.clone();
        // Whether the client went away: the request then ends as 499 (as a whole request's
        // does), though its headers said 200.
        let gone = AtomicBool::new(false);
        let send = |v: &Value| {
            if tx.send(Bytes::from(format!("data: {v}\n\n"))).is_err() {
                // The client went away: stop the engine, then drain to the end.
                gone.store(true, Ordering::Relaxed);
                cancel.cancel();
            }
        };
        let status = || {
            if gone.load(Ordering::Relaxed) {
                CLIENT_GONE
            } else {
                200
            }
        };
        for i in 0..self.choices.len() {
            send(&api::chunk(
                &self.header(),
                i,
                json!({"role": "assistant", "content": ""}),
                None,
            ));
        }
        // While the model's output is held back (whitespace the parser has not placed yet), an
        // SSE comment now and then lets a closed connection show, so a client that left stops
        // the engine even when nothing else would be written.
        let mut last_write = std::time::Instant::now();
        loop {
            match self.next().await {
                Some(Ok((i, events, done))) => {
                    // Only reasoning and content are written live: a piece inside a tool call
                    // (argument deltas) writes nothing, so it counts as held back too.
                    let writes = events
                        .iter()
                        .any(|e| matches!(e, ParseEvent::Reasoning(_) | ParseEvent::Content(_)));
                    if !writes && done.is_none() {
                        if last_write.elapsed() >= std::time::Duration::from_millis(200) {
                            if tx.send(Bytes::from_static(b": waiting\n\n")).is_err() {
                                gone.store(true, Ordering::Relaxed);
                                cancel.cancel();
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
                    for e in events {
                        let delta = match e {
                            ParseEvent::Reasoning(t) => json!({"reasoning_content": t}),
                            ParseEvent::Content(t) => json!({"content": t}),
                            _ => continue,
                        };
                        let chunk = self.chunk(i, delta, None);
                        send(&chunk);
                    }
                    for e in &settled {
                        log_error(e);
                        if let ParseEvent::ToolCallComplete { call, .. } = e {
                            let c = &mut self.choices[i];
                            c.calls += 1;
                            let delta =
                                json!({"tool_calls": [api::tool_call(call, Some(c.calls - 1))]});
                            let chunk = self.chunk(i, delta, None);
                            send(&chunk);
                        }
                    }
                    let Some(g) = g else { continue };
                    log_done(&self.id, i, &g);
                    let finish = api::finish_reason(g.stop, self.choices[i].calls > 0);
                    // The tokens not sent yet (the end-of-turn token, text held back) come
                    // with the choice's last chunk; the prompt's ids with the reply's last.
                    let mut last = self.chunk(i, json!({}), Some(finish));
                    self.choices[i].end = Some((g, ParsedTurn::from_events(settled)));
                    if self.choices.iter().any(|c| c.end.is_none()) {
                        send(&last);
                        continue;
                    }
                    if let Some((g, _)) = self.choices.first().and_then(|c| c.end.as_ref()) {
                        self.tokens.prompt_ids(&mut last, g);
                    }
                    send(&last);
                    let figures = self.end(status());
                    if let (true, Some(f)) = (usage, figures) {
                        send(&api::usage_chunk(&self.header(), &f));
                    }
                    break;
                }
                Some(Err(e)) => {
                    let e = ApiError::from_engine(&e);
                    send(&api::error_body(e.kind, &e.message));
                    break;
                }
                None if cancel.is_cancelled() => {
                    // Cancelled before some choices started: those that ran are counted.
                    self.end(status());
                    break;
                }
                None => {
                    let e = ApiError::from_engine(&EngineError::Ended);
                    self.tracking
                        .end("error", e.status.as_u16(), None, Vec::new());
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

fn log_done(id: &str, choice: usize, g: &Generation) {
    let f = &g.figures;
    let id = match choice {
        0 => id.to_string(),
        i => format!("{id} choice {i}"),
    };
    tracing::info!(
        "{id}: {:?}; prompt {} tokens ({} reused, {:?}), generated {}",
        g.stop,
        f.prompt_tokens,
        f.reused_tokens,
        f.reuse,
        f.generated_tokens
    );
}
