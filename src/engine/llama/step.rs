//! Generations in progress and the decode step they share (continuous batching). Each step
//! first samples the next token of every active generation from the logits of the previous
//! step, then (the worker admits new requests in between) decodes one llama.cpp batch that
//! holds one token per active sequence: a generated token, or the last prompt token of a
//! request that has just joined. Sequences join and leave between steps; a cancelled or
//! finished one leaves without disturbing the others, whose tokens and logits are those they
//! would get alone.
//!
//! Invariants: after a step every active generation has its next-token logits at `idx` of
//! that step's batch, and its [`super::memory::Memory`] holds exactly the tokens decoded into
//! its sequence; a generation's stream ends with one `Done` or `Failed`, and its sequence is
//! marked idle in the pool when it leaves.
//!
//! Does not own: reading prompts (`super::memory`), which sequence a conversation lives in
//! (`super::pool`), the job queue (`super::worker`).

use super::pool::Pool;
use super::sampler::Sampler;
use crate::engine::types::{EngineError, EngineEvent, Figures, Generation, StopReason};
use crate::engine::Utf8Stream;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// Where a generation's output goes.
pub(super) struct Outlet {
    pub events: UnboundedSender<EngineEvent>,
    pub cancel: Arc<AtomicBool>,
    /// Receives the logits every token is sampled from (tests and diagnostics).
    pub trace: Option<mpsc::Sender<Vec<f32>>>,
}

impl Outlet {
    /// Whether nobody wants the output any more.
    pub(super) fn abandoned(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.events.is_closed()
    }
}

/// One generation in progress.
pub(super) struct Active {
    pub seq: usize,
    pub max_tokens: usize,
    pub out: Outlet,
    pub sampler: Sampler,
    pub figures: Figures,
    /// When its prompt started to be read.
    pub started: Instant,
    text: Utf8Stream,
    generated: Vec<u32>,
    decode_start: Option<Instant>,
    /// The batch index of its logits in the last step.
    idx: i32,
    /// The token to decode in the next step, and whether it was generated (else it is the
    /// prompt's last token).
    pending: Option<(LlamaToken, bool)>,
    stop: Option<StopReason>,
    joined: u64,
}

impl Active {
    pub(super) fn new(
        seq: usize,
        max_tokens: usize,
        out: Outlet,
        sampler: Sampler,
        figures: Figures,
        started: Instant,
        last_prompt_token: LlamaToken,
    ) -> Self {
        Self {
            seq,
            max_tokens,
            out,
            sampler,
            figures,
            started,
            text: Utf8Stream::new(),
            generated: Vec::new(),
            decode_start: None,
            idx: 0,
            pending: Some((last_prompt_token, false)),
            stop: None,
            joined: 0,
        }
    }
}

/// The active generations and the batch their tokens are decoded in.
pub(super) struct Step {
    actives: Vec<Active>,
    batch: LlamaBatch<'static>,
    joins: u64,
    snapshot_interval: usize,
}

impl Step {
    pub(super) fn new(n_seq: usize, snapshot_interval: usize) -> Self {
        Self {
            actives: Vec::new(),
            batch: LlamaBatch::new(n_seq.max(1), 1),
            joins: 0,
            snapshot_interval,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.actives.is_empty()
    }

    /// A request joins; its last prompt token is decoded in the next step.
    pub(super) fn join(&mut self, mut a: Active) {
        self.joins += 1;
        a.joined = self.joins;
        self.actives.push(a);
    }

    /// Sample the next token of every generation from the last step's logits; the finished
    /// and cancelled ones leave.
    pub(super) fn sample(&mut self, model: &LlamaModel, ctx: &LlamaContext<'_>, pool: &mut Pool) {
        let n_ctx = ctx.n_ctx() as usize;
        let vocab = model.vocab();
        for a in &mut self.actives {
            if a.out.cancel.load(Ordering::Relaxed) {
                a.stop = Some(StopReason::Cancelled);
                continue;
            }
            if let Some(t) = &a.out.trace {
                let _ = t.send(ctx.get_logits_ith(a.idx).to_vec());
            }
            let tok = a.sampler.sample(ctx, a.idx);
            if vocab.is_eog(tok) {
                a.stop = Some(StopReason::EndOfGeneration);
                continue;
            }
            a.generated.push(tok.0 as u32);
            let s = a.text.push(&vocab.token_to_piece(tok, false, None));
            if !s.is_empty() && a.out.events.send(EngineEvent::Piece(s)).is_err() {
                // Nobody is listening any more: treat as a cancellation.
                a.stop = Some(StopReason::Cancelled);
            } else if a.generated.len() >= a.max_tokens {
                a.stop = Some(StopReason::TokenCap);
            } else if pool.memory(a.seq).len() + 1 >= n_ctx {
                a.stop = Some(StopReason::ContextFull);
            } else {
                a.pending = Some((tok, true));
            }
        }
        self.sweep(pool);
    }

    /// Decode the pending token of every generation in one batch. When the attention cache
    /// has no room for them all, the generation that joined last stops (`ContextFull`) and
    /// the others are decoded without it.
    pub(super) fn decode(&mut self, ctx: &mut LlamaContext<'_>, pool: &mut Pool) {
        loop {
            self.batch.clear();
            let mut filled = Ok(());
            let mut n = 0;
            for a in self.actives.iter_mut() {
                let Some((tok, _)) = a.pending else { continue };
                let mem = pool.memory(a.seq);
                a.idx = n;
                n += 1;
                filled = filled.and(self.batch.add(tok, mem.len() as i32, &[mem.seq()], true));
            }
            if n == 0 {
                return;
            }
            let result = match filled {
                Ok(()) => ctx.decode(&mut self.batch).map_err(StepError::Decode),
                Err(e) => Err(StepError::Batch(e.to_string())),
            };
            match result {
                Ok(()) => break,
                Err(StepError::Decode(DecodeError::NoKvCacheSlot)) => {
                    let newest = self
                        .actives
                        .iter_mut()
                        .filter(|a| a.pending.is_some())
                        .max_by_key(|a| a.joined);
                    if let Some(a) = newest {
                        tracing::warn!("the attention cache is full: a generation stops");
                        a.pending = None;
                        a.stop = Some(StopReason::ContextFull);
                    }
                    self.sweep(pool);
                }
                Err(e) => {
                    let message = e.to_string();
                    for a in self.actives.drain(..) {
                        let _ = pool.memory(a.seq).clear(ctx);
                        pool.set_busy(a.seq, false);
                        let _ = a.out.events.send(EngineEvent::Failed(EngineError::Llama {
                            doing: "decoding a batch of sequences",
                            source: Box::new(std::io::Error::other(message.clone())),
                        }));
                    }
                    return;
                }
            }
        }
        let interval = self.snapshot_interval;
        for a in self.actives.iter_mut() {
            let Some((tok, generated)) = a.pending.take() else {
                continue;
            };
            let mem = pool.memory(a.seq);
            mem.accept(tok);
            if !generated {
                a.figures.prefill_seconds = a.started.elapsed().as_secs_f64();
                a.decode_start = Some(Instant::now());
            } else if interval > 0 && a.generated.len().is_multiple_of(interval) {
                if let Err(e) = mem.snapshot(ctx) {
                    tracing::warn!("cannot take a snapshot: {e}");
                }
            }
        }
    }

    /// Every generation leaves, cancelled (the engine is shutting down).
    pub(super) fn cancel_all(&mut self, pool: &mut Pool) {
        for a in &mut self.actives {
            a.stop = Some(StopReason::Cancelled);
        }
        self.sweep(pool);
    }

    /// The finished generations leave: their streams end and their sequences become idle.
    fn sweep(&mut self, pool: &mut Pool) {
        let mut i = 0;
        while i < self.actives.len() {
            if let Some(stop) = self.actives[i].stop {
                // `remove`, not `swap_remove`: the others keep their order in the batch.
                let a = self.actives.remove(i);
                finish(a, stop, pool);
            } else {
                i += 1;
            }
        }
    }
}

fn finish(mut a: Active, stop: StopReason, pool: &mut Pool) {
    pool.set_busy(a.seq, false);
    let rest = a.text.finish();
    if !rest.is_empty() {
        let _ = a.out.events.send(EngineEvent::Piece(rest));
    }
    a.figures.generated_tokens = a.generated.len();
    a.figures.decode_seconds = a.decode_start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    if a.decode_start.is_none() {
        a.figures.prefill_seconds = a.started.elapsed().as_secs_f64();
    }
    let _ = a.out.events.send(EngineEvent::Done(Generation {
        stop,
        figures: a.figures,
        tokens: a.generated,
    }));
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error(transparent)]
    Decode(DecodeError),
    #[error("filling a batch: {0}")]
    Batch(String),
}
