//! Prompt processing and generation speed of Lilypad's engine against llama.cpp's reference
//! method, llama-bench's procedure: pp512 (512 tokens read in one batch into a fresh context)
//! and tg128 (128 tokens decoded one at a time into a fresh context), one warm-up run, then the
//! mean of `reps` runs. The reference is `llama-bench` itself when it is built
//! ([`super::peers::llama_bench`]); without it, a bare llama-cpp-2 loop (batch, decode,
//! nothing else, [`reference`]) on the same GGUF, threads, context and batch sizes, in its own
//! process (`lilypad bench engine-reference`), since llama.cpp's backend is initialised once
//! per process. Lilypad's side goes through `EngineHandle`: `reset` then `logits_of_tokens` for pp512
//! (wall time of the request), `reset` then a 128-token greedy generation for tg128 (the
//! engine's own decode time, which includes sampling and detokenising each token).

use super::agent_turns::ratio;
use super::Figure;
use crate::engine::{EngineError, EngineHandle, GenerateRequest, SamplingParams};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

pub const PP: usize = 512;
pub const TG: usize = 128;
/// Context for both sides: the prompt and the generation fit.
pub const CTX: u32 = 1024;

/// Tokens per second, mean over the runs.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Speeds {
    pub pp: f64,
    pub tg: f64,
    /// Fewest tokens one tg run generated (Lilypad's side stops at an end-of-generation token).
    #[serde(default)]
    pub tg_min_tokens: usize,
}

impl Speeds {
    /// The mean of several runs' means; the fewest tokens of any.
    pub fn mean_of(all: &[Speeds]) -> Speeds {
        let pp: Vec<f64> = all.iter().map(|s| s.pp).collect();
        let tg: Vec<f64> = all.iter().map(|s| s.tg).collect();
        Speeds {
            pp: mean(&pp),
            tg: mean(&tg),
            tg_min_tokens: all.iter().map(|s| s.tg_min_tokens).min().unwrap_or(0),
        }
    }
}

fn prompt_tokens(n_vocab: u32) -> Vec<u32> {
    // Deterministic spread over the vocabulary, away from the special tokens at its end.
    let v = n_vocab.saturating_sub(64).max(1);
    (0..PP as u32).map(|i| (i * 7919 + 13) % v).collect()
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// A llama-cpp-2 error as the engine's error kind, saying what was being done.
fn failed<E: std::error::Error + Send + Sync + 'static>(
    doing: &'static str,
) -> impl Fn(E) -> EngineError {
    move |e| EngineError::Llama {
        doing,
        source: Box::new(e),
    }
}

/// The bare llama-cpp-2 loop. Call only in a process that has not started an engine.
pub fn reference(path: &Path, threads: u32, reps: usize) -> Result<Speeds, EngineError> {
    use llama_cpp_2::context::params::LlamaContextParams;
    use llama_cpp_2::llama_backend::LlamaBackend;
    use llama_cpp_2::llama_batch::LlamaBatch;
    use llama_cpp_2::model::params::LlamaModelParams;
    use llama_cpp_2::model::LlamaModel;
    use llama_cpp_2::token::LlamaToken;
    use std::num::NonZeroU32;

    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
    let backend = LlamaBackend::init().map_err(failed("starting the backend"))?;
    let params = LlamaModelParams::default().with_n_gpu_layers(0);
    let model =
        LlamaModel::load_from_file(&backend, path, &params).map_err(failed("loading the model"))?;
    let ctx_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(CTX))
        .with_n_batch(PP as u32)
        .with_n_ubatch(PP as u32)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads as i32);
    let mut ctx = model
        .new_context(&backend, ctx_params)
        .map_err(failed("creating the context"))?;
    let tokens = prompt_tokens(model.n_vocab().max(1) as u32);
    let mut batch = LlamaBatch::new(PP, 1);
    let mut pp = Vec::new();
    let mut tg = Vec::new();
    for run in 0..=reps {
        // pp512
        ctx.clear_kv_cache();
        batch.clear();
        for (i, &t) in tokens.iter().enumerate() {
            batch
                .add(LlamaToken(t as i32), i as i32, &[0], i + 1 == PP)
                .map_err(failed("filling a batch"))?;
        }
        let t0 = Instant::now();
        ctx.decode(&mut batch).map_err(failed("reading tokens"))?;
        let s = t0.elapsed().as_secs_f64();
        // tg128
        ctx.clear_kv_cache();
        let t0 = Instant::now();
        for i in 0..TG {
            batch.clear();
            batch
                .add(LlamaToken(tokens[i % PP] as i32), i as i32, &[0], true)
                .map_err(failed("filling a batch"))?;
            ctx.decode(&mut batch).map_err(failed("reading tokens"))?;
        }
        let g = t0.elapsed().as_secs_f64();
        if run > 0 {
            pp.push(PP as f64 / s);
            tg.push(TG as f64 / g);
        }
    }
    Ok(Speeds {
        pp: mean(&pp),
        tg: mean(&tg),
        tg_min_tokens: TG,
    })
}

/// The same procedure through Lilypad's engine (loaded with context [`CTX`], batch 512).
pub fn lilypad(engine: &EngineHandle, reps: usize) -> Result<Speeds, EngineError> {
    let tokens = prompt_tokens(engine.model().vocabulary.max(1));
    let mut pp = Vec::new();
    let mut tg = Vec::new();
    let mut min_tokens = TG;
    for run in 0..=reps {
        engine.reset()?;
        let t0 = Instant::now();
        engine.logits_of_tokens(&tokens)?;
        let s = t0.elapsed().as_secs_f64();
        engine.reset()?;
        let (_, g) = engine
            .generate(GenerateRequest::new(
                "a",
                TG as u32,
                SamplingParams::greedy(),
            ))?
            .wait()?;
        if run > 0 {
            pp.push(PP as f64 / s);
            tg.push(g.figures.decode_tokens_per_second());
            min_tokens = min_tokens.min(g.figures.generated_tokens);
        }
    }
    Ok(Speeds {
        pp: mean(&pp),
        tg: mean(&tg),
        tg_min_tokens: min_tokens,
    })
}

/// The pp and tg figures against `baseline` (its name) with `target`.
pub fn figures(lily: Speeds, reference: Speeds, baseline: &str, target: f64) -> Vec<Figure> {
    let f = |name: &str, a: f64, b: f64| Figure {
        bench: "engine".into(),
        name: name.into(),
        value: a,
        unit: "tok/s".into(),
        baseline: baseline.into(),
        baseline_value: b,
        ratio: ratio(a, b),
        better: "higher".into(),
        target: Some(target),
    };
    vec![
        f("pp512 prompt processing", lily.pp, reference.pp),
        f("tg128 generation", lily.tg, reference.tg),
    ]
}
