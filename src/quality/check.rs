//! One quantisation check: load both models, tokenise the text once, cut it into chunks of
//! `ctx` tokens, and read every chunk from empty memory in both engines at once (each on its
//! own thread), comparing the two next-token distributions at every position of the chunk's
//! second half, whose predictions all have at least `ctx / 2` tokens of context. That is
//! llama.cpp's `llama-perplexity --kl-divergence` scheme, so the figures can be checked against
//! it on the same files and text. Positions whose next token lies inside a tool call (after
//! `<tool_call>`, up to and including `</tool_call>`) are also summarised on their own.

use super::metrics::{compare, Summary, Totals};
use super::QualityError;
use crate::engine::{EngineHandle, EngineSettings, ScoredRows};
use serde::Serialize;
use std::path::PathBuf;

/// What to compare, on what, and how.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub reference: PathBuf,
    pub candidate: PathBuf,
    /// The text, special tokens parsed (`<|im_start|>`, `<tool_call>`, ...).
    pub text: String,
    /// Chunk length in tokens (`llama-perplexity -c`).
    pub ctx: usize,
    /// At most this many chunks (`llama-perplexity --chunks`); all that fit when `None`.
    pub chunks: Option<usize>,
    /// Threads per engine (0: half the cores each, since both run at once).
    pub threads: u32,
    /// Positions per batch (and logits rows held per engine).
    pub batch: u32,
    pub gpu_layers: Option<u32>,
    /// Keep every position's figures in the report.
    pub keep_positions: bool,
}

/// One scored position, for `--positions`.
#[derive(Debug, Clone, Serialize)]
pub struct PositionRecord {
    /// Index of the position in the whole token stream.
    pub position: usize,
    /// The actual next token.
    pub next_token: u32,
    pub in_tool_call: bool,
    #[serde(flatten)]
    pub figures: super::metrics::Position,
}

/// The outcome of a check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub reference: PathBuf,
    pub candidate: PathBuf,
    pub reference_bytes: u64,
    pub candidate_bytes: u64,
    pub tokens: usize,
    pub ctx: usize,
    pub chunks: usize,
    pub all: Summary,
    pub tool_calls: Summary,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub positions: Vec<PositionRecord>,
}

/// Which tokens lie inside a tool call: after an opening token, up to and including the
/// closing one. With no such tokens in the vocabulary, none do.
pub fn tool_call_mask(tokens: &[u32], open: Option<u32>, close: Option<u32>) -> Vec<bool> {
    let mut inside = false;
    tokens
        .iter()
        .map(|&t| {
            if Some(t) == open {
                inside = true;
                false
            } else if Some(t) == close && inside {
                inside = false;
                true
            } else {
                inside
            }
        })
        .collect()
}

/// The one id `text` tokenises to, if it is a single token.
fn single(engine: &EngineHandle, text: &str) -> Result<Option<u32>, QualityError> {
    let ids = engine.tokenize(text)?;
    Ok(match ids.as_slice() {
        [id] => Some(*id),
        _ => None,
    })
}

fn load(
    path: &std::path::Path,
    o: &CheckOptions,
    threads: u32,
) -> Result<EngineHandle, QualityError> {
    let settings = EngineSettings {
        model: Some(path.to_path_buf()),
        gpu_layers: o.gpu_layers,
        ctx: o.ctx as u32,
        threads,
        batch: o.batch,
        ubatch: o.batch.min(128),
        max_snapshots: 0,
        conversation_slots: 1,
        ..EngineSettings::default()
    };
    Ok(EngineHandle::load(path, &settings, |_| {})?)
}

/// Run the check; `progress(done, total)` after each chunk.
pub fn run(
    o: &CheckOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<CheckReport, QualityError> {
    if o.ctx < 4 {
        return Err(QualityError::Context { ctx: o.ctx });
    }
    let threads = if o.threads > 0 {
        o.threads
    } else {
        std::thread::available_parallelism()
            .map(|n| (n.get() as u32 / 2).max(1))
            .unwrap_or(1)
    };
    let reference = load(&o.reference, o, threads)?;
    let candidate = load(&o.candidate, o, threads)?;
    let (rv, cv) = (reference.model().vocabulary, candidate.model().vocabulary);
    if rv != cv {
        return Err(QualityError::Vocabulary {
            reference: rv,
            candidate: cv,
        });
    }
    let tokens = reference.tokenize(&o.text)?;
    if candidate.tokenize(&o.text)? != tokens {
        return Err(QualityError::Tokenization);
    }
    let available = tokens.len() / o.ctx;
    let chunks = o.chunks.map_or(available, |c| c.min(available));
    if chunks == 0 {
        return Err(QualityError::TooShort {
            tokens: tokens.len(),
            ctx: o.ctx,
        });
    }
    let mask = tool_call_mask(
        &tokens,
        single(&reference, "<tool_call>")?,
        single(&reference, "</tool_call>")?,
    );
    let first = o.ctx / 2;
    let (mut all, mut calls) = (Totals::default(), Totals::default());
    let mut positions = Vec::new();
    for c in 0..chunks {
        let base = c * o.ctx;
        let chunk = &tokens[base..base + o.ctx];
        let mut r_stream = reference.score(chunk, first)?;
        let mut c_stream = candidate.score(chunk, first)?;
        loop {
            let (r, k) = match (r_stream.next(), c_stream.next()) {
                (None, None) => break,
                (Some(r), Some(k)) => (r?, k?),
                _ => return Err(QualityError::Misaligned),
            };
            if (r.start, r.rows) != (k.start, k.rows) {
                return Err(QualityError::Misaligned);
            }
            score_rows(
                &r,
                &k,
                chunk,
                base,
                &mask,
                &mut all,
                &mut calls,
                o.keep_positions.then_some(&mut positions),
            );
        }
        progress(c + 1, chunks);
    }
    let size = |p: &PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    Ok(CheckReport {
        reference: o.reference.clone(),
        candidate: o.candidate.clone(),
        reference_bytes: size(&o.reference),
        candidate_bytes: size(&o.candidate),
        tokens: tokens.len(),
        ctx: o.ctx,
        chunks,
        all: all.summary(),
        tool_calls: calls.summary(),
        positions,
    })
}

/// Compare one batch of rows of both models; the chunk's last position has no next token
/// inside the chunk and is skipped.
#[expect(
    clippy::too_many_arguments,
    reason = "both models' rows, the chunk and mask they are read against, and three separate tallies"
)]
fn score_rows(
    r: &ScoredRows,
    k: &ScoredRows,
    chunk: &[u32],
    base: usize,
    mask: &[bool],
    all: &mut Totals,
    calls: &mut Totals,
    mut keep: Option<&mut Vec<PositionRecord>>,
) {
    for i in 0..r.rows {
        let pos = r.start + i;
        let Some(&next) = chunk.get(pos + 1) else {
            continue;
        };
        let p = compare(r.row(i), k.row(i), next as usize);
        let in_call = mask[base + pos + 1];
        all.add(&p);
        if in_call {
            calls.add(&p);
        }
        if let Some(keep) = keep.as_deref_mut() {
            keep.push(PositionRecord {
                position: base + pos,
                next_token: next,
                in_tool_call: in_call,
                figures: p,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_spans_include_the_closer_not_the_opener() {
        let t = [1, 7, 2, 3, 8, 4, 8, 7, 5];
        let m = tool_call_mask(&t, Some(7), Some(8));
        assert_eq!(
            m,
            [false, false, true, true, true, false, false, false, true]
        );
        assert!(tool_call_mask(&t, None, None).iter().all(|&x| !x));
    }
}
