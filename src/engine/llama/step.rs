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
use super::target::Target;
use crate::engine::types::{
    DraftFigures, EngineError, EngineEvent, Figures, Generation, SampledToken, StopReason,
};
use crate::engine::Utf8Stream;
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
    /// Tokens drafted after `pending` and decoded with it, to verify in the next sample.
    drafts: Vec<LlamaToken>,
    /// Draft tokens decoded, and those the samples matched (kept).
    drafted: usize,
    accepted: usize,
    /// Whether a drafter was there to draft (the figures then report the counts).
    drafting: bool,
    /// What failed, when the generation ends in an error rather than a stop.
    failed: Option<&'static str>,
    /// Rate every sampled token, with this many alternatives (`None`: do not rate).
    logprobs: Option<u8>,
    sampled: Vec<SampledToken>,
    /// The prompt's tokens, returned with `Done` when the request asked for them.
    prompt_tokens: Option<Vec<u32>>,
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
            drafts: Vec::new(),
            drafted: 0,
            accepted: 0,
            drafting: false,
            failed: None,
            logprobs: None,
            sampled: Vec::new(),
            prompt_tokens: None,
        }
    }

    /// What to report besides the text: ratings of the sampled tokens, the prompt's tokens.
    pub(super) fn report(&mut self, logprobs: Option<u8>, prompt_tokens: Option<Vec<u32>>) {
        self.logprobs = logprobs;
        self.prompt_tokens = prompt_tokens;
    }

    /// Rate `tok`, sampled at row `idx`, from the raw logits there, and send the rating.
    fn rate(&mut self, ctx: &Target<'_>, idx: i32, tok: LlamaToken) {
        let Some(top) = self.logprobs else { return };
        if let Some(r) = crate::engine::logprob::rate(ctx.get_logits_ith(idx), tok.0 as u32, top) {
            let _ = self.out.events.send(EngineEvent::Sampled(r.clone()));
            self.sampled.push(r);
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
    /// and cancelled ones leave. A generation that decoded a draft after its token verifies
    /// it here: it samples at the token's row, and at each next row while the sample equals
    /// the draft there (those tokens are decoded already); its memory, and the target's, is
    /// then cut back to the tokens kept.
    pub(super) fn sample(&mut self, model: &LlamaModel, ctx: &mut Target<'_>, pool: &mut Pool) {
        let n_ctx = ctx.seq_ctx() as usize;
        let vocab = model.vocab();
        let interval = self.snapshot_interval;
        for a in &mut self.actives {
            let drafts = std::mem::take(&mut a.drafts);
            let before = a.generated.len();
            let mut accepted = 0;
            loop {
                if a.out.cancel.load(Ordering::Relaxed) {
                    a.stop = Some(StopReason::Cancelled);
                    break;
                }
                let idx = a.idx + accepted as i32;
                if let Some(t) = &a.out.trace {
                    let _ = t.send(ctx.get_logits_ith(idx).to_vec());
                }
                let tok = a.sampler.sample(ctx, idx);
                // Rated at the row it was sampled from: a token kept from a draft gets the
                // target model's rating, as if it had been sampled without one.
                a.rate(ctx, idx, tok);
                if vocab.is_eog(tok) {
                    a.stop = Some(StopReason::EndOfGeneration);
                    break;
                }
                a.generated.push(tok.0 as u32);
                let held = pool.memory(a.seq).len() + accepted;
                let s = a.text.push(&vocab.token_to_piece(tok, false, None));
                let stop = if !s.is_empty() && a.out.events.send(EngineEvent::Piece(s)).is_err() {
                    // Nobody is listening any more: treat as a cancellation.
                    Some(StopReason::Cancelled)
                } else if a.generated.len() >= a.max_tokens {
                    Some(StopReason::TokenCap)
                } else if held + 1 >= n_ctx {
                    Some(StopReason::ContextFull)
                } else {
                    None
                };
                let drafted_here = drafts.get(accepted) == Some(&tok);
                if drafted_here {
                    // Decoded already, in the draft: keep it.
                    accepted += 1;
                }
                if stop.is_some() {
                    a.stop = stop;
                    break;
                }
                if !drafted_here {
                    a.pending = Some((tok, true));
                    break;
                }
            }
            if !drafts.is_empty() {
                keep_verified(a, &drafts, accepted, before, interval, ctx, pool);
            }
        }
        self.sweep(pool);
    }

    /// Decode the pending token of every generation in one batch. When the attention cache
    /// has no room for them all, the generation that joined last stops (`ContextFull`) and
    /// the others are decoded without it.
    pub(super) fn decode(&mut self, ctx: &mut Target<'_>, pool: &mut Pool) {
        self.draft(ctx, pool);
        loop {
            self.batch.clear();
            let mut filled = Ok(());
            let mut n = 0;
            // Sequences in the batch, and where the first one's tokens start.
            let (mut seqs, mut first) = (0, None);
            for a in self.actives.iter_mut() {
                let Some((tok, _)) = a.pending else { continue };
                let mem = pool.memory(a.seq);
                let pos = mem.len();
                a.idx = n;
                n += 1;
                filled = filled.and(self.batch.add(tok, pos as i32, &[mem.seq()], true));
                for (i, &d) in a.drafts.iter().enumerate() {
                    n += 1;
                    filled =
                        filled.and(self.batch.add(d, (pos + 1 + i) as i32, &[mem.seq()], true));
                }
                seqs += 1;
                first = first.or(Some((mem.seq(), pos)));
            }
            if n == 0 {
                return;
            }
            // The drafter reads a batch that holds sequence 0 alone.
            let seq0_from = first
                .filter(|&(seq, _)| seqs == 1 && seq == 0)
                .map(|(_, p)| p);
            let result = match filled {
                Ok(()) => ctx
                    .decode(&mut self.batch, seq0_from)
                    .map_err(StepError::Decode),
                Err(e) => Err(StepError::Batch(e)),
            };
            match result {
                Ok(()) => break,
                Err(StepError::Decode(DecodeError::NoKvCacheSlot))
                    if self.actives.iter().any(|a| !a.drafts.is_empty()) =>
                {
                    // No room for the draft: decode without it.
                    for a in self.actives.iter_mut().filter(|a| !a.drafts.is_empty()) {
                        a.drafts.clear();
                        ctx.settle(0, pool.memory(a.seq).len());
                    }
                }
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
                    // One failure, told to every generation of the batch.
                    let e = Arc::new(e);
                    for a in self.actives.drain(..) {
                        let _ = pool.memory(a.seq).clear(ctx);
                        pool.set_busy(a.seq, false);
                        let _ = a.out.events.send(EngineEvent::Failed(EngineError::Llama {
                            doing: "decoding a batch of sequences",
                            source: Box::new(Arc::clone(&e)),
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
            } else if interval > 0
                && a.drafts.is_empty()
                && a.generated.len().is_multiple_of(interval)
            {
                // (With a draft decoded too, memory is past the token until the draft is
                // verified: `sample` takes the snapshot then.)
                if let Err(e) = mem.snapshot(ctx) {
                    tracing::warn!("cannot take a snapshot: {e}");
                }
            }
        }
    }

    /// When one generation decodes alone in sequence 0 and the target has a drafter, draft
    /// the tokens that follow its pending one (as many as its token cap and the context
    /// leave room for); they are decoded with it and verified in the next [`Self::sample`].
    fn draft(&mut self, ctx: &mut Target<'_>, pool: &mut Pool) {
        let n_ctx = ctx.seq_ctx() as usize;
        let most = ctx.draft_tokens();
        let mut pending = self.actives.iter_mut().filter(|a| a.pending.is_some());
        let (Some(a), None) = (pending.next(), pending.next()) else {
            return;
        };
        let Some((tok, _)) = a.pending else { return };
        let mem = pool.memory(a.seq);
        if mem.seq() != 0 || most == 0 {
            return;
        }
        a.drafting = true;
        let pos = mem.len();
        let room = n_ctx.saturating_sub(pos + 2);
        let budget = a.max_tokens.saturating_sub(a.generated.len() + 1);
        a.drafts = ctx.draft(pos, tok, most.min(room).min(budget));
    }

    /// Every generation leaves, cancelled (the engine is shutting down).
    pub(super) fn cancel_all(&mut self, pool: &mut Pool) {
        for a in &mut self.actives {
            a.stop = Some(StopReason::Cancelled);
        }
        self.sweep(pool);
    }

    /// The engine stops as a failure would (a halt): every generation ends with `Stopped`,
    /// not as if it had finished, so that its client is not handed a cut reply as a whole one.
    pub(super) fn fail_all(&mut self, pool: &mut Pool) {
        for a in self.actives.drain(..) {
            pool.set_busy(a.seq, false);
            let _ = a.out.events.send(EngineEvent::Failed(EngineError::Stopped));
        }
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

/// After `a` verified `drafts` and its samples matched the first `accepted`: memory takes those
/// tokens, the target and the drafter are cut back to them, and a snapshot is taken when the
/// generation crossed a multiple of `interval` tokens since `before`.
fn keep_verified(
    a: &mut Active,
    drafts: &[LlamaToken],
    accepted: usize,
    before: usize,
    interval: usize,
    ctx: &mut Target<'_>,
    pool: &mut Pool,
) {
    a.drafted += drafts.len();
    a.accepted += accepted;
    let mem = pool.memory(a.seq);
    for &d in &drafts[..accepted] {
        mem.accept(d);
    }
    let kept = mem.len();
    if accepted < drafts.len() {
        let cut = ctx.clear_kv_cache_seq(Some(mem.seq() as u32), Some(kept as u32), None);
        if !matches!(cut, Ok(true)) {
            // The target cannot go back to the kept tokens: its memory of this sequence is
            // unusable, so it is dropped and the generation ends in an error.
            tracing::warn!("cannot cut a rejected draft from memory");
            let _ = mem.clear(ctx);
            a.pending = None;
            a.stop = Some(StopReason::Cancelled);
            a.failed = Some("cutting a rejected draft from memory");
        }
    }
    ctx.settle(accepted, kept);
    if interval > 0 && a.stop.is_none() && before / interval != a.generated.len() / interval {
        if let Err(e) = pool.memory(a.seq).snapshot(ctx) {
            tracing::warn!("cannot take a snapshot: {e}");
        }
    }
}

fn finish(mut a: Active, stop: StopReason, pool: &mut Pool) {
    pool.set_busy(a.seq, false);
    let rest = a.text.finish();
    if !rest.is_empty() {
        let _ = a.out.events.send(EngineEvent::Piece(rest));
    }
    if let Some(doing) = a.failed {
        let _ = a.out.events.send(EngineEvent::Failed(EngineError::Llama {
            doing,
            source: Box::new(std::io::Error::other("llama.cpp refused")),
        }));
        return;
    }
    a.figures.generated_tokens = a.generated.len();
    a.figures.decode_seconds = a.decode_start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    if a.decode_start.is_none() {
        a.figures.prefill_seconds = a.started.elapsed().as_secs_f64();
    }
    if a.drafting {
        a.figures.draft = Some(DraftFigures {
            drafted: a.drafted,
            accepted: a.accepted,
        });
    }
    let _ = a.out.events.send(EngineEvent::Done(Generation {
        stop,
        figures: a.figures,
        tokens: a.generated,
        sampled: a.sampled,
        prompt_tokens: a.prompt_tokens,
    }));
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error(transparent)]
    Decode(DecodeError),
    #[error("filling a batch: {0}")]
    Batch(#[source] llama_cpp_2::llama_batch::BatchAddError),
}
