//! Conversation slots: several conversations share the one llama.cpp sequence by taking turns.
//! The active conversation lives in the sequence (and in [`Memory`]); the others are parked in
//! host memory as a full saved sequence state (attention cache and recurrent state) plus their
//! bookkeeping (tokens and rewind snapshots). Switching parks the active one and restores the
//! requested one, so a conversation that comes back continues with prefix reuse as if it had
//! never left, instead of reading its whole prompt again.
//!
//! Invariants: at most `max_parked` conversations are parked; past that the one parked longest
//! ago (the least recently used) is dropped and will read its prompt in full when it returns.
//! The default slot is key 0, so an engine that never switches behaves exactly as before.
//! A parked conversation costs host memory: its attention cache (32 KiB per token for
//! FrogNano at F16) plus its snapshots. Used by `lilypad serve`.

use super::memory::{Memory, Parts, SEQ};
use crate::engine::types::EngineError;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::{LlamaStateSeqFlags, SeqState};

struct Parked {
    key: u64,
    state: SeqState,
    parts: Parts,
}

pub(super) struct Slots {
    current: u64,
    parked: Vec<Parked>,
    max_parked: usize,
}

impl Slots {
    pub(super) fn new(max_parked: usize) -> Self {
        Self {
            current: 0,
            parked: Vec::new(),
            max_parked,
        }
    }

    /// Make `key` the active conversation.
    pub(super) fn switch(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        memory: &mut Memory,
        key: u64,
    ) -> Result<(), EngineError> {
        if key == self.current {
            return Ok(());
        }
        // Take the requested one out first, so that parking the active one cannot evict it.
        let wanted = self
            .parked
            .iter()
            .position(|p| p.key == key)
            .map(|i| self.parked.remove(i));
        if memory.len() > 0 && self.max_parked > 0 {
            match ctx.state_seq_get(SEQ, LlamaStateSeqFlags::empty()) {
                Ok(state) => {
                    let parts = memory.take_parts();
                    self.parked.push(Parked {
                        key: self.current,
                        state,
                        parts,
                    });
                    if self.parked.len() > self.max_parked {
                        let old = self.parked.remove(0);
                        tracing::debug!(slot = old.key, "dropping the least recently used slot");
                    }
                }
                // Parking is an optimisation: without it the conversation reads again later.
                Err(e) => tracing::warn!("cannot park conversation {}: {e}", self.current),
            }
        }
        memory.clear(ctx)?;
        self.current = key;
        if let Some(p) = wanted {
            match ctx.state_seq_set(&p.state, SEQ) {
                Ok(()) => memory.put_parts(p.parts),
                Err(e) => {
                    tracing::warn!(
                        "cannot restore conversation {key} ({} tokens): {e}",
                        p.parts.len()
                    );
                    memory.clear(ctx)?;
                }
            }
        }
        Ok(())
    }
}
