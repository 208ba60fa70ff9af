//! Time to first token when resuming a long session: load the state saved at its end
//! (`EngineHandle::save_state`) and read the next prompt, against re-reading that prompt from
//! an empty memory. The session is the scripted one of [`super::agent_turns`]; the resumed
//! prompt is the session's next turn (the last reply and tool result appended), as when a
//! session killed during a tool run is resumed. Each path is timed `repeats` times and the
//! median kept; a one-token generation stands for "first token".

use super::agent_turns::{ratio, render_error};
use super::conversation::Session;
use super::{median, Figure};
use crate::engine::{EngineError, EngineHandle, GenerateRequest, SamplingParams};
use std::path::Path;
use std::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub turns: usize,
    pub prompt_tokens: usize,
    pub state_tokens: usize,
    pub state_bytes: u64,
    pub seconds: f64,
    pub baseline_seconds: f64,
}

pub fn run(
    engine: &EngineHandle,
    turns: usize,
    repeats: usize,
    dir: &Path,
) -> Result<Outcome, EngineError> {
    let (saved_prompt, prompt) = prompts(turns)?;
    let state = dir.join("session.state");
    let (state_tokens, state_bytes) = save(engine, &saved_prompt, &state)?;
    let mut resumed = Vec::new();
    let mut reread = Vec::new();
    let mut prompt_tokens = 0;
    for _ in 0..repeats.max(1) {
        let r = first_token(engine, Some(&state), &prompt)?;
        resumed.push(r.seconds);
        prompt_tokens = r.prompt_tokens;
        reread.push(first_token(engine, None, &prompt)?.seconds);
    }
    Ok(Outcome {
        turns,
        prompt_tokens,
        state_tokens,
        state_bytes,
        seconds: median(&resumed),
        baseline_seconds: median(&reread),
    })
}

/// The scripted session's prompt before its last turn (the one saved) and the prompt of the
/// turn after it (the one resumed), of a `turns`-turn session.
pub(super) fn prompts(turns: usize) -> Result<(String, String), EngineError> {
    let mut session = Session::new().map_err(render_error)?;
    for _ in 0..turns.saturating_sub(1) {
        session.push_turn();
    }
    let saved_prompt = session.prompt().map_err(render_error)?;
    session.push_turn();
    Ok((saved_prompt, session.prompt().map_err(render_error)?))
}

/// Read `prompt` from empty memory and save the state to `path`: tokens saved and file bytes.
pub(super) fn save(
    engine: &EngineHandle,
    prompt: &str,
    path: &Path,
) -> Result<(usize, u64), EngineError> {
    engine.reset()?;
    engine.logits(prompt)?;
    let tokens = engine.save_state(path)?;
    Ok((
        tokens,
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
    ))
}

/// One first token, timed.
#[derive(Debug, Clone, Copy)]
pub(super) struct FirstToken {
    pub seconds: f64,
    pub prompt_tokens: usize,
    /// Prompt tokens the engine evaluated (the rest came from memory).
    pub evaluated_tokens: usize,
    /// How the prompt was matched against memory.
    pub reuse: crate::engine::Reuse,
}

/// From empty memory: load `state` (when given), then generate one token after `prompt`;
/// timed from before the load.
pub(super) fn first_token(
    engine: &EngineHandle,
    state: Option<&Path>,
    prompt: &str,
) -> Result<FirstToken, EngineError> {
    engine.reset()?;
    let t = Instant::now();
    if let Some(state) = state {
        engine.load_state(state)?;
    }
    let (_, g) = engine
        .generate(GenerateRequest::new(prompt, 1, SamplingParams::greedy()))?
        .wait()?;
    Ok(FirstToken {
        seconds: t.elapsed().as_secs_f64(),
        prompt_tokens: g.figures.prompt_tokens,
        evaluated_tokens: g.figures.evaluated_tokens,
        reuse: g.figures.reuse,
    })
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        vec![Figure {
            bench: "resume".into(),
            name: format!(
                "time to first token, resumed session of {} tokens ({} from a {:.1} MB state)",
                self.prompt_tokens,
                self.state_tokens,
                self.state_bytes as f64 / 1e6
            ),
            value: self.seconds,
            unit: "s".into(),
            baseline: "re-read the whole prompt".into(),
            baseline_value: self.baseline_seconds,
            ratio: ratio(self.baseline_seconds, self.seconds),
            better: "higher".into(),
            target: Some(10.0),
        }]
    }
}
