//! An attempt as Harbor's Agent Trajectory Interchange Format (ATIF v1.4): the conversation as
//! steps (`system`, `user`, `agent` with `reasoning_content`, `tool_calls` and the results as
//! its `observation`), and on each agent step the `metrics` a trainer reads:
//! `prompt_tokens`, `completion_tokens`, `cached_tokens`, `prompt_token_ids`,
//! `completion_token_ids` and `logprobs`, the same ids as the rollout's.
//!
//! Owns the mapping; not the conversation (`crate::session::trajectory`) or the tokens
//! (`crate::agent::TokenLog`).

use crate::agent::TurnTokens;
use crate::session::{StepFigures, Trajectory};
use serde_json::{json, Map, Value};

pub const SCHEMA_VERSION: &str = "ATIF-v1.4";

/// The ATIF trajectory of `trajectory`, its agent steps carrying `turns`' tokens (the k-th
/// assistant message is the k-th recorded turn).
pub fn atif(trajectory: &Trajectory, turns: &[TurnTokens]) -> Value {
    let mut steps: Vec<Value> = Vec::new();
    let mut agent_turns = turns.iter();
    let mut totals = (0usize, 0usize, 0usize);
    for m in &trajectory.messages {
        let role = m["role"].as_str().unwrap_or_default();
        let text = m["content"].as_str().unwrap_or_default();
        match role {
            "system" | "user" => steps.push(json!({
                "step_id": steps.len() + 1,
                "source": role,
                "message": text,
            })),
            "assistant" => {
                let mut step = Map::new();
                step.insert("step_id".into(), json!(steps.len() + 1));
                step.insert("source".into(), json!("agent"));
                step.insert("model_name".into(), json!(trajectory.model));
                step.insert("message".into(), json!(text));
                if let Some(r) = m.get("reasoning_content").and_then(Value::as_str) {
                    step.insert("reasoning_content".into(), json!(r));
                }
                if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                    let calls: Vec<Value> = calls.iter().map(tool_call).collect();
                    step.insert("tool_calls".into(), Value::Array(calls));
                }
                let tokens = agent_turns.next();
                let figures = tokens.and_then(|t| figures_of(&trajectory.steps, t.turn));
                let metrics = metrics(tokens, figures);
                totals.0 += metrics["prompt_tokens"].as_u64().unwrap_or(0) as usize;
                totals.1 += metrics["completion_tokens"].as_u64().unwrap_or(0) as usize;
                totals.2 += metrics["cached_tokens"].as_u64().unwrap_or(0) as usize;
                step.insert("metrics".into(), metrics);
                steps.push(Value::Object(step));
            }
            "tool" => {
                // A result belongs to the agent step that made the call.
                let result = json!({
                    "source_call_id": m["tool_call_id"],
                    "content": text,
                });
                match steps.last_mut() {
                    Some(last) if last["source"] == "agent" => {
                        let obs = last
                            .as_object_mut()
                            .map(|o| o.entry("observation").or_insert(json!({"results": []})));
                        if let Some(results) = obs.and_then(|o| o["results"].as_array_mut()) {
                            results.push(result);
                        }
                    }
                    _ => steps.push(json!({
                        "step_id": steps.len() + 1,
                        "source": "system",
                        "message": "",
                        "observation": {"results": [result]},
                    })),
                }
            }
            _ => {}
        }
    }
    json!({
        "schema_version": SCHEMA_VERSION,
        "session_id": trajectory.session_id,
        "agent": {
            "name": "lilypad",
            "version": env!("CARGO_PKG_VERSION"),
            "model_name": trajectory.model,
        },
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": totals.0,
            "total_completion_tokens": totals.1,
            "total_cached_tokens": totals.2,
            "total_steps": steps.len(),
        },
        "extra": {"logprobs_of": super::rollout::LOGPROBS_OF},
    })
}

fn figures_of(steps: &[StepFigures], turn: u32) -> Option<&StepFigures> {
    steps.iter().find(|s| s.step == turn)
}

fn metrics(tokens: Option<&TurnTokens>, figures: Option<&StepFigures>) -> Value {
    let mut m = Map::new();
    if let Some(f) = figures {
        m.insert("prompt_tokens".into(), json!(f.prompt_tokens));
        m.insert("completion_tokens".into(), json!(f.generated_tokens));
        m.insert("cached_tokens".into(), json!(f.reused_tokens));
    }
    if let Some(t) = tokens {
        let ids: Vec<u32> = t.sampled.iter().map(|s| s.id).collect();
        let logprobs: Vec<Value> = t.sampled.iter().map(|s| short(s.logprob)).collect();
        // Counts that match the id lists (the ending token is sampled, so it is counted).
        m.insert("prompt_tokens".into(), json!(t.prompt.len()));
        m.insert("completion_tokens".into(), json!(ids.len()));
        m.insert("prompt_token_ids".into(), json!(t.prompt));
        m.insert("completion_token_ids".into(), json!(ids));
        m.insert("logprobs".into(), json!(logprobs));
    }
    Value::Object(m)
}

/// `x` as JSON written as float32 is (shortest digits that read back as `x`), the way the
/// rollout file writes it: a JSON number made from the f64 widening would carry a dozen more
/// digits than the value has.
fn short(x: f32) -> Value {
    x.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A call in ATIF's form: `arguments` as an object (the trajectory holds them as a JSON string).
fn tool_call(c: &Value) -> Value {
    let arguments = match &c["function"]["arguments"] {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| json!({"raw": s})),
        other => other.clone(),
    };
    json!({
        "tool_call_id": c["id"],
        "function_name": c["function"]["name"],
        "arguments": arguments,
    })
}
