//! A scripted agent session through the real engine. Each turn's prompt is rendered with the
//! built-in chat template from the growing message list and read by the engine, which reuses
//! what its memory already holds; the baseline forgets everything first (`reset`) and reads the
//! whole prompt, as a server without prefix reuse would. Both read the same prompts in the same
//! run, interleaved turn by turn, so machine noise hits both alike.
//!
//! What is measured is prompt reading (prefill), the part prefix reuse changes: the model's
//! replies are scripted and read as part of the next prompt rather than generated, so "new
//! prompt tokens" of a turn counts the previous reply, the tool result and the new turn header.

use super::conversation::Session;
use super::Figure;
use crate::engine::{EngineError, EngineHandle};
use std::time::Instant;

/// What one run of the session measured.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub turns: usize,
    /// Prompt tokens of the last turn.
    pub final_prompt_tokens: usize,
    /// Tokens each turn's prompt has that the previous turn's prompt had not (summed).
    pub new_tokens: usize,
    /// Tokens the engine read, with prefix reuse (summed).
    pub evaluated_tokens: usize,
    /// Tokens the baseline read (every prompt in full, summed).
    pub baseline_tokens: usize,
    /// Turns on which the baseline was measured.
    pub sampled_turns: usize,
    /// Lilypad's prompt reading on the sampled turns, and on all turns.
    pub seconds: f64,
    pub all_seconds: f64,
    /// The baseline's prompt reading on the sampled turns.
    pub baseline_seconds: f64,
    /// Requests that had to rewind or re-read instead of extending memory.
    pub not_extended: usize,
}

/// Run `turns` scripted turns on `engine`; the baseline is measured on every
/// `baseline_every`-th turn (1: every turn), and the wall-time figure compares Lilypad and the
/// baseline on those same turns.
pub fn run(
    engine: &EngineHandle,
    turns: usize,
    baseline_every: usize,
) -> Result<Outcome, EngineError> {
    let every = baseline_every.max(1);
    let mut session = Session::new().map_err(render_error)?;
    engine.reset()?;
    let mut out = Outcome {
        turns,
        ..Outcome::default()
    };
    let mut previous: Vec<u32> = Vec::new();
    for turn in 0..turns {
        let prompt = session.prompt().map_err(render_error)?;
        let tokens = engine.tokenize(&prompt)?;
        let common = previous
            .iter()
            .zip(tokens.iter())
            .take_while(|(a, b)| a == b)
            .count();
        out.new_tokens += tokens.len() - common;
        // Lilypad: memory holds the previous prompt.
        let t = Instant::now();
        let (_, figures) = engine.logits(&prompt)?;
        let seconds = t.elapsed().as_secs_f64();
        out.all_seconds += seconds;
        out.evaluated_tokens += figures.evaluated_tokens;
        if !matches!(
            figures.reuse,
            crate::engine::Reuse::Extended | crate::engine::Reuse::Fresh
        ) {
            out.not_extended += 1;
        }
        // The last turn is always sampled, so the longest prompt is in the baseline.
        if turn % every != every - 1 && turn + 1 != turns {
            out.final_prompt_tokens = tokens.len();
            previous = tokens;
            session.push_turn();
            continue;
        }
        out.sampled_turns += 1;
        out.seconds += seconds;
        // Baseline: nothing in memory, read it all. Afterwards memory holds this prompt, as
        // it would after the reuse path, so the next turn starts from the same place.
        engine.reset()?;
        let t = Instant::now();
        let (_, figures) = engine.logits(&prompt)?;
        out.baseline_seconds += t.elapsed().as_secs_f64();
        out.baseline_tokens += figures.evaluated_tokens;
        out.final_prompt_tokens = tokens.len();
        previous = tokens;
        session.push_turn();
    }
    Ok(out)
}

/// A prompt that cannot be rendered, as an engine error (the benches report one error type).
pub(crate) fn render_error(e: crate::prompt::PromptError) -> EngineError {
    EngineError::Prompt(e)
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        let b = "agent-turns".to_string();
        vec![
            Figure {
                bench: b.clone(),
                name: format!(
                    "tokens read / new prompt tokens ({} turns, {} tokens at the end)",
                    self.turns, self.final_prompt_tokens
                ),
                value: self.evaluated_tokens as f64,
                unit: "tokens".into(),
                baseline: "new prompt tokens".into(),
                baseline_value: self.new_tokens as f64,
                ratio: ratio(self.evaluated_tokens as f64, self.new_tokens as f64),
                better: "lower".into(),
                target: Some(1.02),
            },
            Figure {
                bench: b,
                name: format!(
                    "prompt reading wall time, {} of {} turns (all turns: {:.2} s)",
                    self.sampled_turns, self.turns, self.all_seconds
                ),
                value: self.seconds,
                unit: "s".into(),
                baseline: format!("reset, re-read the prompt: {} tokens", self.baseline_tokens),
                baseline_value: self.baseline_seconds,
                ratio: ratio(self.baseline_seconds, self.seconds),
                better: "higher".into(),
                target: None,
            },
        ]
    }
}

pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}
