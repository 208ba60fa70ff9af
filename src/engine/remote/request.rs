//! The chat-completions request body: messages and tools in the OpenAI format, the sampling
//! settings (with the non-standard `top_k` and `min_p` that SGLang, vLLM and llama.cpp's
//! server all accept), the turn's token cap, and streaming with usage.
//!
//! Invariants: tool-call arguments go out as a JSON string (as the OpenAI format has them),
//! keys in the order the model wrote them; an assistant turn's reasoning goes out as
//! `reasoning_content`, which the Qwen3.5 template reads; fields from `extra_body` are merged
//! last and win.

use crate::engine::SamplingParams;
use crate::prompt::{ToolSpec, ToolsForm};
use crate::protocol::Message;
use serde_json::{json, Map, Value};

/// One turn's input, as the remote engine sends it.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    pub sampling: SamplingParams,
    /// Ask the server for log-probabilities (`logprobs`, `top_logprobs`) and token ids
    /// (vLLM's `return_token_ids`, which `lilypad serve` answers too).
    pub report: crate::engine::TokenReport,
    /// The `X-Session-ID` to send; `None`: a hash of the conversation's start
    /// (`crate::protocol::session_id`).
    pub session: Option<String>,
}

pub use crate::protocol::message_json;

/// The whole streaming request body for `model`.
pub(super) fn body(request: &ChatRequest, model: &str, extra: &Map<String, Value>) -> Value {
    let mut b = Map::new();
    b.insert("model".into(), json!(model));
    b.insert(
        "messages".into(),
        Value::Array(request.messages.iter().map(message_json).collect()),
    );
    if !request.tools.is_empty() {
        b.insert(
            "tools".into(),
            Value::Array(
                request
                    .tools
                    .iter()
                    .map(|t| t.to_prompt_value(ToolsForm::Openai))
                    .collect(),
            ),
        );
    }
    b.insert("max_tokens".into(), json!(request.max_tokens));
    let s = &request.sampling;
    if s.greedy {
        b.insert("temperature".into(), json!(0.0));
        b.insert("top_k".into(), json!(1));
    } else {
        b.insert("temperature".into(), json!(s.temperature));
        b.insert("top_p".into(), json!(s.top_p));
        b.insert("top_k".into(), json!(s.top_k));
        b.insert("min_p".into(), json!(s.min_p));
    }
    b.insert("seed".into(), json!(s.seed));
    if let Some(top) = request.report.logprobs {
        b.insert("logprobs".into(), json!(true));
        if top > 0 {
            b.insert("top_logprobs".into(), json!(top));
        }
    }
    if request.report.logprobs.is_some() || request.report.prompt_tokens {
        b.insert("return_token_ids".into(), json!(true));
    }
    b.insert("stream".into(), json!(true));
    b.insert("stream_options".into(), json!({"include_usage": true}));
    for (k, v) in extra {
        b.insert(k.clone(), v.clone());
    }
    Value::Object(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    #[test]
    fn messages_in_openai_form() {
        let mut args = Map::new();
        args.insert("file_path".into(), json!("a.py"));
        args.insert("limit".into(), json!(3));
        let call = ToolCall {
            id: "call_0".into(),
            name: "Read".into(),
            arguments: args,
        };
        let m = Message::assistant(Some("think".into()), "", vec![call]);
        let v = message_json(&m);
        assert_eq!(v["reasoning_content"], "think");
        assert_eq!(
            v["tool_calls"][0]["function"]["arguments"],
            r#"{"file_path":"a.py","limit":3}"#
        );
        let t = message_json(&Message::tool(Some("call_0".into()), "1. x"));
        assert_eq!(
            t,
            json!({"role": "tool", "tool_call_id": "call_0", "content": "1. x"})
        );
    }

    #[test]
    fn body_carries_sampling_tools_and_extras() {
        let req = ChatRequest {
            messages: vec![Message::user("hi")],
            tools: crate::prompt::builtin_tools(),
            max_tokens: 77,
            sampling: SamplingParams::from_settings(&Default::default()),
            report: Default::default(),
            session: None,
        };
        let mut extra = Map::new();
        extra.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": true}),
        );
        extra.insert("max_tokens".into(), json!(5));
        let b = body(&req, "m", &extra);
        assert_eq!(b["model"], "m");
        assert_eq!(b["tools"][0]["type"], "function");
        assert_eq!(b["tools"][0]["function"]["name"], "Read");
        assert_eq!(b["top_k"], 20);
        assert_eq!(b["stream"], true);
        assert_eq!(b["max_tokens"], 5, "extra_body wins");
        assert_eq!(b["chat_template_kwargs"]["enable_thinking"], true);
        let greedy = body(
            &ChatRequest {
                sampling: SamplingParams::greedy(),
                ..req
            },
            "m",
            &Map::new(),
        );
        assert_eq!(greedy["temperature"], 0.0);
    }
}
