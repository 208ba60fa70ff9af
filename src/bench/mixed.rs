//! Time between tokens of running streams while a long prompt joins: three greedy streams
//! decode, a prompt of about 6,000 tokens joins once each has produced a token, and the
//! largest gap between two tokens of any stream is measured, with the prompt read in chunks of
//! `prefill_chunk` tokens between their steps against read whole (`prefill_chunk = 0`, how
//! the engine read prompts before), in the same run on the same model.
//!
//! Owns: the workload and the timing. Does not own: the engine or loading the model.

use super::{BenchError, Figure};
use crate::engine::{EngineHandle, EngineSettings, GenerateRequest, SamplingParams, SequenceId};
use std::path::Path;
use std::time::Instant;

/// The workload's figures for one setting.
struct Gaps {
    /// The largest gap between two tokens of a stream while the prompt was read, in seconds.
    most: f64,
    prompt_tokens: usize,
}

fn request(seq: u64, prompt: String, max_tokens: u32) -> GenerateRequest {
    let sampling = SamplingParams {
        ignore_eos: true,
        ..SamplingParams::greedy()
    };
    GenerateRequest {
        sequence: SequenceId(seq),
        ..GenerateRequest::new(prompt, max_tokens, sampling)
    }
}

/// A prompt of at least `tokens` tokens for `engine`.
fn long_prompt(engine: &EngineHandle, tokens: usize) -> Result<String, BenchError> {
    let mut text = String::from("why does this build fail?\n");
    let mut line = 0;
    while engine.tokenize(&text)?.len() < tokens {
        for _ in 0..50 {
            text.push_str(&format!("line {line}: step {} ok\n", line * 7));
            line += 1;
        }
    }
    Ok(text)
}

fn once(
    path: &Path,
    es: &EngineSettings,
    chunk: u32,
    stream_tokens: u32,
) -> Result<Gaps, BenchError> {
    let mut s = es.clone();
    s.prefill_chunk = chunk;
    s.ctx = 16_384;
    s.sequences = 4;
    s.conversation_slots = 4;
    let engine = super::engine_runs::load(path, &s)?;
    let prompt = long_prompt(&engine, 6000)?;
    let prompt_tokens = engine.tokenize(&prompt)?.len();
    let running: Vec<_> = (0..3u64)
        .map(|i| engine.generate_traced(request(i + 1, format!("count {i}"), stream_tokens)))
        .collect::<Result<_, _>>()?;
    // Each stream's token times, taken on a thread of its own.
    let first = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watchers: Vec<_> = running
        .into_iter()
        .map(|(stream, logits)| {
            let first = first.clone();
            std::thread::spawn(move || {
                let mut times = Vec::new();
                while logits.recv().is_ok() {
                    if times.is_empty() {
                        first.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    times.push(Instant::now());
                }
                let _ = stream.wait();
                times
            })
        })
        .collect();
    // The prompt joins once every stream has produced a token.
    let waited = Instant::now();
    while first.load(std::sync::atomic::Ordering::Relaxed) < 3 && waited.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let joined = Instant::now();
    let late = engine.generate(request(9, prompt, 4))?;
    let read = late.wait()?;
    let done = joined + std::time::Duration::from_secs_f64(read.1.figures.prefill_seconds);
    let mut most: f64 = 0.0;
    for w in watchers {
        let times = w.join().unwrap_or_default();
        for pair in times.windows(2) {
            // Gaps that overlap the prompt's reading.
            if pair[1] > joined && pair[0] < done {
                most = most.max((pair[1] - pair[0]).as_secs_f64());
            }
        }
    }
    Ok(Gaps {
        most,
        prompt_tokens,
    })
}

/// Measure (see the module docs) on the model at `path`.
pub fn run(path: &Path, es: &EngineSettings, quick: bool) -> Result<Figure, BenchError> {
    let stream_tokens = if quick { 96 } else { 256 };
    let chunk = match es.prefill_chunk {
        0 => EngineSettings::default().prefill_chunk,
        n => n,
    };
    eprintln!("bench sequences: a long prompt joining 3 streams, read in chunks and whole...");
    let mixed = once(path, es, chunk, stream_tokens)?;
    let whole = once(path, es, 0, stream_tokens)?;
    Ok(Figure {
        bench: "sequences".into(),
        name: format!(
            "largest gap between tokens of 3 streams while a {}-token prompt joins, read {chunk} tokens a step",
            mixed.prompt_tokens
        ),
        value: mixed.most * 1000.0,
        unit: "ms".into(),
        baseline: "the prompt read whole between two steps".into(),
        baseline_value: whole.most * 1000.0,
        ratio: whole.most / mixed.most.max(1e-9),
        better: "higher".into(),
        target: None,
    })
}
