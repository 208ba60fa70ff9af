//! `lilypad bench logprobs`: what rating every sampled token costs decoding. The same greedy
//! generation (end-of-generation banned, so every run is the same length) is decoded without
//! ratings, with log-probabilities, and with log-probabilities and the top 20 alternatives,
//! the three ways alternating run by run; decode speeds are compared as medians. Also the time
//! of one rating alone, on a row of the model's vocabulary, so that the cost on a faster
//! machine (a GPU decoding many more tokens per second) can be read off: it is the same work
//! on the CPU there, per token.
//!
//! Owns: the measurement. Does not own: the model file (`engine_runs`), the rating
//! (`crate::engine::logprob`).

use super::{median, Figure};
use crate::engine::logprob;
use crate::engine::{EngineError, EngineHandle, GenerateRequest, SamplingParams, TokenReport};
use std::time::Instant;

const PROMPT: &str =
    "<|im_start|>user\nexplain the failing test<|im_end|>\n<|im_start|>assistant\n<think>\n";

/// Decode speeds (tokens per second, medians) each way, and one rating's time alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    pub off: f64,
    pub logprobs: f64,
    pub top20: f64,
    pub runs: usize,
    pub tokens: usize,
    /// Microseconds to rate one token (log-softmax at its row) on this vocabulary.
    pub rate_us: f64,
    pub rate_top20_us: f64,
    pub vocabulary: usize,
    /// The three ways generated the same tokens.
    pub same_tokens: bool,
}

/// `runs` generations of `tokens` tokens each way.
pub fn run(engine: &EngineHandle, tokens: u32, runs: usize) -> Result<Outcome, EngineError> {
    let ways = [None, Some(0u8), Some(20u8)];
    let mut speeds: [Vec<f64>; 3] = Default::default();
    let mut first: Option<Vec<u32>> = None;
    let mut same = true;
    let mut fewest = usize::MAX;
    // A warm-up run, not counted.
    for i in 0..=runs.max(1) {
        for (w, &way) in ways.iter().enumerate() {
            engine.reset()?;
            let sampling = SamplingParams {
                ignore_eos: true,
                ..SamplingParams::greedy()
            };
            let mut req = GenerateRequest::new(PROMPT, tokens, sampling);
            req.report = TokenReport {
                logprobs: way,
                prompt_tokens: false,
            };
            let (_, g) = engine.generate(req)?.wait()?;
            match &first {
                None => first = Some(g.tokens.clone()),
                Some(f) => same &= *f == g.tokens,
            }
            let f = &g.figures;
            if i > 0 && f.generated_tokens > 1 && f.decode_seconds > 0.0 {
                // The first token comes with the prompt; the rest are decode steps.
                speeds[w].push((f.generated_tokens - 1) as f64 / f.decode_seconds);
                fewest = fewest.min(f.generated_tokens);
            }
        }
    }
    let vocabulary = engine.model().vocabulary as usize;
    let (rate_us, rate_top20_us) = rating_alone(vocabulary);
    Ok(Outcome {
        off: median(&speeds[0]),
        logprobs: median(&speeds[1]),
        top20: median(&speeds[2]),
        runs: speeds.iter().map(Vec::len).min().unwrap_or(0),
        tokens: if fewest == usize::MAX { 0 } else { fewest },
        rate_us,
        rate_top20_us,
        vocabulary,
        same_tokens: same,
    })
}

/// Microseconds per rating of one row of `n` logits: plain, and with the top 20.
fn rating_alone(n: usize) -> (f64, f64) {
    // A spread like a model's: a few high logits, most far below.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let row: Vec<f32> = (0..n.max(1))
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 30.0 - 20.0
        })
        .collect();
    let time = |top: u8| {
        let reps = 200;
        let mut sink = 0f32;
        let t = Instant::now();
        for i in 0..reps {
            if let Some(r) = logprob::rate(&row, (i * 7919 % row.len()) as u32, top) {
                sink += r.logprob;
            }
        }
        std::hint::black_box(sink);
        t.elapsed().as_secs_f64() * 1e6 / reps as f64
    };
    (time(0), time(20))
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        let row = |name: String, value: f64| Figure {
            bench: "logprobs".into(),
            name,
            value,
            unit: "tokens/s".into(),
            baseline: "the same decode without ratings".into(),
            baseline_value: self.off,
            ratio: if self.off > 0.0 {
                value / self.off
            } else {
                0.0
            },
            better: "higher".into(),
            target: Some(0.97),
        };
        vec![
            row(
                format!(
                    "decode with every token's log-probability ({} runs of {} tokens each way)",
                    self.runs, self.tokens
                ),
                self.logprobs,
            ),
            row(
                "decode with log-probabilities and the top 20 alternatives".into(),
                self.top20,
            ),
        ]
    }

    /// What one rating costs a token at `tps` tokens per second (a share of its time).
    pub fn share_at(&self, tps: f64) -> f64 {
        self.rate_us * 1e-6 * tps
    }
}
