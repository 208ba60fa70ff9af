//! What one llama.cpp sequence has in memory and how a new prompt is matched against it.
//! Invariant: the sequence `seq` holds exactly the tokens in `cached`, and every snapshot's
//! position is at most `cached.len()` and was taken when memory held `cached[..pos]`. The
//! context holds several sequences (`super::pool`); each has its own `Memory`.
//!
//! The DeltaNet layers keep a recurrent state that cannot be cut back to an arbitrary token, so
//! rewinds go through snapshots of the sequence state taken at turn boundaries (the start of
//! the prompt's last message, and one token before its end) and every `snapshot_interval`
//! generated tokens: restore the newest
//! snapshot at or before the common prefix, trim the attention cache past it, and read the
//! rest. Only when no snapshot fits is the prompt read in full.
//!
//! Snapshots roll: at most `max_snapshots` are kept, the oldest dropped first. A request may
//! *pin* the snapshot at its turn boundary (`GenerateRequest::pin_turn`; the agent pins every
//! turn): pinned snapshots are not counted against `max_snapshots` but against their own bound
//! `max_pinned`, the oldest pin dropped first past it, so a conversation can go back to any
//! of its last `max_pinned` turns and be served from memory. The positions of pins dropped
//! for the bound are remembered, so that a prompt they would have served says so
//! ([`Prefill::dropped_pin`]).

use super::super::types::{EngineError, Reuse};
use super::target::Target;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{LlamaStateSeqFlags, SeqState};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A rewind point. The state is shared between a sequence and the sequences forked from it.
#[derive(Clone)]
struct Snapshot {
    pos: usize,
    state: Arc<SeqState>,
    /// Taken at the start of a prompt's last message: the point a saved session returns to.
    at_message_start: bool,
    /// Kept for a rewind to this turn (bounded by `max_pinned`, not `max_snapshots`).
    pinned: bool,
}

/// The outcome of reading a prompt: everything but its last token is in memory (`last`, which
/// the caller decodes to get the next token's logits, with other sequences' tokens or alone).
/// A prompt being read into a sequence ([`Memory::begin_prefill`], [`Memory::read_prompt`]).
#[derive(Debug, Clone)]
pub(super) struct Reading {
    /// Tokens kept from memory.
    start: usize,
    /// Tokens in memory now.
    pos: usize,
    boundary: Option<usize>,
    pin: bool,
    reuse: Reuse,
    dropped_pin: Option<usize>,
    cancelled: bool,
    /// All but the last token read and the snapshot taken.
    done: bool,
    /// The prompt's head was loaded from a saved state: this many tokens (`super::heads`).
    from_head: Option<usize>,
    /// Take the sequence state when memory holds exactly this many tokens (a head to save).
    save_head: Option<usize>,
    /// The state taken at `save_head`, for the caller to save.
    head_state: Option<Vec<u8>>,
}

impl Reading {
    /// True when everything but the last token is read (or the reading was cancelled).
    pub(super) fn finished(&self) -> bool {
        self.done || self.cancelled
    }

    /// The head (its first `tokens`) came from a saved state ([`Memory::load_head`]).
    pub(super) fn loaded_head(&mut self, tokens: usize) {
        self.from_head = Some(tokens);
    }

    /// Take the sequence state when memory holds the first `tokens` of the prompt (read from
    /// the start), for [`Self::take_head_state`].
    pub(super) fn save_head_at(&mut self, tokens: usize) {
        self.save_head = (self.pos < tokens).then_some(tokens);
    }

    /// The state taken for [`Self::save_head_at`], once it is.
    pub(super) fn take_head_state(&mut self) -> Option<Vec<u8>> {
        self.head_state.take()
    }

    /// What the reading came to, for `prompt`.
    pub(super) fn result(&self, prompt: &[LlamaToken]) -> Prefill {
        Prefill {
            last: prompt[prompt.len() - 1],
            reuse: match self.from_head {
                Some(tokens) if self.reuse == Reuse::Extended => Reuse::SavedHead { tokens },
                _ => self.reuse,
            },
            reused: self.start,
            evaluated: match self.cancelled {
                true => self.pos - self.start,
                false => prompt.len() - self.start,
            },
            cancelled: self.cancelled,
            dropped_pin: self.dropped_pin,
        }
    }
}

pub(super) struct Prefill {
    pub last: LlamaToken,
    pub reuse: Reuse,
    pub reused: usize,
    pub evaluated: usize,
    pub cancelled: bool,
    /// A pin dropped for the bound that would have served this prompt from further on.
    pub dropped_pin: Option<usize>,
}

/// A conversation's bookkeeping while it is parked (`super::pool`) or being forked: its tokens
/// and rewind points, kept with the sequence state saved beside them.
#[derive(Clone)]
pub(super) struct Parts {
    cached: Vec<LlamaToken>,
    snapshots: Vec<Snapshot>,
    dropped_pins: Vec<usize>,
}

impl Parts {
    pub(super) fn len(&self) -> usize {
        self.cached.len()
    }

    pub(super) fn snapshot_bytes(&self) -> usize {
        self.snapshots.iter().map(|s| s.state.byte_len()).sum()
    }

    /// Pinned snapshots held, and pins dropped for the bound.
    pub(super) fn pins(&self) -> (usize, usize) {
        (
            self.snapshots.iter().filter(|s| s.pinned).count(),
            self.dropped_pins.len(),
        )
    }
}

pub(super) struct Memory {
    /// The llama.cpp sequence id.
    seq: i32,
    cached: Vec<LlamaToken>,
    snapshots: Vec<Snapshot>,
    max_snapshots: usize,
    max_pinned: usize,
    /// Positions of pins dropped for the bound (each at most `cached.len()`, like snapshots).
    dropped_pins: Vec<usize>,
    n_batch: usize,
    batch: LlamaBatch<'static>,
}

pub(super) fn llama_err(
    doing: &'static str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> EngineError {
    EngineError::Llama {
        doing,
        source: Box::new(e),
    }
}

impl Memory {
    pub(super) fn new(seq: i32, n_batch: usize, max_snapshots: usize, max_pinned: usize) -> Self {
        Self {
            seq,
            cached: Vec::new(),
            snapshots: Vec::new(),
            max_snapshots,
            max_pinned,
            dropped_pins: Vec::new(),
            n_batch: n_batch.max(1),
            batch: LlamaBatch::new(n_batch.max(1), 1),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.cached.len()
    }

    pub(super) fn seq(&self) -> i32 {
        self.seq
    }

    /// Bytes the snapshots hold (shared ones counted in every sequence that holds them).
    pub(super) fn snapshot_bytes(&self) -> usize {
        self.snapshots.iter().map(|s| s.state.byte_len()).sum()
    }

    /// Bring memory towards `prompt`, first part: match it against memory (rewinding where it
    /// diverges) and pin (with `pin`, the snapshot at `boundary` is pinned: taken when read, or
    /// marked if memory has it); nothing of the prompt is read yet. [`Self::read_prompt`] reads
    /// all but its last token, a budget at a time, so that other sequences can decode in
    /// between; the caller decodes the last one (with other sequences' tokens, or alone with
    /// [`Self::read_last`]), then [`Self::accept`]s what it samples.
    pub(super) fn begin_prefill(
        &mut self,
        ctx: &mut Target<'_>,
        prompt: &[LlamaToken],
        boundary: Option<usize>,
        pin: bool,
    ) -> Result<Reading, EngineError> {
        let n = prompt.len();
        if n == 0 {
            return Err(EngineError::EmptyPrompt);
        }
        if n > ctx.seq_ctx() as usize {
            return Err(EngineError::PromptTooLong {
                prompt: n,
                ctx: ctx.seq_ctx(),
            });
        }
        let common = self
            .cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        // At least one token must be read to produce logits for the next one.
        let keep = common.min(n - 1);
        let (start, reuse, dropped_pin) = if self.cached.is_empty() {
            (0, Reuse::Fresh, None)
        } else if keep == self.cached.len() {
            (keep, Reuse::Extended, None)
        } else {
            self.rewind(ctx, keep)?
        };
        if let Some(b) = boundary.filter(|&b| pin && b <= start) {
            self.pin_existing(b);
        }
        Ok(Reading {
            start,
            pos: start,
            boundary,
            pin,
            reuse,
            dropped_pin,
            cancelled: false,
            done: false,
            from_head: None,
            save_head: None,
            head_state: None,
        })
    }

    /// Read up to `budget` more tokens of `prompt` (at least one batch when any is left),
    /// stopping early when `cancel` is set; returns how many were read. Everything but the last
    /// token is read, then a snapshot taken there: a later prompt that shares at least those
    /// tokens (the next turn, or the same prompt again) can always come back to this point,
    /// since it must read at least one token anyway. A snapshot is also taken at `boundary`
    /// (the start of the last message), which a re-rendered last turn (earlier reasoning
    /// dropped, say) still shares.
    pub(super) fn read_prompt(
        &mut self,
        ctx: &mut Target<'_>,
        prompt: &[LlamaToken],
        r: &mut Reading,
        budget: usize,
        cancel: &AtomicBool,
    ) -> Result<usize, EngineError> {
        let last = prompt.len() - 1;
        let from = r.pos;
        while r.pos < last {
            if cancel.load(Ordering::Relaxed) {
                r.cancelled = true;
                return Ok(r.pos - from);
            }
            let left = budget.saturating_sub(r.pos - from);
            if left == 0 {
                return Ok(r.pos - from);
            }
            let mut end = (r.pos + self.n_batch.min(left)).min(last);
            for stop in [r.boundary, r.save_head] {
                if let Some(b) = stop.filter(|&b| r.pos < b && b < end) {
                    end = b;
                }
            }
            self.decode(ctx, &prompt[r.pos..end], None)?;
            r.pos = end;
            if Some(r.pos) == r.boundary {
                self.take_snapshot(ctx, true, r.pin)?;
            }
            if Some(r.pos) == r.save_head {
                r.save_head = None;
                // A head that cannot be taken is read again next time; the prompt goes on.
                match self.whole_state(ctx) {
                    Ok(state) => r.head_state = Some(state),
                    Err(e) => tracing::warn!("cannot take the prompt head's state: {e}"),
                }
            }
        }
        if !r.done {
            self.snapshot(ctx)?;
            r.done = true;
        }
        Ok(r.pos - from)
    }

    /// Record a token the caller decoded into this sequence (at position `self.len()`).
    pub(super) fn accept(&mut self, tok: LlamaToken) {
        self.cached.push(tok);
    }

    /// A copy of the bookkeeping (snapshot states shared), for forking this sequence into
    /// another with [`Self::put_parts`].
    pub(super) fn parts(&self) -> Parts {
        Parts {
            cached: self.cached.clone(),
            snapshots: self.snapshots.clone(),
            dropped_pins: self.dropped_pins.clone(),
        }
    }

    /// Read `tokens` at the end of memory; `logits_at` asks for the logits of one of them.
    fn decode(
        &mut self,
        ctx: &mut Target<'_>,
        tokens: &[LlamaToken],
        logits_at: Option<usize>,
    ) -> Result<(), EngineError> {
        self.batch.clear();
        let base = self.cached.len();
        for (i, &tok) in tokens.iter().enumerate() {
            self.batch
                .add(tok, (base + i) as i32, &[self.seq], logits_at == Some(i))
                .map_err(|e| llama_err("filling a batch", e))?;
        }
        let from = self.drafter_from(base);
        ctx.decode(&mut self.batch, from)
            .map_err(|e| llama_err("reading tokens", e))?;
        self.cached.extend_from_slice(tokens);
        Ok(())
    }

    /// Read `tokens` into an emptied memory, batch by batch, with logits for every position
    /// from `from` on; each batch's rows go to `rows` as (first position, row count, logits row
    /// after row). `rows` returning false stops early. Memory is empty again afterwards, so the
    /// next prompt is read in full. For quality checks that need every position's distribution.
    pub(super) fn score(
        &mut self,
        ctx: &mut Target<'_>,
        tokens: &[LlamaToken],
        from: usize,
        mut rows: impl FnMut(usize, usize, Vec<f32>) -> bool,
    ) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        if tokens.len() > ctx.seq_ctx() as usize {
            return Err(EngineError::PromptTooLong {
                prompt: tokens.len(),
                ctx: ctx.seq_ctx(),
            });
        }
        self.clear(ctx)?;
        let result = self.score_batches(ctx, tokens, from, &mut rows);
        self.clear(ctx)?;
        result
    }

    fn score_batches(
        &mut self,
        ctx: &mut Target<'_>,
        tokens: &[LlamaToken],
        from: usize,
        rows: &mut impl FnMut(usize, usize, Vec<f32>) -> bool,
    ) -> Result<(), EngineError> {
        let mut start = 0;
        while start < tokens.len() {
            let end = (start + self.n_batch).min(tokens.len());
            self.batch.clear();
            for (pos, &tok) in tokens.iter().enumerate().take(end).skip(start) {
                self.batch
                    .add(tok, pos as i32, &[self.seq], pos >= from)
                    .map_err(|e| llama_err("filling a batch", e))?;
            }
            let drafter = self.drafter_from(start);
            ctx.decode(&mut self.batch, drafter)
                .map_err(|e| llama_err("reading tokens", e))?;
            self.cached.extend_from_slice(&tokens[start..end]);
            let first = from.max(start);
            if first < end {
                let mut logits = Vec::new();
                for pos in first..end {
                    logits.extend_from_slice(ctx.get_logits_ith((pos - start) as i32));
                }
                if !rows(first, end - first, logits) {
                    return Ok(());
                }
            }
            start = end;
        }
        Ok(())
    }

    /// Go back to at most `keep` tokens: the newest snapshot at or before it, or nothing; and
    /// the newest pin dropped for the bound that would have served from further on.
    fn rewind(
        &mut self,
        ctx: &mut Target<'_>,
        keep: usize,
    ) -> Result<(usize, Reuse, Option<usize>), EngineError> {
        self.snapshots.retain(|s| s.pos <= keep);
        self.dropped_pins.retain(|&p| p <= keep);
        let best = self.snapshots.last().map(|s| s.pos);
        let dropped_pin = self
            .dropped_pins
            .iter()
            .copied()
            .filter(|&p| best.is_none_or(|b| p > b))
            .max();
        let (start, reuse) = self.rewind_to_snapshot(ctx)?;
        Ok((start, reuse, dropped_pin))
    }

    /// Restore the newest snapshot (all of them are at or before the point to go back to), or
    /// clear memory when there is none.
    fn rewind_to_snapshot(&mut self, ctx: &mut Target<'_>) -> Result<(usize, Reuse), EngineError> {
        if let Some(snap) = self.snapshots.last() {
            ctx.state_seq_set(&snap.state, self.seq)
                .map_err(|e| llama_err("restoring a snapshot", e))?;
            // With the recurrent part restored, trimming the attention cache past the snapshot
            // succeeds; it would fail on the hybrid memory without the restore.
            ctx.kv_cache_seq_rm(self.seq, Some(snap.pos as u32), None)
                .map_err(|e| llama_err("trimming the attention cache", e))?;
            self.cached.truncate(snap.pos);
            return Ok((snap.pos, Reuse::Rewound { to: snap.pos }));
        }
        self.clear(ctx)?;
        Ok((0, Reuse::Reprefilled))
    }

    /// Hand the bookkeeping over for parking; the caller saves the sequence state first and
    /// clears it after, which brings memory back to the invariant (empty and empty).
    pub(super) fn take_parts(&mut self) -> Parts {
        Parts {
            cached: std::mem::take(&mut self.cached),
            snapshots: std::mem::take(&mut self.snapshots),
            dropped_pins: std::mem::take(&mut self.dropped_pins),
        }
    }

    /// Take back parked (or forked) bookkeeping; the caller has just restored the matching
    /// sequence state into an empty sequence (or copied it there).
    pub(super) fn put_parts(&mut self, parts: Parts) {
        self.cached = parts.cached;
        self.snapshots = parts.snapshots;
        self.dropped_pins = parts.dropped_pins;
    }

    /// Save memory to `path` for a later session: first back to the start of the last
    /// prompt's last message (which the next prompt of a resumed conversation shares, even when
    /// the template re-renders that message), then the whole sequence state and its tokens.
    /// Returns the number of tokens saved.
    pub(super) fn save(&mut self, ctx: &mut Target<'_>, path: &Path) -> Result<usize, EngineError> {
        if let Some(pos) = self
            .snapshots
            .iter()
            .rev()
            .find(|s| s.at_message_start)
            .map(|s| s.pos)
        {
            if pos < self.cached.len() {
                self.rewind(ctx, pos)?;
            }
        }
        ctx.state_seq_save_file(path, self.seq, &self.cached)
            .map_err(|e| llama_err("saving the session state", e))?;
        Ok(self.cached.len())
    }

    /// This sequence's whole state (attention cache and recurrent state), as bytes for a file.
    fn whole_state(&self, ctx: &Target<'_>) -> Result<Vec<u8>, EngineError> {
        let flags = LlamaStateSeqFlags::empty();
        let size = ctx.state_seq_get_size_ext(self.seq, flags);
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds the size llama.cpp has just reported for this sequence's state
        // with the same flags, on the engine thread, with nothing decoded in between.
        let n = unsafe { ctx.state_seq_get_data_ext(bytes.as_mut_ptr(), self.seq, flags) };
        if n != size {
            return Err(llama_err(
                "taking the prompt head's state",
                std::io::Error::other(format!("{n} bytes written of {size}")),
            ));
        }
        Ok(bytes)
    }

    /// Put `head`'s saved state (taken by [`Reading::take_head_state`] from a context of this
    /// model and settings) into this empty sequence, and keep a rewind point there.
    pub(super) fn load_head(
        &mut self,
        ctx: &mut Target<'_>,
        head: &[LlamaToken],
        state: &[u8],
    ) -> Result<(), EngineError> {
        self.clear(ctx)?;
        // SAFETY: `state` is exactly the bytes `whole_state` took from a context of this model
        // file with the same state-shaping settings: `super::heads` checks the key (the file's
        // identity, those settings and the head's tokens) and the SHA-256 of the bytes before
        // it hands them over, and llama.cpp checks the layout it reads against its own.
        let ok =
            unsafe { ctx.state_seq_set_data_ext(state, self.seq, LlamaStateSeqFlags::empty()) };
        if !ok {
            self.clear(ctx)?;
            return Err(llama_err(
                "loading a saved prompt head",
                std::io::Error::other("llama.cpp refused the state"),
            ));
        }
        self.cached = head.to_vec();
        self.snapshot(ctx)
    }

    /// Decode the prompt's last token (after [`Self::read_prompt`]) with its logits at batch
    /// index 0.
    pub(super) fn read_last(
        &mut self,
        ctx: &mut Target<'_>,
        last: LlamaToken,
    ) -> Result<(), EngineError> {
        self.decode(ctx, &[last], Some(0))
    }

    /// Replace memory with a state saved by [`Self::save`]; returns its token count.
    pub(super) fn load(&mut self, ctx: &mut Target<'_>, path: &Path) -> Result<usize, EngineError> {
        self.clear(ctx)?;
        let n_ctx = ctx.seq_ctx() as usize;
        let (tokens, _) = ctx
            .state_seq_load_file(path, self.seq, n_ctx)
            .map_err(|e| llama_err("loading a saved session state", e))?;
        self.cached = tokens;
        Ok(self.cached.len())
    }

    /// For a batch of this sequence alone from position `from`: where the MTP drafter, which
    /// follows sequence 0, reads it from (`super::target`).
    fn drafter_from(&self, from: usize) -> Option<usize> {
        (self.seq == 0).then_some(from)
    }

    /// Forget everything.
    pub(super) fn clear(&mut self, ctx: &mut Target<'_>) -> Result<(), EngineError> {
        ctx.clear_kv_cache_seq(Some(self.seq as u32), None, None)
            .map_err(|e| llama_err("clearing memory", e))?;
        ctx.forget(self.seq);
        self.cached.clear();
        self.snapshots.clear();
        self.dropped_pins.clear();
        Ok(())
    }

    /// Keep the current state as a rewind point (the oldest is dropped past the limit).
    pub(super) fn snapshot(&mut self, ctx: &LlamaContext<'_>) -> Result<(), EngineError> {
        self.take_snapshot(ctx, false, false)
    }

    fn take_snapshot(
        &mut self,
        ctx: &LlamaContext<'_>,
        at_message_start: bool,
        pin: bool,
    ) -> Result<(), EngineError> {
        let pin = pin && self.max_pinned > 0;
        if self.max_snapshots == 0 && !pin {
            return Ok(());
        }
        let pos = self.cached.len();
        if self.snapshots.last().is_some_and(|s| s.pos == pos) {
            if pin {
                self.pin_existing(pos);
            }
            return Ok(());
        }
        let state = ctx
            .state_seq_get(self.seq, LlamaStateSeqFlags::PARTIAL_ONLY)
            .map_err(|e| llama_err("taking a snapshot", e))?;
        self.snapshots.push(Snapshot {
            pos,
            state: Arc::new(state),
            at_message_start,
            pinned: pin,
        });
        self.bound();
        Ok(())
    }

    /// Pin the snapshot memory holds at `pos`, if any.
    fn pin_existing(&mut self, pos: usize) {
        if self.max_pinned == 0 {
            return;
        }
        if let Some(s) = self.snapshots.iter_mut().find(|s| s.pos == pos) {
            s.pinned = true;
        }
        self.bound();
    }

    /// Keep at most `max_snapshots` rolling snapshots and `max_pinned` pinned ones, the oldest
    /// of each dropped first; dropped pins are remembered by position.
    fn bound(&mut self) {
        let count =
            |snaps: &[Snapshot], pinned: bool| snaps.iter().filter(|s| s.pinned == pinned).count();
        while count(&self.snapshots, false) > self.max_snapshots {
            if let Some(i) = self.snapshots.iter().position(|s| !s.pinned) {
                self.snapshots.remove(i);
            }
        }
        while count(&self.snapshots, true) > self.max_pinned {
            if let Some(i) = self.snapshots.iter().position(|s| s.pinned) {
                let gone = self.snapshots.remove(i);
                self.dropped_pins.push(gone.pos);
            }
        }
    }

    /// Pinned snapshots held, and the positions of those dropped for the bound.
    pub(super) fn pins(&self) -> (usize, usize) {
        (
            self.snapshots.iter().filter(|s| s.pinned).count(),
            self.dropped_pins.len(),
        )
    }
}
