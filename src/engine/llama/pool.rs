//! The sequences of the one llama.cpp context and the conversations that live in them. The
//! context holds `n_seq` sequences (`n_seq_max`; one unified attention cache shared by all of
//! them, or one cache each when `kv_unified` is off; one recurrent state each); each sequence
//! holds at most one conversation (a [`SequenceId`] key) with its own [`Memory`]: tokens,
//! prefix reuse and snapshots.
//! Conversations that have no sequence are parked in host memory (their whole sequence state,
//! saved with `state_seq_get`, plus their bookkeeping) and restored into a free sequence when
//! they come back, so they keep their prefix reuse.
//!
//! Invariants: a key is in at most one place (a sequence or the parked list); a busy sequence
//! (generating) is never parked, cleared or handed to another key; at most `max_kept`
//! conversations are kept (in sequences or parked), the least recently used dropped first; the
//! tokens of all sequences together fit the context (`make_room` parks idle ones to make
//! room; forked sequences share their common cells, so this count is an upper bound).
//!
//! Does not own: decoding and scheduling (`super::worker`, `super::step`).

use super::memory::{llama_err, Memory, Parts};
use super::target::Target;
use crate::engine::types::{EngineError, SequenceId};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::{LlamaStateSeqFlags, SeqState};

/// One conversation's memory, as [`super::EngineHandle::memory`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceMemory {
    pub sequence: SequenceId,
    /// The llama.cpp sequence it occupies; `None` while it is parked in host memory.
    pub llama_seq: Option<i32>,
    pub tokens: usize,
    pub generating: bool,
    /// llama.cpp's size of the sequence state (attention cells and recurrent state,
    /// `llama_state_seq_get_size_ext`); for a parked one, the bytes it holds in host memory.
    pub state_bytes: u64,
    /// llama.cpp's size of the recurrent part alone (the partial-only state); 0 when parked.
    pub recurrent_bytes: u64,
    /// Host memory its rewind snapshots take (shared with the sequences forked from it).
    pub snapshot_bytes: u64,
    /// Snapshots pinned at turn boundaries (`pinned_snapshots` at most), and how many pins
    /// were dropped for that bound.
    pub pinned_snapshots: usize,
    pub dropped_pins: usize,
}

/// Where the engine's memory goes: the context's attention cache (shared, or one per sequence)
/// and every conversation's share of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryReport {
    /// Token cells of the attention cache: shared by all sequences, or all the sequences'
    /// caches together when each has its own (`kv_unified` off).
    pub context_tokens: usize,
    /// Cells the sequences hold, counted per sequence (an upper bound: forks share cells).
    pub used_tokens: usize,
    /// Sequences the context holds (`EngineSettings::sequences`).
    pub sequences: usize,
    /// Attention-cache bytes per token, from the model's metadata (F16 cache).
    pub kv_bytes_per_token: u64,
    /// Recurrent-state bytes per sequence, from the model's metadata (F32).
    pub recurrent_bytes_per_sequence: u64,
    pub conversations: Vec<SequenceMemory>,
}

struct Resident {
    key: Option<u64>,
    memory: Memory,
    busy: bool,
    used: u64,
    /// Tokens this sequence will hold once the prompt it is reading is read (0 when none is
    /// being read): room other starts must leave it.
    reading: usize,
}

struct Parked {
    key: u64,
    state: SeqState,
    parts: Parts,
    used: u64,
}

pub(super) struct Pool {
    residents: Vec<Resident>,
    parked: Vec<Parked>,
    max_kept: usize,
    clock: u64,
    /// Tokens one sequence can hold.
    n_ctx: usize,
    /// Whether the sequences share one attention cache of `n_ctx` cells (else each has its
    /// own, and none needs room from the others).
    shared: bool,
}

impl Pool {
    pub(super) fn new(
        n_seq: usize,
        n_batch: usize,
        max_snapshots: usize,
        max_pinned: usize,
        max_kept: usize,
        n_ctx: usize,
        shared: bool,
    ) -> Self {
        let residents = (0..n_seq.max(1))
            .map(|i| Resident {
                key: None,
                memory: Memory::new(i as i32, n_batch, max_snapshots, max_pinned),
                busy: false,
                used: 0,
                reading: 0,
            })
            .collect();
        Self {
            residents,
            parked: Vec::new(),
            max_kept: max_kept.max(1),
            clock: 0,
            n_ctx,
            shared,
        }
    }

    pub(super) fn memory(&mut self, i: usize) -> &mut Memory {
        &mut self.residents[i].memory
    }

    pub(super) fn find(&self, key: u64) -> Option<usize> {
        self.residents.iter().position(|r| r.key == Some(key))
    }

    pub(super) fn is_busy(&self, key: u64) -> bool {
        self.find(key).is_some_and(|i| self.residents[i].busy)
    }

    pub(super) fn set_busy(&mut self, i: usize, busy: bool) {
        self.residents[i].busy = busy;
        if !busy {
            self.residents[i].reading = 0;
        }
    }

    /// Sequence `i` is reading a prompt of `tokens` tokens (0: it has finished): until then
    /// [`Self::make_room`] counts it at that length, so that prompts read a chunk at a time
    /// beside each other never overfill the cache between them.
    pub(super) fn set_reading(&mut self, i: usize, tokens: usize) {
        self.residents[i].reading = tokens;
    }

    fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.residents[i].used = self.clock;
    }

    /// The sequence holding `key`, bringing it in first (from the parked list, or empty) into a
    /// free sequence or the least recently used idle one, which is parked. A parked
    /// conversation is restored only where its tokens fit (idle ones are parked to make room).
    /// `Ok(None)` when every sequence is busy or pinned, or busy ones hold the room: the
    /// caller waits for one to finish.
    pub(super) fn acquire(
        &mut self,
        ctx: &mut Target<'_>,
        key: u64,
        pinned: &[usize],
    ) -> Result<Option<usize>, EngineError> {
        if let Some(i) = self.find(key) {
            self.touch(i);
            return Ok(Some(i));
        }
        let free = self.residents.iter().position(|r| r.key.is_none());
        let i = match free.or_else(|| self.idle_lru(pinned)) {
            Some(i) => i,
            None => return Ok(None),
        };
        self.park(ctx, i)?;
        if let Some(at) = self.parked.iter().position(|p| p.key == key) {
            if !self.make_room(ctx, i, self.parked[at].parts.len())? {
                return Ok(None);
            }
            // (Parking appends, so `at` still names it.)
            let p = self.parked.remove(at);
            let seq = self.residents[i].memory.seq();
            ctx.forget(seq);
            match ctx.state_seq_set(&p.state, seq) {
                Ok(()) => self.residents[i].memory.put_parts(p.parts),
                Err(e) => {
                    tracing::warn!(
                        "cannot restore conversation {key} ({} tokens): {e}",
                        p.parts.len()
                    );
                    self.residents[i].memory.clear(ctx)?;
                }
            }
        }
        self.residents[i].key = Some(key);
        self.touch(i);
        self.keep_limit(ctx, i)?;
        Ok(Some(i))
    }

    /// The least recently used sequence that holds an idle conversation and is not pinned.
    fn idle_lru(&self, pinned: &[usize]) -> Option<usize> {
        self.residents
            .iter()
            .enumerate()
            .filter(|(i, r)| r.key.is_some() && !r.busy && !pinned.contains(i))
            .min_by_key(|(_, r)| r.used)
            .map(|(i, _)| i)
    }

    /// Move sequence `i`'s conversation (if any) to the parked list and empty the sequence.
    fn park(&mut self, ctx: &mut Target<'_>, i: usize) -> Result<(), EngineError> {
        let r = &mut self.residents[i];
        if let Some(key) = r.key.take() {
            if r.memory.len() > 0 {
                match ctx.state_seq_get(r.memory.seq(), LlamaStateSeqFlags::empty()) {
                    Ok(state) => self.parked.push(Parked {
                        key,
                        state,
                        parts: r.memory.take_parts(),
                        used: r.used,
                    }),
                    // Parking is an optimisation: without it the conversation reads again.
                    Err(e) => tracing::warn!("cannot park conversation {key}: {e}"),
                }
            }
        }
        r.memory.clear(ctx)
    }

    /// Drop the least recently used conversations beyond `max_kept`: parked ones first, then
    /// idle sequences other than `current`.
    fn keep_limit(&mut self, ctx: &mut Target<'_>, current: usize) -> Result<(), EngineError> {
        loop {
            let kept =
                self.parked.len() + self.residents.iter().filter(|r| r.key.is_some()).count();
            if kept <= self.max_kept {
                return Ok(());
            }
            if let Some(at) = (0..self.parked.len()).min_by_key(|&j| self.parked[j].used) {
                let old = self.parked.remove(at);
                tracing::debug!(
                    slot = old.key,
                    "dropping the least recently used conversation"
                );
                continue;
            }
            match self.idle_lru(&[current]) {
                Some(j) => {
                    self.residents[j].key = None;
                    self.residents[j].memory.clear(ctx)?;
                }
                None => return Ok(()),
            }
        }
    }

    /// Make room for sequence `i` to hold `need` tokens next to the others (and one more cell
    /// for each busy sequence), parking idle sequences, least recently used first. `false`
    /// when busy sequences hold too much: the caller waits for them. With a cache per
    /// sequence the others never take its room (a prompt longer than the sequence's cache is
    /// refused where it is read).
    pub(super) fn make_room(
        &mut self,
        ctx: &mut Target<'_>,
        i: usize,
        need: usize,
    ) -> Result<bool, EngineError> {
        if !self.shared {
            return Ok(true);
        }
        loop {
            let others: usize = self
                .residents
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| r.memory.len().max(r.reading) + usize::from(r.busy))
                .sum();
            if others + need <= self.n_ctx {
                return Ok(true);
            }
            let candidate = self
                .residents
                .iter()
                .enumerate()
                .filter(|(j, r)| *j != i && !r.busy && r.memory.len() > 0)
                .min_by_key(|(_, r)| r.used)
                .map(|(j, _)| j);
            match candidate {
                Some(j) => self.park(ctx, j)?,
                None => return Ok(false),
            }
        }
    }

    /// Make `to` a copy of `from` without reading anything: the attention cells are shared
    /// (`copy_kv_cache_seq` on the unified cache; with a cache per sequence llama.cpp copies
    /// them into `to`'s), the recurrent state is copied, and the tokens and snapshots go along. `Ok(None)` when either is generating or no sequence is
    /// free: the caller waits. Returns the tokens `to` now holds.
    pub(super) fn fork(
        &mut self,
        ctx: &mut Target<'_>,
        from: u64,
        to: u64,
    ) -> Result<Option<usize>, EngineError> {
        if self.is_busy(from) || self.is_busy(to) {
            return Ok(None);
        }
        if from == to {
            return Ok(Some(
                self.find(from)
                    .map_or(0, |i| self.residents[i].memory.len()),
            ));
        }
        let src = self.find(from);
        let pinned: Vec<usize> = src.into_iter().collect();
        let Some(d) = self.acquire(ctx, to, &pinned)? else {
            return Ok(None);
        };
        self.residents[d].memory.clear(ctx)?;
        let dst_seq = self.residents[d].memory.seq();
        // Making room for `to` may have parked `from`: look again.
        if let Some(s) = self.find(from) {
            let src_seq = self.residents[s].memory.seq();
            ctx.copy_kv_cache_seq(src_seq, dst_seq, None, None)
                .map_err(|e| llama_err("copying a sequence", e))?;
            let parts = self.residents[s].memory.parts();
            self.residents[d].memory.put_parts(parts);
        } else if let Some(p) = self.parked.iter().find(|p| p.key == from) {
            ctx.state_seq_set(&p.state, dst_seq)
                .map_err(|e| llama_err("copying a parked sequence", e))?;
            self.residents[d].memory.put_parts(p.parts.clone());
        }
        Ok(Some(self.residents[d].memory.len()))
    }

    /// Forget conversation `key` (in a sequence or parked); the caller has made sure it is
    /// not generating.
    pub(super) fn forget(&mut self, ctx: &mut Target<'_>, key: u64) -> Result<(), EngineError> {
        self.parked.retain(|p| p.key != key);
        if let Some(i) = self.find(key) {
            let r = &mut self.residents[i];
            r.key = None;
            r.memory.clear(ctx)?;
        }
        Ok(())
    }

    /// Forget every conversation that is not generating.
    pub(super) fn reset(&mut self, ctx: &mut Target<'_>) -> Result<(), EngineError> {
        self.parked.clear();
        for r in self.residents.iter_mut().filter(|r| !r.busy) {
            r.key = None;
            r.memory.clear(ctx)?;
        }
        Ok(())
    }

    /// Every conversation's memory, in sequence order then parked ones.
    pub(super) fn conversations(&self, ctx: &LlamaContext<'_>) -> Vec<SequenceMemory> {
        let mut out: Vec<SequenceMemory> = self
            .residents
            .iter()
            .filter_map(|r| {
                let key = r.key?;
                let seq = r.memory.seq();
                Some(SequenceMemory {
                    sequence: SequenceId(key),
                    llama_seq: Some(seq),
                    tokens: r.memory.len(),
                    generating: r.busy,
                    state_bytes: ctx.state_seq_get_size_ext(seq, LlamaStateSeqFlags::empty())
                        as u64,
                    recurrent_bytes: ctx
                        .state_seq_get_size_ext(seq, LlamaStateSeqFlags::PARTIAL_ONLY)
                        as u64,
                    snapshot_bytes: r.memory.snapshot_bytes() as u64,
                    pinned_snapshots: r.memory.pins().0,
                    dropped_pins: r.memory.pins().1,
                })
            })
            .collect();
        out.extend(self.parked.iter().map(|p| SequenceMemory {
            sequence: SequenceId(p.key),
            llama_seq: None,
            tokens: p.parts.len(),
            generating: false,
            state_bytes: p.state.byte_len() as u64,
            recurrent_bytes: 0,
            snapshot_bytes: p.parts.snapshot_bytes() as u64,
            pinned_snapshots: p.parts.pins().0,
            dropped_pins: p.parts.pins().1,
        }));
        out
    }

    /// Tokens held in the sequences, counted per sequence.
    pub(super) fn used_tokens(&self) -> usize {
        self.residents.iter().map(|r| r.memory.len()).sum()
    }

    /// Conversations parked in host memory.
    pub(super) fn parked(&self) -> usize {
        self.parked.len()
    }

    pub(super) fn sequences(&self) -> usize {
        self.residents.len()
    }
}
