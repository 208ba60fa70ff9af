//! How full the engine's memory is, readable from any thread without asking the engine: the
//! tokens held in its sequences against the context, and the conversations parked in host
//! memory. The engine thread writes it after each step (two counts it already keeps), so that
//! `lilypad serve` can report it on every scrape of `/metrics` without a job in the queue.
//!
//! Does not own: the memory itself (`pool.rs`), llama.cpp's exact state sizes
//! (`EngineHandle::memory`, which asks the engine thread).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The counts, as last written by the engine thread.
#[derive(Debug, Default)]
pub struct Occupancy {
    used_tokens: AtomicUsize,
    context_tokens: AtomicUsize,
    parked: AtomicUsize,
    /// The most prompt tokens read between two steps while generations were running.
    prompt_between_steps: AtomicUsize,
}

/// A reading of [`Occupancy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OccupancyReading {
    /// Tokens held in the sequences (the attention cache).
    pub used_tokens: usize,
    /// The context: tokens the cache can hold.
    pub context_tokens: usize,
    /// Conversations parked in host memory.
    pub parked: usize,
    /// The most prompt tokens read between two decode steps while generations were running
    /// (since the engine started): what a joining prompt made them wait for at most.
    pub prompt_between_steps_max: usize,
}

impl OccupancyReading {
    /// The share of the cache in use, from 0 to 1.
    pub fn usage(&self) -> f64 {
        if self.context_tokens == 0 {
            0.0
        } else {
            (self.used_tokens as f64 / self.context_tokens as f64).min(1.0)
        }
    }
}

impl Occupancy {
    pub(super) fn write(&self, used_tokens: usize, context_tokens: usize, parked: usize) {
        self.used_tokens.store(used_tokens, Ordering::Relaxed);
        self.context_tokens.store(context_tokens, Ordering::Relaxed);
        self.parked.store(parked, Ordering::Relaxed);
    }

    /// Record that `n` prompt tokens were read between two steps of running generations.
    pub(super) fn prompt_read_between_steps(&self, n: usize) {
        self.prompt_between_steps.fetch_max(n, Ordering::Relaxed);
    }

    /// The counts now (each as last written; they may be one step apart).
    pub fn read(&self) -> OccupancyReading {
        OccupancyReading {
            used_tokens: self.used_tokens.load(Ordering::Relaxed),
            context_tokens: self.context_tokens.load(Ordering::Relaxed),
            parked: self.parked.load(Ordering::Relaxed),
            prompt_between_steps_max: self.prompt_between_steps.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_a_share_of_the_context() {
        let o = Occupancy::default();
        assert_eq!(o.read().usage(), 0.0, "nothing written yet");
        o.write(1024, 4096, 2);
        let r = o.read();
        assert_eq!((r.usage(), r.parked), (0.25, 2));
    }
}
