//! `POST /v1/completions`, the plain-text completions API, for trainers that hold token ids:
//! `prompt` is a text (read as is, no chat template) or a list of token ids (read exactly, as
//! the OpenAI API allows), and the answer is the raw generated text. `logprobs: N` (0-20) rates
//! every generated token in the legacy form (`tokens`, `token_logprobs`, `top_logprobs`,
//! `text_offset`); `return_token_ids: true` (vLLM's) adds `prompt_token_ids` and
//! `choices[].token_ids`. `n` asks for several choices of one prompt (`choices.rs`: the
//! prompt read once), each with its own `index`, `finish_reason`, `logprobs` and ids. An
//! `X-Session-ID` header keeps the engine's memory of one session's prompts between calls (each
//! call without one reads its prompt afresh). Whole answers only: `stream`, `echo`, `suffix`
//! and several prompts are refused with a message.
//!
//! Like every model endpoint it is let in by the door (`super::door`): the key, its limits, the
//! drain, the queue bound, one audit line.
//!
//! Does not own: the chat API (`super::chat`), the vocabulary (`super::vocabulary`).

use super::api::{self, ApiError};
use super::choices::{self, Ask};
use super::door::{self, Admitted, Endpoint};
use super::metrics::Rejection;
use super::server::Server;
use super::tokenize::token_ids;
use super::track::Tracking;
use crate::engine::{
    EngineError, EngineEvent, Figures, GenerateRequest, Generation, Prompt, SequenceId, TokenReport,
};
use axum::body::Body;
use axum::extract::State;
use axum::http::{Extensions, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// OpenAI's default cap for this API.
const DEFAULT_MAX_TOKENS: u32 = 16;

/// The prompt of a request: text, or ids (a list, or a list holding one list).
fn prompt_of(body: &Value) -> Result<Prompt, ApiError> {
    match body.get("prompt") {
        Some(Value::String(s)) => Ok(Prompt::Text(s.clone())),
        Some(Value::Array(items)) => match items.as_slice() {
            [Value::String(s)] => Ok(Prompt::Text(s.clone())),
            [Value::Array(_)] => token_ids(&json!({"p": items[0]}), "p").map(Prompt::Tokens),
            _ if items.iter().all(Value::is_number) && !items.is_empty() => {
                token_ids(body, "prompt").map(Prompt::Tokens)
            }
            _ => Err(api::bad(
                "\"prompt\" must be a text, a list of token ids, or one of either in a list (several prompts are not supported)",
            )),
        },
        _ => Err(api::bad("\"prompt\" is required: a text or a list of token ids")),
    }
}

/// The engine sequence for a request: one per `X-Session-ID`, else one of its own.
fn sequence_of(headers: &HeaderMap, prompt: &Prompt) -> SequenceId {
    #[expect(
        deprecated,
        reason = "SipHasher is the one std hasher with fixed keys: stable across runs and machines"
    )]
    let mut h = std::hash::SipHasher::new();
    match headers.get("x-session-id").and_then(|v| v.to_str().ok()) {
        Some(session) => ("session", session).hash(&mut h),
        None => ("prompt", format!("{prompt:?}")).hash(&mut h),
    }
    SequenceId(h.finish().max(1))
}

fn refuse_unsupported(body: &Value) -> Result<(), ApiError> {
    for key in ["stream", "echo"] {
        if body.get(key) == Some(&Value::Bool(true)) {
            return Err(api::bad(format!(
                "\"{key}\": true is not supported on /v1/completions"
            )));
        }
    }
    if body.get("suffix").is_some_and(|v| !v.is_null()) {
        return Err(api::bad("\"suffix\" is not supported"));
    }
    Ok(())
}

pub(super) async fn completions(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match door::enter(&server, Endpoint::Completions, &extensions, &headers, body).await {
        Ok(admitted) => {
            let id = admitted.request_id.clone();
            door::with_id(answer(&server, &headers, admitted).await, &id)
        }
        Err(refused) => refused,
    }
}

async fn answer(server: &Arc<Server>, headers: &HeaderMap, mut admitted: Admitted) -> Response {
    let text = admitted.take_body();
    let (mut request, n, top, ids, vocabulary) = match read(server, &text).await {
        Ok(r) => r,
        Err(e) => return admitted.refuse(Rejection::InvalidRequest, e),
    };
    drop(text);
    request.sequence = sequence_of(headers, &request.prompt);
    // Held until the generations end, as for chat requests (`weights.rs`).
    let weights = server.weights.share().await;
    // A session stays on its replica; a request without one is a conversation of its own.
    let route = format!("completion:{}", request.sequence.0);
    let Some(assigned) = server.replicas.route(&route) else {
        let e = ApiError::from_engine(&EngineError::Stopped);
        return admitted.refuse(Rejection::InvalidRequest, e);
    };
    let ask = Ask {
        request,
        n,
        route,
        priority: admitted.caller.priority,
    };
    let tracking = Tracking::new(admitted, assigned.index());
    let (mut generating, mut tracking) =
        match choices::start(server, ask, assigned, tracking, weights).await {
            Ok(g) => g,
            Err(refused) => return refused,
        };
    // The client going away drops this future: every choice stops.
    let _stop = generating.cancel.on_drop();
    let mut outs = vec![String::new(); n];
    let mut ends: Vec<Option<Generation>> = (0..n).map(|_| None).collect();
    while ends.iter().any(Option::is_none) {
        let failed = match generating.events.recv().await {
            Some((i, EngineEvent::Piece(p))) => {
                tracking.token();
                if let Some(out) = outs.get_mut(i) {
                    out.push_str(&p);
                }
                continue;
            }
            Some((i, EngineEvent::Done(g))) => {
                if let Some(end) = ends.get_mut(i) {
                    *end = Some(g);
                }
                continue;
            }
            Some((_, EngineEvent::Parsed(_) | EngineEvent::Sampled(_))) => continue,
            Some((_, EngineEvent::Failed(e))) => e,
            None => EngineError::Ended,
        };
        generating.cancel.cancel();
        let a = ApiError::from_engine(&failed);
        tracking.end("error", a.status.as_u16(), None, Vec::new());
        return a.into_response();
    }
    let ends: Vec<Generation> = ends.into_iter().flatten().collect();
    let figures: Vec<&Figures> = ends.iter().map(|g| &g.figures).collect();
    let all = choices::figures(generating.shared.as_ref(), &figures);
    let stops: Vec<_> = ends.iter().map(|g| (g.stop, false)).collect();
    tracking.end(
        choices::finish_reason(&stops),
        200,
        all.as_ref(),
        Vec::new(),
    );
    let Some(all) = all else {
        return ApiError::from_engine(&EngineError::Ended).into_response();
    };
    respond(server, outs, &ends, &all, top, ids, vocabulary.as_deref())
}

type Read = (
    GenerateRequest,
    usize,
    Option<u8>,
    bool,
    Option<Arc<super::Vocabulary>>,
);

/// The request read: what to generate, the choices, the ratings and ids asked for, and the
/// vocabulary that shows them.
async fn read(server: &Server, text: &str) -> Result<Read, ApiError> {
    let body: Value = serde_json::from_str(text)
        .map_err(|e| api::bad(format!("the body is not valid JSON: {e}")))?;
    refuse_unsupported(&body)?;
    let prompt = prompt_of(&body)?;
    if matches!(prompt, Prompt::Tokens(_))
        && !server.replicas.renderer().model.engine().reads_tokens()
    {
        return Err(api::bad(
            "this server's engine does not read token ids: send the prompt as text",
        ));
    }
    let (sampling, max_tokens) = api::sampling(&body, &server.sampling, DEFAULT_MAX_TOKENS)?;
    let n = api::choices(&body, server.max_n)?;
    let top = match api::number(&body, "logprobs")? {
        None => None,
        Some(n) if (0.0..=20.0).contains(&n) && n.fract() == 0.0 => Some(n as u8),
        Some(_) => return Err(api::bad("\"logprobs\" must be an integer from 0 to 20")),
    };
    let ids = body.get("return_token_ids") == Some(&Value::Bool(true));
    let vocabulary = if top.is_some() || ids {
        match server.vocabulary().await {
            Ok(Some(v)) => Some(v),
            Ok(None) => return Err(api::bad("this server's engine does not report tokens")),
            Err(e) => return Err(ApiError::from_engine(&e)),
        }
    } else {
        None
    };
    let mut request = GenerateRequest::new(prompt.clone(), max_tokens, sampling);
    request.report = TokenReport {
        logprobs: (top.is_some() || ids).then_some(top.unwrap_or(0)),
        prompt_tokens: ids,
    };
    Ok((request, n, top, ids, vocabulary))
}

/// The answer's body: choice `i` is `outs[i]` as `ends[i]` generated it; `figures` are the
/// request's (the prompt once, every choice's tokens).
fn respond(
    server: &Server,
    outs: Vec<String>,
    ends: &[Generation],
    figures: &Figures,
    top: Option<u8>,
    ids: bool,
    vocabulary: Option<&super::Vocabulary>,
) -> Response {
    let mut body = json!({
        "id": format!("cmpl-{}", api::now()),
        "object": "text_completion",
        "created": api::now(),
        "model": server.model_name,
        "usage": api::usage(figures),
    });
    let choices: Vec<Value> = outs
        .into_iter()
        .zip(ends)
        .enumerate()
        .map(|(i, (out, generation))| {
            let mut choice = json!({
                "index": i,
                "text": out,
                "logprobs": null,
                "finish_reason": api::finish_reason(generation.stop, false),
            });
            if let Some(v) = vocabulary {
                if top.is_some() {
                    choice["logprobs"] = v.completion_logprobs(&generation.sampled, 0);
                }
                if ids {
                    choice["token_ids"] =
                        json!(generation.sampled.iter().map(|t| t.id).collect::<Vec<_>>());
                }
            }
            choice
        })
        .collect();
    if let (Some(first), true, Some(_)) = (ends.first(), ids, vocabulary) {
        body["prompt_token_ids"] = json!(first.prompt_tokens);
    }
    body["choices"] = json!(choices);
    axum::Json(body).into_response()
}
