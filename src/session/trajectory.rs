//! Trajectories: a finished run as OpenAI-style chat messages (assistant turns with
//! `reasoning_content` and `tool_calls`, tool results with `tool_call_id`), plus figures per
//! step, for research tooling.

use super::rebuild::rebuild_messages;
use crate::protocol::{message_json, Event, FinishReason};
use serde::Serialize;
use serde_json::Value;

/// Token and timing figures of one model turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    pub step: u32,
    pub prompt_tokens: usize,
    pub reused_tokens: usize,
    pub evaluated_tokens: usize,
    pub generated_tokens: usize,
    pub prefill_seconds: f64,
    pub decode_seconds: f64,
    pub stop: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    pub session_id: String,
    pub model: String,
    pub messages: Vec<Value>,
    pub steps: Vec<StepFigures>,
    pub finish_reason: Option<FinishReason>,
    pub final_answer: Option<String>,
    /// What the run is reproduced from (the session header's provenance), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<super::Provenance>,
}

/// The trajectory of a session's events.
pub fn trajectory(session_id: &str, system_prompt: &str, events: &[Event]) -> Trajectory {
    let messages = rebuild_messages(system_prompt, events)
        .iter()
        .map(message_json)
        .collect();
    let mut steps = Vec::new();
    let mut model = String::new();
    let mut finish = (None, None);
    for e in events {
        match e {
            Event::SessionStarted { model: m, .. } => model.clone_from(m),
            Event::TurnFinished {
                turn: step,
                stop,
                figures,
                ..
            } => steps.push(StepFigures {
                step: *step,
                prompt_tokens: figures.prompt_tokens,
                reused_tokens: figures.reused_tokens,
                evaluated_tokens: figures.evaluated_tokens,
                generated_tokens: figures.generated_tokens,
                prefill_seconds: figures.prefill_seconds,
                decode_seconds: figures.decode_seconds,
                stop: serde_json::to_value(stop)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            }),
            Event::TaskFinished {
                reason,
                final_answer,
            } => finish = (Some(*reason), final_answer.clone()),
            _ => {}
        }
    }
    Trajectory {
        session_id: session_id.to_string(),
        model,
        messages,
        steps,
        finish_reason: finish.0,
        final_answer: finish.1,
        provenance: None,
    }
}
