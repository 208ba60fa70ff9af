//! The OpenAI chat-completions wire format as `lilypad serve` speaks it: the request fields it
//! reads, the response, chunk and error shapes it writes.
//!
//! Request fields read: `messages` and `tools` (through `crate::prompt::parse_conversation`,
//! with its leniencies), `stream`, `stream_options.include_usage`, `max_tokens` or
//! `max_completion_tokens`, `temperature` (0 means greedy), `top_p`, `top_k`, `min_p`, `seed`,
//! `n` (1 to `[serve] max_n` choices; `best_of` is refused), `chat_template_kwargs.enable_thinking`,
//! `logprobs` and `top_logprobs` (0-20, OpenAI's), and `return_token_ids` (vLLM's extension).
//! Others (`model`, `tool_choice`, `stop`, ...) are accepted and ignored.

use crate::engine::logprob::MAX_TOP;
use crate::engine::{Figures, SamplingParams, SamplingSettings, StopReason, TokenReport};
use crate::prompt::{parse_conversation, Thinking, ToolSpec};
use crate::protocol::{Message, ToolCall};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

/// A request, read.
#[derive(Debug)]
pub(super) struct ChatParams {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub stream: bool,
    pub include_usage: bool,
    pub max_tokens: u32,
    pub sampling: SamplingParams,
    /// Choices asked for (`n`).
    pub n: usize,
    pub thinking: Thinking,
    /// What the engine is asked to report of the tokens.
    pub report: TokenReport,
    /// Answer with log-probabilities (`choices[].logprobs`).
    pub logprobs: bool,
    /// Answer with token ids (`prompt_token_ids`, `choices[].token_ids`).
    pub return_token_ids: bool,
}

/// `logprobs`, `top_logprobs` and `return_token_ids` of a request body: whether to answer
/// with log-probabilities, with ids, and what the engine must report for that.
pub(super) fn token_options(body: &Value) -> Result<(bool, bool, TokenReport), ApiError> {
    let flag = |key: &str| match body.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(format!("\"{key}\" must be true or false"))),
    };
    let logprobs = flag("logprobs")?;
    let ids = flag("return_token_ids")?;
    let top = match number(body, "top_logprobs")? {
        None => 0,
        Some(n) if (0.0..=MAX_TOP as f64).contains(&n) && n.fract() == 0.0 => n as u8,
        Some(_) => {
            return Err(bad(format!(
                "\"top_logprobs\" must be an integer from 0 to {MAX_TOP}"
            )))
        }
    };
    if top > 0 && !logprobs {
        return Err(bad("\"top_logprobs\" needs \"logprobs\": true"));
    }
    let report = TokenReport {
        // Ids come with the ratings: one report of each sampled token carries both.
        logprobs: (logprobs || ids).then_some(top),
        prompt_tokens: ids,
    };
    Ok((logprobs, ids, report))
}

/// An error answered in OpenAI's form, `{"error": {"message", "type", ...}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            axum::Json(error_body(self.kind, &self.message)),
        )
            .into_response()
    }
}

/// An OpenAI-style error response.
pub(super) fn error(status: StatusCode, kind: &'static str, message: String) -> Response {
    ApiError {
        status,
        kind,
        message,
    }
    .into_response()
}

/// The error object; `code` repeats the kind, where OpenAI's clients look for the specific
/// reason (`context_length_exceeded`, `invalid_api_key`, `rate_limit_exceeded`).
pub(super) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
}

pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(super) fn bad(message: impl Into<String>) -> ApiError {
    ApiError {
        status: StatusCode::BAD_REQUEST,
        kind: "invalid_request_error",
        message: message.into(),
    }
}

pub(super) fn number(body: &Value, key: &str) -> Result<Option<f64>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| bad(format!("\"{key}\" must be a number"))),
    }
}

/// Read a request body; `defaults` fill in what it leaves out; `max_n` bounds `n`.
pub(super) fn parse_request(
    text: &str,
    defaults: &SamplingSettings,
    max_tokens: u32,
    max_n: usize,
) -> Result<ChatParams, ApiError> {
    let body: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("the body is not valid JSON: {e}")))?;
    if !body.is_object() {
        return Err(bad("the body must be a JSON object"));
    }
    let conversation = parse_conversation(text).map_err(|e| bad(e.to_string()))?;
    if conversation.messages.is_empty() {
        return Err(bad("\"messages\" must not be empty"));
    }
    let (s, max_tokens) = sampling(&body, defaults, max_tokens)?;
    let n = choices(&body, max_n)?;
    let (logprobs, return_token_ids, report) = token_options(&body)?;
    let thinking = match body.pointer("/chat_template_kwargs/enable_thinking") {
        Some(Value::Bool(false)) => Thinking::Off,
        _ => Thinking::On,
    };
    Ok(ChatParams {
        messages: conversation.messages,
        tools: conversation.tools.unwrap_or_default(),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        max_tokens,
        sampling: s,
        n,
        thinking,
        report,
        logprobs,
        return_token_ids,
    })
}

/// How many choices a request body asks for: `n`, 1 by default, at most `max_n`. `best_of`
/// (generate more, return the best) is refused unless it asks for no more than `n`: the server
/// returns every choice it generates, and a client ranks them itself (by their `logprobs`).
pub(super) fn choices(body: &Value, max_n: usize) -> Result<usize, ApiError> {
    let n = match number(body, "n")? {
        None => 1,
        Some(n) if n.fract() == 0.0 && (1.0..=max_n as f64).contains(&n) => n as usize,
        Some(_) => {
            return Err(bad(format!(
                "\"n\" must be an integer from 1 to {max_n} (this server's [serve] max_n)"
            )))
        }
    };
    match number(body, "best_of")? {
        Some(b) if b != n as f64 => Err(bad(
            "\"best_of\" is not supported: ask for \"n\" choices and rank them yourself (\"logprobs\": true rates each choice's tokens)",
        )),
        _ => Ok(n),
    }
}

/// The sampling fields and the token cap of a request body; `defaults` and `max_tokens` fill
/// in what it leaves out. `ignore_eos` (vLLM's and SGLang's) generates to the cap.
pub(super) fn sampling(
    body: &Value,
    defaults: &SamplingSettings,
    max_tokens: u32,
) -> Result<(SamplingParams, u32), ApiError> {
    let mut s = defaults.clone();
    if let Some(t) = number(body, "temperature")? {
        s.temperature = t as f32;
        s.greedy = t <= 0.0;
    }
    if let Some(v) = number(body, "top_p")? {
        s.top_p = v as f32;
    }
    if let Some(v) = number(body, "top_k")? {
        // OpenAI-style clients send -1 or 0 for "no limit".
        s.top_k = if v < 1.0 { 0 } else { v as i32 };
    }
    if let Some(v) = number(body, "min_p")? {
        s.min_p = v as f32;
    }
    if let Some(v) = number(body, "seed")? {
        s.seed = Some(v as i64 as u32);
    }
    let requested = match number(body, "max_completion_tokens")? {
        Some(v) => Some(v),
        None => number(body, "max_tokens")?,
    };
    let max_tokens = match requested {
        Some(v) if v >= 1.0 => v as u32,
        Some(_) => return Err(bad("\"max_tokens\" must be at least 1")),
        None => max_tokens,
    };
    let mut params = SamplingParams::from_settings(&s);
    params.ignore_eos = match body.get("ignore_eos") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad("\"ignore_eos\" must be true or false")),
    };
    Ok((params, max_tokens))
}

/// OpenAI's finish reason for a stop.
pub(super) fn finish_reason(stop: StopReason, has_calls: bool) -> &'static str {
    match stop {
        StopReason::TokenCap | StopReason::ContextFull => "length",
        _ if has_calls => "tool_calls",
        _ => "stop",
    }
}

pub(super) fn usage(f: &Figures) -> Value {
    json!({
        "prompt_tokens": f.prompt_tokens,
        "completion_tokens": f.generated_tokens,
        "total_tokens": f.prompt_tokens + f.generated_tokens,
        "prompt_tokens_details": {"cached_tokens": f.reused_tokens},
    })
}

/// One call in the OpenAI form (arguments as a JSON string); `index` for stream deltas.
pub(super) fn tool_call(call: &ToolCall, index: Option<usize>) -> Value {
    let mut m = Map::new();
    if let Some(i) = index {
        m.insert("index".into(), json!(i));
    }
    m.insert("id".into(), json!(call.id));
    m.insert("type".into(), json!("function"));
    m.insert(
        "function".into(),
        json!({
            "name": call.name,
            "arguments": Value::Object(call.arguments.clone()).to_string(),
        }),
    );
    Value::Object(m)
}

/// Fields every response and chunk carries.
pub(super) struct Header<'a> {
    pub id: &'a str,
    pub created: u64,
    pub model: &'a str,
}

/// One streamed chunk, of choice `index`.
pub(super) fn chunk(h: &Header<'_>, index: usize, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": h.id,
        "object": "chat.completion.chunk",
        "created": h.created,
        "model": h.model,
        "choices": [{"index": index, "delta": delta, "logprobs": null, "finish_reason": finish}],
    })
}

/// The last chunk when the client asked for usage: no choices.
pub(super) fn usage_chunk(h: &Header<'_>, f: &Figures) -> Value {
    json!({
        "id": h.id,
        "object": "chat.completion.chunk",
        "created": h.created,
        "model": h.model,
        "choices": [],
        "usage": usage(f),
    })
}

/// A whole (non-streamed) response: its choices (see [`choice`]) and the request's figures.
pub(super) fn completion(h: &Header<'_>, choices: Vec<Value>, f: &Figures) -> Value {
    json!({
        "id": h.id,
        "object": "chat.completion",
        "created": h.created,
        "model": h.model,
        "choices": choices,
        "usage": usage(f),
    })
}

/// Choice `index` of a whole response: the parsed turn and why it stopped.
pub(super) fn choice(index: usize, turn: &crate::prompt::ParsedTurn, stop: StopReason) -> Value {
    let mut msg = Map::new();
    msg.insert("role".into(), json!("assistant"));
    let content = if turn.content.is_empty() && !turn.tool_calls.is_empty() {
        Value::Null
    } else {
        json!(turn.content)
    };
    msg.insert("content".into(), content);
    if !turn.reasoning.is_empty() {
        msg.insert("reasoning_content".into(), json!(turn.reasoning));
    }
    if !turn.tool_calls.is_empty() {
        msg.insert(
            "tool_calls".into(),
            Value::Array(turn.tool_calls.iter().map(|c| tool_call(c, None)).collect()),
        );
    }
    json!({
        "index": index,
        "message": Value::Object(msg),
        "logprobs": null,
        "finish_reason": finish_reason(stop, !turn.tool_calls.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_fields_and_defaults() {
        let d = SamplingSettings::default();
        let p = parse_request(
            r#"{"model": "x", "messages": [{"role": "user", "content": "hi"}], "stream": true,
                "stream_options": {"include_usage": true}, "temperature": 0, "max_tokens": 9,
                "chat_template_kwargs": {"enable_thinking": false}}"#,
            &d,
            100,
            16,
        )
        .unwrap();
        assert!(p.stream && p.include_usage && p.sampling.greedy);
        assert_eq!((p.max_tokens, p.thinking), (9, Thinking::Off));
        let p = parse_request(
            r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
            &d,
            100,
            16,
        )
        .unwrap();
        assert_eq!(p.max_tokens, 100);
        assert_eq!(p.sampling.top_k, 20);
        assert!(!p.stream);
        for bad_body in [
            "nope",
            r#"{"messages": []}"#,
            r#"{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}"#,
        ] {
            let r = parse_request(bad_body, &d, 100, 16).unwrap_err();
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad_body}");
        }
    }

    #[test]
    fn n_choices_from_one_to_the_bound_and_no_best_of() {
        let n = |body: &str| choices(&serde_json::from_str(body).unwrap(), 16);
        assert_eq!(n("{}"), Ok(1));
        assert_eq!(n(r#"{"n": null}"#), Ok(1));
        assert_eq!(n(r#"{"n": 4}"#), Ok(4));
        assert_eq!(n(r#"{"n": 16}"#), Ok(16));
        assert_eq!(
            n(r#"{"n": 4, "best_of": 4}"#),
            Ok(4),
            "best_of = n asks nothing more"
        );
        assert_eq!(n(r#"{"best_of": null}"#), Ok(1));
        for body in [
            r#"{"n": 0}"#,
            r#"{"n": 17}"#,
            r#"{"n": 2.5}"#,
            r#"{"n": -1}"#,
        ] {
            let e = n(body).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{body}");
            assert!(e.message.contains("from 1 to 16"), "{body}: {}", e.message);
        }
        let e = n(r#"{"n": "4"}"#).unwrap_err();
        assert!(
            e.message.contains("\"n\" must be a number"),
            "{}",
            e.message
        );
        for body in [r#"{"best_of": 3}"#, r#"{"n": 2, "best_of": 4}"#] {
            let e = n(body).unwrap_err();
            assert!(
                e.message.contains("\"best_of\" is not supported"),
                "{body}: {}",
                e.message
            );
        }
        let p = parse_request(
            r#"{"messages": [{"role": "user", "content": "hi"}], "n": 3}"#,
            &SamplingSettings::default(),
            100,
            16,
        )
        .unwrap();
        assert_eq!(p.n, 3);
    }
}
