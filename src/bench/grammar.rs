//! `lilypad bench grammar`: what the tool-call grammar costs while it constrains a call.
//! Generation starts right after `<tool_call>` (the grammar triggered), with and without the
//! grammar, runs alternating. Three pairs of arms in one run:
//!
//! - sampled: the model's own draws, the same seeds each way. On random weights the picks
//!   inside the call are nearly all rejected (after the call closes the grammar leaves them
//!   free).
//! - accepted: teacher forcing (`SamplingParams::force_tokens`) makes every pick the next
//!   token of a known well-formed call, so the grammar accepts every pick: the path a model
//!   that writes well-formed calls takes (one check of one token per step).
//! - rejected: the call's head forced (accepted), then inside its value every pick forced to
//!   an end-of-generation token, which the grammar rejects inside a call, so every step
//!   filters the whole vocabulary: the per-token cost of a rejection (the head's tokens taken
//!   out at the accepted arm's time per token), against the accepted arm.
//!
//! Overhead per token inside a call = accept cost + rejection rate x reject cost. Outside calls
//! the grammar is not triggered and costs nothing.
//!
//! Owns: the measurement. Does not own: the model file (`engine_runs`).

use super::{median, Figure};
use crate::engine::{EngineError, EngineHandle, GenerateRequest, SamplingParams};
use crate::prompt::{builtin_tools, tool_call_grammar};

const PROMPT: &str = "<|im_start|>user\nfix the bug<|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>\n\n<tool_call>";

/// What follows `<tool_call>` in a well-formed Write call (the parser's layout), up to the
/// start of its `content` value; then the value and the rest. No `<` in the value, so no tag
/// can be cut short.
const CALL_HEAD: &str =
    "\n<function=Write>\n<parameter=file_path>\nsrc/bench/example.rs\n</parameter>\n<parameter=content>\n";
const CALL_BODY: &str = "//! An example module, written by the bench as a tool call's value.\n\nuse std::collections::HashMap;\n\n/// Counts how often each word occurs in a text.\npub fn word_counts(text: &str) -> HashMap(String, usize) {\n    let mut counts = HashMap::new();\n    for word in text.split_whitespace() {\n        *counts.entry(word.to_lowercase()).or_insert(0) += 1;\n    }\n    counts\n}\n\n/// The most frequent word, if the text has any.\npub fn most_frequent(text: &str) -> Option(String) {\n    word_counts(text)\n        .into_iter()\n        .max_by_key(|(_, n)| *n)\n        .map(|(w, _)| w)\n}\n</parameter>\n</function>\n</tool_call>";

/// Decode speed with the grammar and without, tokens per second (medians over the runs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pair {
    pub with: f64,
    pub without: f64,
    /// Runs measured each way.
    pub runs: usize,
    /// Tokens generated per run with the grammar (the fewest).
    pub tokens: usize,
}

impl Pair {
    fn ratio(&self) -> f64 {
        if self.without > 0.0 {
            self.with / self.without
        } else {
            0.0
        }
    }
}

/// The three pairs.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The model's own draws (random weights: inside the call nearly all rejected).
    pub sampled: Pair,
    /// A forced well-formed call: every pick accepted.
    pub accepted: Pair,
    /// Every pick after the call's head forced to a token the grammar rejects (`without`: 0,
    /// not run; `with` and `tokens` count the rejected tokens alone).
    pub rejected: Pair,
    /// Whether the grammar kept every token of the forced call (and of the rejected arm's
    /// head) in every run; else the accepted arm took the rejection path for some of them.
    pub call_kept: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Arm {
    Sampled,
    Accepted,
    Rejected,
}

/// `runs` generations of up to `tokens` tokens for each arm and each way (the accepted arm
/// generates the whole call, whatever `tokens` is).
pub fn run(engine: &EngineHandle, tokens: u32, runs: usize) -> Result<Outcome, EngineError> {
    let grammar = tool_call_grammar(&builtin_tools());
    let call = engine.tokenize(&format!("{CALL_HEAD}{CALL_BODY}"))?;
    // The rejected arm: the call's head (accepted), then inside the value every pick forced to
    // end-of-generation, which the grammar rejects until the value and the call are closed.
    let head = engine.tokenize(CALL_HEAD)?;
    let eog = engine.tokenize("<|im_end|>")?;
    let mut rows: Vec<(Arm, bool, f64, usize)> = Vec::new();
    let mut call_kept = true;
    for i in 0..runs.max(1) {
        for arm in [Arm::Sampled, Arm::Accepted, Arm::Rejected] {
            for on in [true, false] {
                if arm == Arm::Rejected && !on {
                    // Without the grammar a forced end-of-generation token ends the reply.
                    continue;
                }
                engine.reset()?;
                let (force_tokens, max) = match arm {
                    Arm::Sampled => (Vec::new(), tokens),
                    Arm::Accepted => (call.clone(), call.len() as u32),
                    Arm::Rejected => {
                        let forced = [head.clone(), eog.repeat(tokens as usize)].concat();
                        let n = forced.len() as u32;
                        (forced, n)
                    }
                };
                let sampling = SamplingParams {
                    greedy: false,
                    seed: i as u32,
                    tool_grammar: on,
                    force_tokens,
                    ..SamplingParams::greedy()
                };
                let mut req = GenerateRequest::new(PROMPT, max, sampling);
                req.tool_grammar = if on { grammar.clone() } else { None };
                let (_, g) = engine.generate(req)?.wait()?;
                match arm {
                    Arm::Accepted if on => call_kept &= g.tokens == call,
                    Arm::Rejected => call_kept &= g.tokens.starts_with(&head),
                    _ => {}
                }
                let f = &g.figures;
                if f.generated_tokens > 1 && f.decode_seconds > 0.0 {
                    rows.push((arm, on, f.decode_seconds, f.generated_tokens));
                }
            }
        }
    }
    let of = |arm: Arm, on: bool| rows.iter().filter(move |r| r.0 == arm && r.1 == on);
    let pair = |arm: Arm, speed: &dyn Fn(f64, usize) -> f64| {
        let with: Vec<f64> = of(arm, true).map(|r| speed(r.2, r.3)).collect();
        let without: Vec<f64> = of(arm, false).map(|r| speed(r.2, r.3)).collect();
        Pair {
            with: median(&with),
            without: median(&without),
            runs: if arm == Arm::Rejected {
                with.len()
            } else {
                with.len().min(without.len())
            },
            tokens: of(arm, true).map(|r| r.3).min().unwrap_or(0),
        }
    };
    let plain = |secs: f64, n: usize| n as f64 / secs;
    let accepted = pair(Arm::Accepted, &plain);
    // The rejected tokens alone: the head's tokens at the accepted arm's time per token off
    // (where the rest is too cheap to tell from that, as on a tiny vocabulary, the whole run).
    let head_secs = head.len() as f64 / accepted.with.max(1e-9);
    let rejected_only = |secs: f64, n: usize| {
        let rest = n.saturating_sub(head.len()) as f64;
        let t = secs - head_secs;
        if rest > 0.0 && t > 0.0 {
            rest / t
        } else {
            n as f64 / secs
        }
    };
    let mut rejected = pair(Arm::Rejected, &rejected_only);
    rejected.tokens = rejected.tokens.saturating_sub(head.len());
    Ok(Outcome {
        sampled: pair(Arm::Sampled, &plain),
        accepted,
        rejected,
        call_kept,
    })
}

/// Milliseconds per token at `tps` tokens per second (0 for none).
fn ms(tps: f64) -> f64 {
    if tps > 0.0 {
        1e3 / tps
    } else {
        0.0
    }
}

impl Outcome {
    /// The grammar's work per token on an accepted pick (ms), against no grammar.
    pub fn accept_ms(&self) -> f64 {
        ms(self.accepted.with) - ms(self.accepted.without)
    }

    /// What a rejected pick costs more than an accepted one (ms per token).
    pub fn reject_ms(&self) -> f64 {
        ms(self.rejected.with) - ms(self.accepted.with)
    }

    /// The share of the sampled arm's picks that its extra time implies were rejected.
    pub fn implied_rejection_rate(&self) -> Option<f64> {
        let extra = ms(self.sampled.with) - ms(self.sampled.without) - self.accept_ms();
        (self.reject_ms() > 0.0).then(|| extra / self.reject_ms())
    }

    pub fn figures(&self) -> Vec<Figure> {
        let s = &self.sampled;
        let a = &self.accepted;
        let r = &self.rejected;
        vec![
            Figure {
                bench: "grammar".into(),
                name: format!(
                    "decode inside a tool call with the tool-call grammar, the model's own draws ({} runs each way; random weights)",
                    s.runs
                ),
                value: s.with,
                unit: "tok/s".into(),
                baseline: "the same without the grammar".into(),
                baseline_value: s.without,
                ratio: s.ratio(),
                better: "higher".into(),
                target: Some(0.95),
            },
            Figure {
                bench: "grammar".into(),
                name: format!(
                    "decode of a forced well-formed call ({} tokens) with the grammar, {} ({} runs each way)",
                    a.tokens,
                    if self.call_kept {
                        "every pick accepted"
                    } else {
                        "SOME PICKS REJECTED"
                    },
                    a.runs
                ),
                value: a.with,
                unit: "tok/s".into(),
                baseline: "the same forced call without the grammar".into(),
                baseline_value: a.without,
                ratio: a.ratio(),
                better: "higher".into(),
                target: Some(0.95),
            },
            Figure {
                bench: "grammar".into(),
                name: format!(
                    "time per token with every pick rejected (the grammar filters the whole vocabulary; {} tokens, {} runs)",
                    r.tokens, r.runs
                ),
                value: ms(r.with),
                unit: "ms/token".into(),
                baseline: "every pick accepted (the forced call, with the grammar)".into(),
                baseline_value: ms(a.with),
                ratio: if a.with > 0.0 {
                    ms(r.with) / ms(a.with)
                } else {
                    0.0
                },
                better: "lower".into(),
                target: None,
            },
        ]
    }
}
