//! `lilypad bench first-token`: a new session's time to its first token with a warm head (the
//! first prompt's system message, which holds the system prompt and the tool definitions,
//! loaded from the engine's saved heads) against a cold one (read, as with the warm head off),
//! in the same run, on two engines of the same model that differ only in
//! `[engine] prefix_cache_mb`. The prompt is the scripted session's first (the built-in
//! harness profile's system prompt and tools, then the task). Each path is timed `repeats`
//! times from an emptied memory, one after the other, and the median kept; a one-token
//! generation stands for "first token". Both engines generate once from a short prompt
//! without a head before anything is timed.
//!
//! Does not own: the model or the engines' settings (`super::engine_runs`), the head cache
//! itself (`crate::engine::llama`).

use super::agent_turns::{ratio, render_error};
use super::conversation::Session;
use super::resume::first_token;
use super::{median, Figure};
use crate::engine::{EngineError, EngineHandle, Reuse};
use std::path::Path;
use std::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub prompt_tokens: usize,
    /// Tokens of the head the warm engine loaded.
    pub head_tokens: usize,
    /// Bytes of the saved head on disk.
    pub head_bytes: u64,
    /// The first session of the warm engine, which reads the head and saves it.
    pub saving_seconds: f64,
    pub warm_seconds: f64,
    pub cold_seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum FirstTokenError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The warm engine read the head instead of loading it: the figure would be a cold one.
    #[error("the warm engine did not load a saved head ({0:?}): is the prompt's system message shorter than a head?")]
    NotWarm(Reuse),
    #[error("listing the saved heads in {dir}")]
    Heads {
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

/// Time first tokens on `warm` (saving its heads in `heads`) and `cold` (no saved heads).
pub fn run(
    warm: &EngineHandle,
    cold: &EngineHandle,
    heads: &Path,
    repeats: usize,
) -> Result<Outcome, FirstTokenError> {
    let prompt = Session::new()
        .and_then(|s| s.prompt())
        .map_err(render_error)?;
    // Each engine's first generation also pays for warming up (pages of the model, buffers):
    // a short prompt without a head first, so that the saving session is timed warm.
    for engine in [warm, cold] {
        first_token(
            engine,
            None,
            "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
        )?;
    }
    warm.reset()?;
    let t = Instant::now();
    let (_, saving) = warm
        .generate(crate::engine::GenerateRequest::new(
            prompt.as_str(),
            1,
            crate::engine::SamplingParams::greedy(),
        ))?
        .wait()?;
    let saving_seconds = t.elapsed().as_secs_f64();
    let mut outcome = Outcome {
        prompt_tokens: saving.figures.prompt_tokens,
        saving_seconds,
        head_bytes: head_bytes(heads)?,
        ..Outcome::default()
    };
    let (mut warm_times, mut cold_times) = (Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        let w = first_token(warm, None, &prompt)?;
        match w.reuse {
            Reuse::SavedHead { tokens } => outcome.head_tokens = tokens,
            other => return Err(FirstTokenError::NotWarm(other)),
        }
        warm_times.push(w.seconds);
        cold_times.push(first_token(cold, None, &prompt)?.seconds);
    }
    outcome.warm_seconds = median(&warm_times);
    outcome.cold_seconds = median(&cold_times);
    Ok(outcome)
}

/// Bytes of the head files in `dir`.
fn head_bytes(dir: &Path) -> Result<u64, FirstTokenError> {
    crate::engine::llama::saved_heads(dir)
        .map(|(_, bytes)| bytes)
        .map_err(|source| FirstTokenError::Heads {
            dir: dir.display().to_string(),
            source,
        })
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        vec![Figure {
            bench: "first-token".into(),
            name: format!(
                "time to a new session's first token, prompt of {} tokens ({} from a saved {:.1} MB head)",
                self.prompt_tokens,
                self.head_tokens,
                self.head_bytes as f64 / 1e6
            ),
            value: self.warm_seconds,
            unit: "s".into(),
            baseline: "read the whole prompt (prefix_cache_mb = 0)".into(),
            baseline_value: self.cold_seconds,
            ratio: ratio(self.cold_seconds, self.warm_seconds),
            better: "higher".into(),
            target: Some(5.0),
        }]
    }

    /// What the first session, which saved the head, cost against a cold one.
    pub fn note(&self) -> String {
        format!(
            "first-token: the first session on a model reads and saves its head: {:.3} s against {:.3} s cold",
            self.saving_seconds, self.cold_seconds
        )
    }
}

/// The bench as `lilypad bench first-token` runs it: the bench-shaped model (or `--gguf`),
/// loaded twice with the settings of the session benches, one engine saving its heads in
/// `dir` and one without.
pub(super) fn bench(
    opts: &super::suite::Options,
    settings: &crate::config::EngineSettings,
    dir: &Path,
    report: &mut super::Report,
) -> Result<(), super::suite::BenchError> {
    let (embd, repeats) = match opts.quick {
        true => (opts.embd.min(64), 1),
        false => (opts.embd, opts.repeats),
    };
    let path = super::engine_runs::model_path(opts, dir, embd)?;
    let mut cold = settings.clone();
    cold.ctx = 16_384;
    cold.batch = 512;
    cold.ubatch = 512;
    cold.threads = cold.threads.max(1);
    cold.gpu_layers = Some(cold.gpu_layers.unwrap_or(0));
    cold.prefix_cache_mb = 0;
    let heads = dir.join("heads");
    let warm = crate::config::EngineSettings {
        prefix_cache_mb: 1024,
        prefix_cache_dir: Some(heads.clone()),
        ..cold.clone()
    };
    eprintln!("bench first-token: {repeats} repeat(s), a warm and a cold engine...");
    let warm = super::engine_runs::load(&path, &warm)?;
    let cold = super::engine_runs::load(&path, &cold)?;
    let o = run(&warm, &cold, &heads, repeats)?;
    report.notes.push(o.note());
    report.figures.extend(o.figures());
    Ok(())
}
