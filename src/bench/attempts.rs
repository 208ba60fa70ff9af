//! Attempts: the model's part of `--attempts N` (the first prompt read once and forked into
//! every attempt's sequence, then the attempts decoded together, each with its own seed)
//! against the same N attempts one after the other, each reading its prompt from empty
//! memory. The prompt is the agent's real first prompt: the harness's system prompt and tool
//! schemas rendered by the template, and a task.
//!
//! Does not own: loading the engine (`super::engine_runs`) or the sandboxes, whose start-up
//! costs the same in both arms and is left out.

use super::agent_turns::ratio;
use super::Figure;
use crate::engine::{EngineError, EngineHandle, SamplingParams, TemplatedModel, TurnRequest};
use crate::launch::attempts::{attempt_seed, attempt_sequence};
use crate::prompt::{PromptSettings, Renderer};
use crate::protocol::Message;
use std::sync::Arc;
use std::time::Instant;

/// Wall times of N attempts together and one after the other.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub attempts: usize,
    pub prompt_tokens: usize,
    pub tokens: u32,
    pub together_s: f64,
    pub one_by_one_s: f64,
}

impl Outcome {
    pub fn figure(&self) -> Figure {
        Figure {
            bench: "attempts".into(),
            name: format!(
                "--attempts {} wall time (prompt {} tokens, {} tokens each)",
                self.attempts, self.prompt_tokens, self.tokens
            ),
            value: self.together_s,
            unit: "s".into(),
            baseline: format!("{} attempts one after the other, same seeds", self.attempts),
            baseline_value: self.one_by_one_s,
            ratio: ratio(self.together_s, self.one_by_one_s),
            better: "lower".into(),
            target: Some(0.5),
        }
    }
}

/// Measure `n` attempts of `tokens` sampled tokens each on `engine`.
pub fn run(
    engine: Arc<EngineHandle>,
    n: usize,
    tokens: u32,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let prompt = PromptSettings::default();
    let model = TemplatedModel::new(engine.clone(), Renderer::builtin(&prompt)?);
    let system = prompt.system_prompt()?;
    let tools = prompt.tools()?;
    let turn = |i: usize| {
        // The model's own sampling defaults, a seed per attempt as `--attempts` gives them.
        let mut sampling = SamplingParams::from_settings(&Default::default());
        sampling.greedy = false;
        sampling.seed = attempt_seed(1234, i as u32 + 1);
        TurnRequest {
            messages: vec![
                Message::system(system.clone()),
                Message::user(
                    "The tests in tests/test_calc.py fail: fix calc.py so that they pass.",
                ),
            ],
            tools: tools.clone(),
            max_tokens: tokens,
            sampling,
            sequence: attempt_sequence(i as u32 + 1),
            pin_turn: false,
            report: Default::default(),
        }
    };
    let wait = |s: crate::engine::GenerationStream| -> Result<usize, EngineError> {
        Ok(s.wait()?.1.figures.prompt_tokens)
    };
    // Warm-up: one attempt, so that neither arm pays first-use costs.
    engine.reset()?;
    wait(model.start(&turn(0))?)?;
    engine.reset()?;
    let t = Instant::now();
    let mut prompt_tokens = 0;
    for i in 0..n {
        // Each from empty memory, as separate runs would be.
        engine.reset()?;
        prompt_tokens = wait(model.start(&turn(i))?)?;
    }
    let one_by_one_s = t.elapsed().as_secs_f64();
    engine.reset()?;
    let t = Instant::now();
    let copies: Vec<_> = (1..n).map(|i| attempt_sequence(i as u32 + 1)).collect();
    model.share_prompt(&turn(0), &copies)?;
    let streams = (0..n)
        .map(|i| model.start(&turn(i)))
        .collect::<Result<Vec<_>, _>>()?;
    for s in streams {
        wait(s)?;
    }
    let together_s = t.elapsed().as_secs_f64();
    Ok(Outcome {
        attempts: n,
        prompt_tokens,
        tokens,
        together_s,
        one_by_one_s,
    })
}
