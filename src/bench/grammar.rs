//! `lilypad bench grammar`: what the tool-call grammar costs while it constrains a call.
//! Generation starts right after `<tool_call>` (the grammar triggered), with and without the
//! grammar, the same seeds alternating; the figure is decode speed with it against without.
//! Outside calls the grammar is not triggered and costs nothing, so this is the worst case.
//!
//! Owns: the measurement. Does not own: the model file (`engine_runs`).

use super::{median, Figure};
use crate::engine::{EngineError, EngineHandle, GenerateRequest, SamplingParams};
use crate::prompt::{builtin_tools, tool_call_grammar};

/// Decode speeds with the grammar and without, tokens per second (medians over the runs).
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub with: f64,
    pub without: f64,
    pub runs: usize,
}

/// `runs` generations of `tokens` tokens each way.
pub fn run(engine: &EngineHandle, tokens: u32, runs: usize) -> Result<Outcome, EngineError> {
    let prompt = "<|im_start|>user\nfix the bug<|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>\n\n<tool_call>";
    let grammar = tool_call_grammar(&builtin_tools());
    let mut with = Vec::new();
    let mut without = Vec::new();
    for i in 0..runs.max(1) {
        for on in [true, false] {
            engine.reset()?;
            let sampling = SamplingParams {
                greedy: false,
                seed: i as u32,
                tool_grammar: on,
                ..SamplingParams::greedy()
            };
            let mut req = GenerateRequest::new(prompt, tokens, sampling);
            req.tool_grammar = if on { grammar.clone() } else { None };
            let (_, g) = engine.generate(req)?.wait()?;
            let f = &g.figures;
            if f.generated_tokens > 1 && f.decode_seconds > 0.0 {
                let speed = f.generated_tokens as f64 / f.decode_seconds;
                if on {
                    with.push(speed);
                } else {
                    without.push(speed);
                }
            }
        }
    }
    Ok(Outcome {
        with: median(&with),
        without: median(&without),
        runs: with.len().min(without.len()),
    })
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        let ratio = if self.without > 0.0 {
            self.with / self.without
        } else {
            0.0
        };
        vec![Figure {
            bench: "grammar".into(),
            name: format!(
                "decode inside a tool call with the tool-call grammar ({} runs each way)",
                self.runs
            ),
            value: self.with,
            unit: "tok/s".into(),
            baseline: "the same without the grammar".into(),
            baseline_value: self.without,
            ratio,
            better: "higher".into(),
            target: Some(0.95),
        }]
    }
}
