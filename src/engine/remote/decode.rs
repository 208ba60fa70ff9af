//! One reply's chunks turned into engine events: reasoning and content deltas, tool calls
//! assembled from their fragments, the finish reason and the server's token counts.
//!
//! Style detection (`auto`): a `reasoning_content`/`reasoning` or `tool_calls` delta means the
//! server parses (content is then the visible answer); `<think>`, `</think>` or `<tool_call>`
//! inside `content` means raw text (Lilypad's parser must run). Until one of them shows up,
//! content is held back; once known, the style is remembered for the engine's later replies,
//! so only a first reply can be held. A reply that ends undecided is raw when it was cut by
//! the token cap (reasoning never closed) and the visible answer otherwise.
//!
//! Tool calls: fragments are joined per `index`; a call is complete when a later index starts
//! or the reply finishes. Arguments that are not a JSON object become `{}` (the model's own
//! harness does the same with malformed arguments).

use super::{Learned, OutputStyle};
use crate::engine::{EngineEvent, ParsedOutput, StopReason};
use crate::protocol::ToolCall;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Token counts the server reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Usage {
    pub prompt: usize,
    pub completion: usize,
    pub cached: usize,
}

#[derive(Debug, Default)]
struct CallParts {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one reply.
#[derive(Debug)]
pub(super) struct Decoder {
    style: OutputStyle,
    held: String,
    calls: BTreeMap<u64, CallParts>,
    next_call_number: usize,
    pub finish: Option<String>,
    pub usage: Option<Usage>,
    /// Whether anything was delivered (after that, no retry is possible).
    pub delivered: bool,
    /// When the first reasoning or content arrived (the end of prompt reading, for figures).
    pub first_output: Option<std::time::Instant>,
    /// Non-empty text deltas received, a rough stand-in for the generated token count when the
    /// server reports no usage (llama-cpp-python's streams, for one).
    pub deltas: usize,
    /// The reply's text as it arrived (reasoning, content, tool names and arguments), for
    /// counting its tokens on the client when the server reports no usage.
    pub text: String,
    /// Token ids of the reply (`choices[].token_ids`, vLLM's) and their log-probabilities
    /// (`choices[].logprobs.content[].logprob`), as far as the server sent them.
    pub token_ids: Vec<u32>,
    pub logprobs: Vec<f32>,
    /// The prompt's ids (`prompt_token_ids`), when the server sent them.
    pub prompt_token_ids: Option<Vec<u32>>,
}

fn as_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl Decoder {
    pub(super) fn new(configured: OutputStyle, learned: &Learned) -> Self {
        let style = match configured {
            OutputStyle::Auto => learned.get().unwrap_or(OutputStyle::Auto),
            s => s,
        };
        Self {
            style,
            held: String::new(),
            calls: BTreeMap::new(),
            next_call_number: 0,
            finish: None,
            usage: None,
            delivered: false,
            first_output: None,
            deltas: 0,
            text: String::new(),
            token_ids: Vec::new(),
            logprobs: Vec::new(),
            prompt_token_ids: None,
        }
    }

    /// The sampled tokens rated, when the server sent as many ids as log-probabilities
    /// (empty otherwise: ids without ratings, or the other way round, cannot be paired).
    pub(super) fn sampled(&self) -> Vec<crate::engine::SampledToken> {
        if self.token_ids.len() != self.logprobs.len() {
            if !self.token_ids.is_empty() || !self.logprobs.is_empty() {
                tracing::warn!(
                    ids = self.token_ids.len(),
                    logprobs = self.logprobs.len(),
                    "the server sent token ids and log-probabilities that do not pair up"
                );
            }
            return Vec::new();
        }
        self.token_ids
            .iter()
            .zip(&self.logprobs)
            .map(|(&id, &logprob)| crate::engine::SampledToken {
                id,
                logprob,
                top: Vec::new(),
            })
            .collect()
    }

    /// Token ids and ratings a chunk carries.
    fn tokens(&mut self, chunk: &Value, choice: &Value) {
        if let Some(ids) = chunk.get("prompt_token_ids").and_then(Value::as_array) {
            self.prompt_token_ids = ids
                .iter()
                .map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
                .collect();
        }
        if let Some(ids) = choice.get("token_ids").and_then(Value::as_array) {
            self.token_ids.extend(
                ids.iter()
                    .filter_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok())),
            );
        }
        if let Some(content) = choice
            .pointer("/logprobs/content")
            .and_then(Value::as_array)
        {
            self.logprobs.extend(
                content
                    .iter()
                    .filter_map(|t| t.get("logprob").and_then(Value::as_f64))
                    .map(|l| l as f32),
            );
        }
    }

    fn decide(&mut self, style: OutputStyle, learned: &Learned, out: &mut Vec<EngineEvent>) {
        if self.style != OutputStyle::Auto {
            return;
        }
        self.style = style;
        learned.set(style);
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            out.push(self.content_event(held));
        }
    }

    fn content_event(&self, text: String) -> EngineEvent {
        match self.style {
            OutputStyle::Raw => EngineEvent::Piece(text),
            _ => EngineEvent::Parsed(ParsedOutput::Content(text)),
        }
    }

    fn mark_output(&mut self) {
        self.first_output
            .get_or_insert_with(std::time::Instant::now);
    }

    /// One chunk (`chat.completion.chunk`) or one whole response (`chat.completion`).
    pub(super) fn chunk(&mut self, chunk: &Value, learned: &Learned) -> Vec<EngineEvent> {
        let mut out = Vec::new();
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0) as usize;
            self.usage = Some(Usage {
                prompt: n(u.get("prompt_tokens")),
                completion: n(u.get("completion_tokens")),
                cached: n(u.pointer("/prompt_tokens_details/cached_tokens")),
            });
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let Some(choice) = choice else {
            return out;
        };
        self.tokens(chunk, choice);
        // Streams carry `delta`; a whole (non-streamed) response carries `message`.
        let delta = choice.get("delta").or_else(|| choice.get("message"));
        if let Some(d) = delta {
            self.delta(d, learned, &mut out);
        }
        if let Some(f) = as_str(choice.get("finish_reason")) {
            self.finish = Some(f.to_string());
        }
        if !out.is_empty() {
            self.delivered = true;
        }
        out
    }

    fn delta(&mut self, d: &Value, learned: &Learned, out: &mut Vec<EngineEvent>) {
        let reasoning = as_str(d.get("reasoning_content")).or_else(|| as_str(d.get("reasoning")));
        if let Some(r) = reasoning {
            self.deltas += 1;
            self.text.push_str(r);
            self.mark_output();
            self.decide(OutputStyle::Parsed, learned, out);
            out.push(EngineEvent::Parsed(ParsedOutput::Reasoning(r.to_string())));
        }
        if let Some(c) = as_str(d.get("content")) {
            self.deltas += 1;
            self.text.push_str(c);
            self.mark_output();
            if self.style == OutputStyle::Auto {
                self.held.push_str(c);
                let h = &self.held;
                if h.contains("</think>") || h.contains("<think>") || h.contains("<tool_call>") {
                    self.decide(OutputStyle::Raw, learned, out);
                }
            } else {
                out.push(self.content_event(c.to_string()));
            }
        }
        if let Some(calls) = d.get("tool_calls").and_then(Value::as_array) {
            self.decide(OutputStyle::Parsed, learned, out);
            for (pos, c) in calls.iter().enumerate() {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
                // A new index completes the calls before it.
                let done: Vec<u64> = self.calls.keys().copied().filter(|&k| k < index).collect();
                for k in done {
                    self.complete(k, out);
                }
                let parts = self.calls.entry(index).or_default();
                if let Some(id) = as_str(c.get("id")) {
                    parts.id = id.to_string();
                }
                if let Some(n) = as_str(c.pointer("/function/name")) {
                    parts.name.push_str(n);
                }
                if let Some(a) = c.pointer("/function/arguments") {
                    match a {
                        Value::String(s) => parts.arguments.push_str(s),
                        // Some servers send the arguments as an object in whole responses.
                        Value::Object(_) => parts.arguments = a.to_string(),
                        _ => {}
                    }
                }
            }
        }
    }

    fn complete(&mut self, index: u64, out: &mut Vec<EngineEvent>) {
        let Some(parts) = self.calls.remove(&index) else {
            return;
        };
        self.text.push_str(&parts.name);
        self.text.push_str(&parts.arguments);
        let text = parts.arguments.trim();
        let arguments = match serde_json::from_str::<Map<String, Value>>(text) {
            Ok(m) => m,
            Err(e) => {
                if !text.is_empty() {
                    tracing::warn!(call = %parts.name, "tool-call arguments are not a JSON object ({e}); using {{}}");
                }
                Map::new()
            }
        };
        let id = if parts.id.is_empty() {
            format!("call_{}", self.next_call_number)
        } else {
            parts.id
        };
        self.next_call_number += 1;
        out.push(EngineEvent::Parsed(ParsedOutput::ToolCall(ToolCall {
            id,
            name: parts.name,
            arguments,
        })));
        self.delivered = true;
    }

    /// The reply is over: release held content and complete open calls.
    pub(super) fn finish(&mut self) -> Vec<EngineEvent> {
        let mut out = Vec::new();
        if self.style == OutputStyle::Auto && !self.held.is_empty() {
            // Undecided: do not learn from it (see the module docs).
            self.style = if self.finish.as_deref() == Some("length") {
                OutputStyle::Raw
            } else {
                OutputStyle::Parsed
            };
            let held = std::mem::take(&mut self.held);
            out.push(self.content_event(held));
        }
        let keys: Vec<u64> = self.calls.keys().copied().collect();
        for k in keys {
            self.complete(k, &mut out);
        }
        out
    }

    /// Why the reply stopped. `length` is reported as the token cap: servers use it for a
    /// full context too, and cannot be told apart from here.
    pub(super) fn stop_reason(&self) -> StopReason {
        match self.finish.as_deref() {
            Some("length") => StopReason::TokenCap,
            _ => StopReason::EndOfGeneration,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    #[test]
    fn parsed_server_reasoning_content_and_calls() {
        let learned = Learned::default();
        let mut d = Decoder::new(OutputStyle::Auto, &learned);
        let mut ev = d.chunk(
            &chunk(json!({"role": "assistant", "content": ""})),
            &learned,
        );
        ev.extend(d.chunk(&chunk(json!({"reasoning_content": "hm"})), &learned));
        ev.extend(d.chunk(&chunk(json!({"content": "ok"})), &learned));
        ev.extend(d.chunk(&chunk(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_"}}]})), &learned));
        ev.extend(d.chunk(
            &chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "path\": \"a\"}"}}]}),
            ),
            &learned,
        ));
        ev.extend(d.chunk(&chunk(json!({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "Glob", "arguments": "not json"}}]})), &learned));
        ev.extend(d.chunk(
            &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            &learned,
        ));
        ev.extend(d.chunk(&json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 6}}}), &learned));
        ev.extend(d.finish());
        let mut args = Map::new();
        args.insert("file_path".into(), json!("a"));
        assert_eq!(
            ev,
            vec![
                EngineEvent::Parsed(ParsedOutput::Reasoning("hm".into())),
                EngineEvent::Parsed(ParsedOutput::Content("ok".into())),
                EngineEvent::Parsed(ParsedOutput::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "Read".into(),
                    arguments: args
                })),
                EngineEvent::Parsed(ParsedOutput::ToolCall(ToolCall {
                    id: "c2".into(),
                    name: "Glob".into(),
                    arguments: Map::new()
                })),
            ]
        );
        assert_eq!(learned.get(), Some(OutputStyle::Parsed));
        assert_eq!(
            d.usage,
            Some(Usage {
                prompt: 10,
                completion: 4,
                cached: 6
            })
        );
        assert_eq!(d.stop_reason(), StopReason::EndOfGeneration);
    }

    #[test]
    fn raw_server_is_recognised_and_remembered() {
        let learned = Learned::default();
        let mut d = Decoder::new(OutputStyle::Auto, &learned);
        let mut ev = d.chunk(&chunk(json!({"content": "let me see"})), &learned);
        assert!(ev.is_empty(), "held until the style is known");
        ev.extend(d.chunk(&chunk(json!({"content": "</think>\n\nhi"})), &learned));
        assert_eq!(
            ev,
            vec![EngineEvent::Piece("let me see</think>\n\nhi".into())]
        );
        let mut next = Decoder::new(OutputStyle::Auto, &learned);
        assert_eq!(
            next.chunk(&chunk(json!({"content": "x"})), &learned),
            vec![EngineEvent::Piece("x".into())]
        );
    }

    #[test]
    fn undecided_reply_ends_by_its_finish_reason() {
        let learned = Learned::default();
        let mut d = Decoder::new(OutputStyle::Auto, &learned);
        d.chunk(&chunk(json!({"content": "answer"})), &learned);
        d.finish = Some("stop".into());
        assert_eq!(
            d.finish(),
            vec![EngineEvent::Parsed(ParsedOutput::Content("answer".into()))]
        );
        assert_eq!(learned.get(), None, "nothing learned");
        let mut cut = Decoder::new(OutputStyle::Auto, &learned);
        cut.chunk(&chunk(json!({"content": "thinking"})), &learned);
        cut.finish = Some("length".into());
        assert_eq!(cut.finish(), vec![EngineEvent::Piece("thinking".into())]);
        assert_eq!(cut.stop_reason(), StopReason::TokenCap);
    }

    #[test]
    fn whole_response_message() {
        let learned = Learned::default();
        let mut d = Decoder::new(OutputStyle::Raw, &learned);
        let ev = d.chunk(
            &json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "a</think>b"}, "finish_reason": "stop"}]}),
            &learned,
        );
        assert_eq!(ev, vec![EngineEvent::Piece("a</think>b".into())]);
        assert_eq!(d.finish.as_deref(), Some("stop"));
    }
}
