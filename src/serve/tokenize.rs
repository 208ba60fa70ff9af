//! `POST /tokenize` and `POST /detokenize`, as vLLM has them, so a trainer can turn text or a
//! conversation into the exact ids the model reads and back.
//!
//! `/tokenize` takes `{"prompt": TEXT}` (read as is, special tokens written out parsed) or
//! `{"messages": [...], "tools": [...]}` (rendered with the chat template and the assistant's
//! turn opened, as a chat request would be: `"add_generation_prompt": false` is refused;
//! `chat_template_kwargs.enable_thinking` as in chat requests) and answers
//! `{"tokens": [...], "count": N}`. `/detokenize` takes `{"tokens": [...]}` and answers
//! `{"prompt": TEXT}` with special tokens written out, so that tokenising it again gives the
//! same ids.
//!
//! Both are model endpoints behind the door (`super::door`): the key, its limits, the drain, the
//! queue bound and the body cap of chat requests, one audit line each.
//!
//! Does not own: the vocabulary (`super::vocabulary`), rendering (`crate::engine::TemplatedModel`).

use super::api::{self, ApiError};
use super::door::{self, Endpoint};
use super::metrics::Rejection;
use super::server::Server;
use crate::engine::{EngineError, Prompt, SequenceId, TurnRequest};
use crate::prompt::{parse_conversation, Thinking};
use axum::body::Body;
use axum::extract::State;
use axum::http::{Extensions, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

fn body_of(text: &str) -> Result<Value, ApiError> {
    let body: Value = serde_json::from_str(text)
        .map_err(|e| api::bad(format!("the body is not valid JSON: {e}")))?;
    if body.is_object() {
        Ok(body)
    } else {
        Err(api::bad("the body must be a JSON object"))
    }
}

/// The text to tokenise: the prompt as given, or the conversation rendered.
fn text_of(server: &Server, text: &str, body: &Value) -> Result<String, ApiError> {
    if let Some(p) = body.get("prompt") {
        return p
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| api::bad("\"prompt\" must be a string"));
    }
    if body.get("messages").is_none() {
        return Err(api::bad("send \"prompt\" (text) or \"messages\""));
    }
    if body.get("add_generation_prompt") == Some(&Value::Bool(false)) {
        return Err(api::bad(
            "\"add_generation_prompt\": false is not supported: prompts here always end with the assistant's turn opened",
        ));
    }
    let conversation = parse_conversation(text).map_err(|e| api::bad(e.to_string()))?;
    let thinking = match body.pointer("/chat_template_kwargs/enable_thinking") {
        Some(Value::Bool(false)) => Thinking::Off,
        _ => Thinking::On,
    };
    let turn = TurnRequest {
        messages: conversation.messages,
        tools: conversation.tools.unwrap_or_default(),
        max_tokens: 1,
        sampling: crate::engine::SamplingParams::greedy(),
        sequence: SequenceId::DEFAULT,
        pin_turn: false,
        report: Default::default(),
    };
    match server.replicas.renderer().model.request(thinking, &turn) {
        Ok(r) => match r.prompt {
            Prompt::Text(t) => Ok(t),
            _ => Err(api::bad("this server's engine renders no prompt text")),
        },
        Err(e) => Err(ApiError::from_engine(&e)),
    }
}

pub(super) async fn tokenize(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut admitted =
        match door::enter(&server, Endpoint::Tokenize, &extensions, &headers, body).await {
            Ok(a) => a,
            Err(refused) => return refused,
        };
    let text = admitted.take_body();
    let prompt = match body_of(&text).and_then(|b| text_of(&server, &text, &b)) {
        Ok(p) => p,
        Err(e) => return admitted.refuse(Rejection::InvalidRequest, e),
    };
    drop(text);
    let engine = server.replicas.any().1.model.engine().clone();
    let ids = tokio::task::spawn_blocking(move || engine.tokenize(&prompt))
        .await
        .map_err(|_| EngineError::Stopped)
        .and_then(|r| r);
    let r = match ids {
        Ok(Some(tokens)) => {
            axum::Json(json!({"count": tokens.len(), "tokens": tokens})).into_response()
        }
        Ok(None) => api::bad("this server's engine does not tokenise here").into_response(),
        Err(e) => ApiError::from_engine(&e).into_response(),
    };
    admitted.answer(r)
}

pub(super) async fn detokenize(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut admitted =
        match door::enter(&server, Endpoint::Detokenize, &extensions, &headers, body).await {
            Ok(a) => a,
            Err(refused) => return refused,
        };
    let text = admitted.take_body();
    let ids = match body_of(&text).and_then(|b| token_ids(&b, "tokens")) {
        Ok(ids) => ids,
        Err(e) => return admitted.refuse(Rejection::InvalidRequest, e),
    };
    let r = match server.vocabulary().await {
        Ok(Some(v)) => match ids.iter().find(|&&t| t as usize >= v.len()) {
            Some(&id) => ApiError::from_engine(&EngineError::NotAToken {
                id,
                vocabulary: v.len() as u32,
            })
            .into_response(),
            None => axum::Json(json!({"prompt": v.text(&ids)})).into_response(),
        },
        Ok(None) => api::bad("this server's engine does not tokenise here").into_response(),
        Err(e) => ApiError::from_engine(&e).into_response(),
    };
    admitted.answer(r)
}

/// A list of token ids under `key`.
pub(super) fn token_ids(body: &Value, key: &str) -> Result<Vec<u32>, ApiError> {
    let bad = || api::bad(format!("\"{key}\" must be a list of token ids"));
    body.get(key)
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|v| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(bad)
        })
        .collect()
}
