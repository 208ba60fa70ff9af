//! Which of a batch's in-process engines an attempt runs on, when there are several (one per
//! GPU device, or `lilypad run --replicas N`): the engine with the fewest attempts running,
//! the lowest index on a tie, for the attempt's whole life, tries included (its memory of the
//! conversation stays there). The rule is `lilypad serve`'s for a new conversation.
//!
//! Does not own: loading the engines (`batch.rs`, through `crate::launch::devices`), new
//! weights (`weights.rs`).

use std::sync::{Arc, Mutex, PoisonError};

/// Attempts running on each engine.
pub(super) struct Spread {
    running: Mutex<Vec<usize>>,
}

/// An attempt's place on engine `index`; dropping it frees the place.
pub(super) struct Placed {
    spread: Arc<Spread>,
    pub(super) index: usize,
}

impl Spread {
    /// `engines` engines (at least one), none running an attempt.
    pub(super) fn new(engines: usize) -> Arc<Self> {
        Arc::new(Self {
            running: Mutex::new(vec![0; engines.max(1)]),
        })
    }

    pub(super) fn engines(&self) -> usize {
        self.counts().len()
    }

    /// Place an attempt on the engine with the fewest running, the lowest index on a tie.
    pub(super) fn place(self: &Arc<Self>) -> Placed {
        // A poisoned lock only means a panic elsewhere while counting: the counts are plain
        // integers, still usable.
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let index = running
            .iter()
            .enumerate()
            .min_by_key(|&(i, n)| (*n, i))
            .map_or(0, |(i, _)| i);
        running[index] += 1;
        Placed {
            spread: self.clone(),
            index,
        }
    }

    /// Attempts running on each engine now.
    pub(super) fn counts(&self) -> Vec<usize> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        let mut running = self
            .spread
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        running[self.index] = running[self.index].saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_go_to_the_least_busy_engine_and_free_it_when_done() {
        let spread = Spread::new(3);
        let a = spread.place();
        let b = spread.place();
        let c = spread.place();
        assert_eq!((a.index, b.index, c.index), (0, 1, 2));
        let d = spread.place();
        assert_eq!(d.index, 0, "a tie goes to the lowest index");
        drop(b);
        assert_eq!(spread.counts(), vec![2, 0, 1]);
        assert_eq!(
            spread.place().index,
            1,
            "the freed engine is the least busy"
        );
        // The temporary above was dropped at once.
        assert_eq!(spread.counts(), vec![2, 0, 1]);
        drop((a, c, d));
        assert_eq!(spread.counts(), vec![0, 0, 0]);
    }

    #[test]
    fn one_engine_takes_every_attempt() {
        let spread = Spread::new(0);
        assert_eq!(spread.engines(), 1);
        let placed: Vec<Placed> = (0..4).map(|_| spread.place()).collect();
        assert!(placed.iter().all(|p| p.index == 0));
        assert_eq!(spread.counts(), vec![4]);
    }
}
