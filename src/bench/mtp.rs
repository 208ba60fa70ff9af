//! `lilypad bench mtp`: what drafting with the model's MTP layer costs and gains. The same
//! greedy generations three ways, taking turns in one run: plain decoding (the baseline); with the file's
//! MTP layer drafting; and with a mock drafter that replays the plain output, so that every
//! draft is accepted (the ceiling).
//!
//! With random weights the MTP layer's drafts are almost never accepted, so its figure says
//! nothing about the real model's speed; what carries over is the cost of one draft-and-verify
//! step against one plain step, from which the speed at any acceptance rate follows (see
//! [`Outcome::speedup_at`]).
//!
//! Owns: the measurement. Does not own: the model file and engine settings (`engine_runs`).

use super::agent_turns::ratio;
use super::{median, Figure};
use crate::config::EngineSettings;
use crate::engine::{EngineError, EngineHandle, GenerateRequest, Mtp, SamplingParams};
use std::path::Path;

/// Speeds and step costs of the three ways (medians over the prompts and runs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    pub draft_tokens: usize,
    /// Tokens per second, plain.
    pub plain: f64,
    /// Tokens per second with the MTP layer drafting, and the share of its drafts accepted.
    pub mtp: f64,
    pub acceptance: f64,
    /// Tokens per second with every draft accepted (the replaying mock drafter).
    pub replay: f64,
    pub replay_acceptance: f64,
    /// Seconds per decode step: plain, MTP (draft plus verify), replay (verify alone).
    pub plain_step: f64,
    pub mtp_step: f64,
    pub replay_step: f64,
    /// Prompt tokens read per second, without and with the drafter reading along.
    pub prompt_plain: f64,
    pub prompt_mtp: f64,
    pub prompt_tokens: usize,
    pub runs: usize,
}

/// One way's generations: tokens per second, seconds per decode step, drafted, accepted.
#[derive(Default)]
struct Way {
    speed: Vec<f64>,
    step: Vec<f64>,
    drafted: usize,
    accepted: usize,
}

impl Way {
    fn add(&mut self, g: &crate::engine::Generation) {
        let f = &g.figures;
        if f.generated_tokens < 2 || f.decode_seconds <= 0.0 {
            return;
        }
        let d = f.draft.unwrap_or_default();
        // Each step decodes one token plus the drafts that are then accepted.
        let steps = f.generated_tokens.saturating_sub(d.accepted).max(1);
        self.speed
            .push(f.generated_tokens as f64 / f.decode_seconds);
        self.step.push(f.decode_seconds / steps as f64);
        self.drafted += d.drafted;
        self.accepted += d.accepted;
    }

    fn acceptance(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }
}

fn prompts() -> Vec<String> {
    [
        "fix the failing test",
        "list the files",
        "why does the build fail?",
    ]
    .iter()
    .map(|u| format!("<|im_start|>user\n{u}<|im_end|>\n<|im_start|>assistant\n<think>\n"))
    .collect()
}

fn generate(
    e: &EngineHandle,
    prompt: &str,
    tokens: u32,
) -> Result<crate::engine::Generation, EngineError> {
    e.reset()?;
    let r = GenerateRequest::new(prompt.to_string(), tokens, SamplingParams::greedy());
    Ok(e.generate(r)?.wait()?.1)
}

/// `runs` greedy generations of `tokens` tokens per prompt each way, on `path` (a file with an
/// MTP layer) loaded with `settings`, and `runs` readings of a prompt of `prompt_repeats`
/// sentences (about 41 tokens each in the synthetic vocabulary) with and without the drafter.
pub fn run(
    path: &Path,
    settings: &EngineSettings,
    tokens: u32,
    runs: usize,
    prompt_repeats: usize,
) -> Result<Outcome, EngineError> {
    let load = |mtp: Mtp, replay: Vec<u32>| {
        let s = EngineSettings {
            mtp,
            draft_replay: replay,
            ..settings.clone()
        };
        EngineHandle::load(path, &s, |_| {})
    };
    let prompts = prompts();
    let (mut plain, mut mtp, mut replay) = (Way::default(), Way::default(), Way::default());
    // The plain outputs, which the mock drafters replay (one engine per prompt).
    let base = load(Mtp::Off, Vec::new())?;
    let mut replaying = Vec::new();
    for p in &prompts {
        let g = generate(&base, p, tokens)?;
        let mut all = base.tokenize(p)?;
        all.extend(&g.tokens);
        replaying.push(load(Mtp::Off, all)?);
    }
    let drafting = load(Mtp::On, Vec::new())?;
    let draft_tokens = drafting.model().draft_tokens as usize;
    // The three ways take turns, so that a machine whose load changes during the run weighs
    // on all of them alike.
    let long = format!(
        "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        "fix the failing test in src/lib.rs and run it again; ".repeat(prompt_repeats)
    );
    let (mut read_plain, mut read_mtp, mut prompt_tokens) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs.max(1) {
        for (p, r) in prompts.iter().zip(&replaying) {
            plain.add(&generate(&base, p, tokens)?);
            mtp.add(&generate(&drafting, p, tokens)?);
            replay.add(&generate(r, p, tokens)?);
        }
        for (e, speeds) in [(&base, &mut read_plain), (&drafting, &mut read_mtp)] {
            let f = generate(e, &long, 1)?.figures;
            prompt_tokens = f.evaluated_tokens;
            speeds.push(f.prefill_tokens_per_second());
        }
    }
    Ok(Outcome {
        draft_tokens,
        plain: median(&plain.speed),
        mtp: median(&mtp.speed),
        acceptance: mtp.acceptance(),
        replay: median(&replay.speed),
        replay_acceptance: replay.acceptance(),
        plain_step: median(&plain.step),
        mtp_step: median(&mtp.step),
        replay_step: median(&replay.step),
        prompt_plain: median(&read_plain),
        prompt_mtp: median(&read_mtp),
        prompt_tokens,
        runs: plain.speed.len().min(mtp.speed.len()),
    })
}

impl Outcome {
    /// One draft-and-verify step's time against one plain step's.
    pub fn step_cost(&self) -> f64 {
        ratio(self.mtp_step, self.plain_step)
    }

    /// The speed against plain decoding that a drafter accepting each drafted token with
    /// probability `acceptance` (independently) would give at this step cost: the tokens a
    /// step yields, 1 + a + a^2 + ... + a^k, over the step's cost.
    pub fn speedup_at(&self, acceptance: f64) -> f64 {
        let per_step: f64 = (0..=self.draft_tokens)
            .map(|i| acceptance.powi(i as i32))
            .sum();
        ratio(per_step, self.step_cost())
    }

    pub fn figures(&self) -> Vec<Figure> {
        let k = self.draft_tokens;
        vec![
            Figure {
                bench: "mtp".into(),
                name: format!(
                    "decode with the MTP layer drafting {k} (random weights: {:.1}% of drafts accepted; {} runs)",
                    self.acceptance * 100.0,
                    self.runs
                ),
                value: self.mtp,
                unit: "tok/s".into(),
                baseline: "the same greedy generations without drafts".into(),
                baseline_value: self.plain,
                ratio: ratio(self.mtp, self.plain),
                better: "higher".into(),
                target: None,
            },
            Figure {
                bench: "mtp".into(),
                name: format!("one draft-and-verify step ({k} drafted, {} verified)", k + 1),
                value: self.mtp_step * 1000.0,
                unit: "ms".into(),
                baseline: "one plain decode step".into(),
                baseline_value: self.plain_step * 1000.0,
                ratio: self.step_cost(),
                better: "lower".into(),
                target: None,
            },
            Figure {
                bench: "mtp".into(),
                name: format!(
                    "reading a {}-token prompt with the MTP drafter reading along",
                    self.prompt_tokens
                ),
                value: self.prompt_mtp,
                unit: "tok/s".into(),
                baseline: "the same without drafting".into(),
                baseline_value: self.prompt_plain,
                ratio: ratio(self.prompt_mtp, self.prompt_plain),
                better: "higher".into(),
                target: None,
            },
            Figure {
                bench: "mtp".into(),
                name: format!(
                    "decode with every draft accepted (mock drafter replaying the output; {:.0}% accepted)",
                    self.replay_acceptance * 100.0
                ),
                value: self.replay,
                unit: "tok/s".into(),
                baseline: "the same greedy generations without drafts".into(),
                baseline_value: self.plain,
                ratio: ratio(self.replay, self.plain),
                better: "higher".into(),
                target: None,
            },
        ]
    }

    /// The speed at a few acceptance rates, for the report's notes.
    pub fn note(&self) -> String {
        let at = [0.5, 0.7, 0.8, 0.9]
            .iter()
            .map(|&a| format!("{:.0}%: {:.2}x", a * 100.0, self.speedup_at(a)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "mtp: at this step cost ({:.2} of a plain step, {} drafts), a drafter accepting each draft with probability p gives: {at}; a verify step alone (mock drafter) costs {:.2} of a plain step",
            self.step_cost(),
            self.draft_tokens,
            ratio(self.replay_step, self.plain_step)
        )
    }
}
