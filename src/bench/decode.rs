//! Generation speed against the memory-bandwidth limit. Decoding one token reads every weight
//! once (the embeddings are tied, so the output layer reads the whole embedding matrix), so at
//! best tokens/s = bandwidth / weight bytes; the figure is the share of that limit reached:
//! weight bytes x tokens/s / bandwidth.
//!
//! The limit is either given (a GPU's memory bandwidth from its data sheet, `--peak-gbs`), or,
//! for a CPU run, measured in the same run: the best of three passes reading a buffer much
//! larger than the caches with the engine's thread count. The model is a random-weight `qwen35`
//! of Qwen3.5-4B's shape (docs/model.md, "Shape") unless a GGUF is given; random weights decode at
//! the same speed as trained ones.
//!
//! Does not own: loading the engine or choosing the device (the caller's settings, with
//! `--gpu-layers` for offload), or writing the model file (`crate::testmodel`).

use super::agent_turns::ratio;
use super::Figure;
use crate::engine::{EngineError, EngineHandle, GenerateRequest, SamplingParams};
use crate::testmodel::TinySpec;
use std::time::Instant;

/// Qwen3.5-4B's text shape (32 layers, 3 Gated DeltaNet per gated attention layer) with `vocab`.
pub fn four_b_spec(vocab: crate::testmodel::Vocab) -> TinySpec {
    let mut spec = TinySpec::with_vocab(vocab);
    spec.n_embd = 2560;
    spec.n_layer = 32;
    spec.n_ff = 9216;
    spec.n_head = 16;
    spec.n_head_kv = 4;
    spec.head_dim = 256;
    spec.ssm_k_heads = 16;
    spec.ssm_v_heads = 32;
    spec.ssm_head_dim = 128;
    spec.context_length = 131_072;
    spec
}

/// What one decode run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Bytes of all weight tensors in the file.
    pub weight_bytes: u64,
    pub tokens_per_second: f64,
    /// The bandwidth limit in bytes/s, and where it comes from.
    pub limit: f64,
    pub limit_source: String,
}

impl Outcome {
    /// Bytes/s the decode read weights at.
    pub fn achieved(&self) -> f64 {
        self.weight_bytes as f64 * self.tokens_per_second
    }

    pub fn figures(&self) -> Vec<Figure> {
        let gb = |b: f64| b / 1e9;
        vec![
            Figure {
                bench: "decode".into(),
                name: format!(
                    "weights read while decoding ({:.2} GB of weights x {:.2} tok/s)",
                    gb(self.weight_bytes as f64),
                    self.tokens_per_second
                ),
                value: gb(self.achieved()),
                unit: "GB/s".into(),
                baseline: self.limit_source.clone(),
                baseline_value: gb(self.limit),
                ratio: ratio(self.achieved(), self.limit),
                better: "higher".into(),
                target: None,
            },
            Figure {
                bench: "decode".into(),
                name: "generation speed vs the bandwidth limit's tokens/s".into(),
                value: self.tokens_per_second,
                unit: "tok/s".into(),
                baseline: "bandwidth / weight bytes".into(),
                baseline_value: self.limit / self.weight_bytes.max(1) as f64,
                ratio: ratio(self.achieved(), self.limit),
                better: "higher".into(),
                target: None,
            },
        ]
    }
}

/// Bytes of the weight tensors of the GGUF at `path`.
pub fn weight_bytes(path: &std::path::Path) -> Result<(u64, u64), crate::gguf::GgufError> {
    let file = crate::gguf::GgufFile::open(path)?;
    let bytes = file.tensors.iter().filter_map(|t| t.data_size()).sum();
    Ok((bytes, file.parameter_count()))
}

/// Greedy generation of `tokens` tokens after a one-token prompt (one warm-up run first),
/// rated by the engine's own decode time; the median of `reps` runs.
pub fn tokens_per_second(
    engine: &EngineHandle,
    tokens: usize,
    reps: usize,
) -> Result<(f64, usize), EngineError> {
    let mut speeds = Vec::new();
    let mut fewest = tokens;
    for run in 0..=reps {
        engine.reset()?;
        let (_, g) = engine
            .generate(GenerateRequest::new(
                "a",
                tokens as u32,
                SamplingParams::greedy(),
            ))?
            .wait()?;
        if run > 0 {
            speeds.push(g.figures.decode_tokens_per_second());
            fewest = fewest.min(g.figures.generated_tokens);
        }
    }
    Ok((super::median(&speeds), fewest))
}

/// Host memory read bandwidth in bytes/s: the best of three passes summing a `bytes` buffer
/// split over `threads` threads.
pub fn memory_read_bandwidth(bytes: usize, threads: usize) -> f64 {
    let words = (bytes / 8).max(threads.max(1));
    // Distinct values so the pages are really allocated and read.
    let buf: Vec<u64> = (0..words as u64).collect();
    let chunk = words.div_ceil(threads.max(1));
    let mut best = 0.0f64;
    for _ in 0..3 {
        let t = Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = buf
                .chunks(chunk)
                .map(|c| s.spawn(move || c.iter().fold(0u64, |a, &x| a.wrapping_add(x))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0u64, u64::wrapping_add)
        });
        let secs = t.elapsed().as_secs_f64();
        std::hint::black_box(total);
        if secs > 0.0 {
            best = best.max((words * 8) as f64 / secs);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_bandwidth_is_measured() {
        let b = memory_read_bandwidth(8 << 20, 2);
        assert!(b > 0.0 && b.is_finite());
    }
}
