//! The scripted session of [`super::agent_turns`] against `llama-server`: each turn's prompt,
//! tokenised by the engine, is read by Lilypad's engine (prefix reuse) and sent to each running
//! llama-server (`/completion`, `cache_prompt`), interleaved turn by turn so that machine noise
//! hits all alike. Per turn and in total: the tokens each side evaluated against the turn's new
//! prompt tokens, and each side's prompt-reading time (Lilypad's wall time of the request, the
//! server's own `timings.prompt_ms`).
//!
//! Does not own: starting the servers (`super::engine_runs`, with [`super::peers::server`]).

use super::agent_turns::{ratio, render_error};
use super::conversation::Session;
use super::peers::server::{Completion, Server};
use super::suite::BenchError;
use super::{Figure, Table};
use crate::engine::EngineHandle;
use std::time::Instant;

/// The llama-server settings compared: its context checkpoints at their defaults (at most 32
/// per slot, kept at least 8,192 tokens apart once the list is full), and tuned (more of
/// them, no minimum spacing), label and arguments.
pub const SETTINGS: &[(&str, &[&str])] = &[
    ("default checkpoints", &[]),
    (
        "tuned checkpoints",
        &["--ctx-checkpoints", "128", "--checkpoint-min-step", "0"],
    ),
];

/// One turn as both sides read it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub prompt_tokens: usize,
    pub new_tokens: usize,
    pub lilypad_tokens: usize,
    pub lilypad_seconds: f64,
    /// One per server, in the order given.
    pub servers: Vec<Completion>,
}

/// What a run measured; `labels` names the servers' settings.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub labels: Vec<String>,
    pub turns: Vec<Turn>,
}

/// `turns` scripted turns through `engine` and every server of `servers` (label, server).
pub fn run(
    engine: &EngineHandle,
    servers: &[(String, Server)],
    turns: usize,
) -> Result<Outcome, BenchError> {
    let mut session = Session::new().map_err(render_error)?;
    engine.reset()?;
    let mut previous: Vec<u32> = Vec::new();
    let mut out = Outcome {
        labels: servers.iter().map(|(l, _)| l.clone()).collect(),
        turns: Vec::new(),
    };
    for _ in 0..turns {
        let prompt = session.prompt().map_err(render_error)?;
        let tokens = engine.tokenize(&prompt)?;
        let common = previous
            .iter()
            .zip(tokens.iter())
            .take_while(|(a, b)| a == b)
            .count();
        let t = Instant::now();
        let (_, figures) = engine.logits(&prompt)?;
        let lilypad_seconds = t.elapsed().as_secs_f64();
        let servers = servers
            .iter()
            .map(|(_, s)| s.complete(&tokens))
            .collect::<Result<Vec<_>, _>>()?;
        out.turns.push(Turn {
            prompt_tokens: tokens.len(),
            new_tokens: tokens.len() - common,
            lilypad_tokens: figures.evaluated_tokens,
            lilypad_seconds,
            servers,
        });
        previous = tokens;
        session.push_turn();
    }
    Ok(out)
}

impl Outcome {
    fn new_tokens(&self) -> usize {
        self.turns.iter().map(|t| t.new_tokens).sum()
    }

    fn lilypad_tokens(&self) -> usize {
        self.turns.iter().map(|t| t.lilypad_tokens).sum()
    }

    fn server_tokens(&self, i: usize) -> usize {
        self.turns.iter().map(|t| t.servers[i].prompt_n).sum()
    }

    fn server_seconds(&self, i: usize) -> f64 {
        self.turns
            .iter()
            .map(|t| t.servers[i].prompt_ms)
            .sum::<f64>()
            / 1000.0
    }

    /// Two figures per server: tokens evaluated per new prompt token (Lilypad's against the
    /// server's), and prompt-reading time over all turns.
    pub fn figures(&self) -> Vec<Figure> {
        let new = self.new_tokens() as f64;
        let lily = ratio(self.lilypad_tokens() as f64, new);
        let lily_seconds: f64 = self.turns.iter().map(|t| t.lilypad_seconds).sum();
        let last = self.turns.last().map_or(0, |t| t.prompt_tokens);
        let mut out = Vec::new();
        for (i, label) in self.labels.iter().enumerate() {
            let server = ratio(self.server_tokens(i) as f64, new);
            out.push(Figure {
                bench: "agent-turns".into(),
                name: format!(
                    "tokens evaluated per new prompt token against llama-server ({label}), {} turns, {} new tokens, {last} at the end",
                    self.turns.len(),
                    self.new_tokens()
                ),
                value: lily,
                unit: "tokens/new token".into(),
                baseline: format!(
                    "llama-server {label}: {} tokens evaluated (timings.prompt_n)",
                    self.server_tokens(i)
                ),
                baseline_value: server,
                ratio: ratio(lily, server),
                better: "lower".into(),
                target: None,
            });
            out.push(Figure {
                bench: "agent-turns".into(),
                name: format!(
                    "prompt reading time against llama-server ({label}), all {} turns",
                    self.turns.len()
                ),
                value: lily_seconds,
                unit: "s".into(),
                baseline: format!("llama-server {label}: timings.prompt_ms, summed"),
                baseline_value: self.server_seconds(i),
                ratio: ratio(self.server_seconds(i), lily_seconds),
                better: "higher".into(),
                target: None,
            });
        }
        out
    }

    /// The turns one by one.
    pub fn table(&self) -> Table {
        let mut columns = vec![
            "turn".to_string(),
            "prompt tokens".into(),
            "new tokens".into(),
            "lilypad evaluated".into(),
            "lilypad ms".into(),
        ];
        for l in &self.labels {
            columns.push(format!("server {l} evaluated"));
            columns.push(format!("server {l} reused"));
            columns.push(format!("server {l} ms"));
        }
        let rows = self
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut r = vec![
                    (i + 1) as f64,
                    t.prompt_tokens as f64,
                    t.new_tokens as f64,
                    t.lilypad_tokens as f64,
                    t.lilypad_seconds * 1000.0,
                ];
                for s in &t.servers {
                    r.extend([s.prompt_n as f64, s.cache_n as f64, s.prompt_ms]);
                }
                r
            })
            .collect();
        Table {
            title: "agent-turns against llama-server, per turn".into(),
            columns,
            rows,
        }
    }
}
