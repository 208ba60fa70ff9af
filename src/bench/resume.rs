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
    let mut session = Session::new().map_err(render_error)?;
    for _ in 0..turns.saturating_sub(1) {
        session.push_turn();
    }
    let saved_prompt = session.prompt().map_err(render_error)?;
    session.push_turn();
    let prompt = session.prompt().map_err(render_error)?;
    let state = dir.join("session.state");
    engine.reset()?;
    engine.logits(&saved_prompt)?;
    let state_tokens = engine.save_state(&state)?;
    let state_bytes = std::fs::metadata(&state).map(|m| m.len()).unwrap_or(0);
    let first_token = |resume: bool| -> Result<(f64, usize), EngineError> {
        engine.reset()?;
        let t = Instant::now();
        if resume {
            engine.load_state(&state)?;
        }
        let (_, g) = engine
            .generate(GenerateRequest::new(
                prompt.clone(),
                1,
                SamplingParams::greedy(),
            ))?
            .wait()?;
        Ok((t.elapsed().as_secs_f64(), g.figures.prompt_tokens))
    };
    let mut resumed = Vec::new();
    let mut reread = Vec::new();
    let mut prompt_tokens = 0;
    for _ in 0..repeats.max(1) {
        let (s, n) = first_token(true)?;
        resumed.push(s);
        prompt_tokens = n;
        reread.push(first_token(false)?.0);
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
