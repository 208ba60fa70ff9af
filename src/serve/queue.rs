//! The wait for the engine: at most `parallel` generations run at once (by default the
//! engine's sequences; each choice of a request is one, `choices.rs`), and those waiting are
//! let in by priority, higher first, then in the order they came.
//!
//! A waiting request whose client goes away leaves the line (its place is skipped); a
//! [`Permit`] is given to the next waiting request when dropped, and back to the pool when none
//! waits.
//!
//! Does not own: the bound on requests in flight (`max_queue`, `chat.rs`), a key's own limits
//! (`limits.rs`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

struct Waiter {
    priority: i32,
    /// Arrival number: among equal priorities, the lower goes first.
    order: u64,
    tx: oneshot::Sender<Permit>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Waiter {}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiter {
    /// The greatest is served first: higher priority, then earlier arrival.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.order.cmp(&self.order))
    }
}

struct State {
    free: usize,
    next_order: u64,
    waiting: BinaryHeap<Waiter>,
}

/// Places to generate, handed out by priority.
pub(crate) struct PriorityGate {
    state: Mutex<State>,
}

/// A place to generate; the next waiting request gets it when this is dropped.
pub(crate) struct Permit {
    gate: Arc<PriorityGate>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate.release();
    }
}

impl PriorityGate {
    /// `parallel` places (at least one).
    pub(crate) fn new(parallel: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                free: parallel.max(1),
                next_order: 0,
                waiting: BinaryHeap::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the lock is held; the state stays consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for a place; requests of higher `priority` go first.
    pub(crate) async fn enter(self: &Arc<Self>, priority: i32) -> Permit {
        let rx = {
            let mut s = self.lock();
            if s.free > 0 && s.waiting.is_empty() {
                s.free -= 1;
                return Permit { gate: self.clone() };
            }
            let (tx, rx) = oneshot::channel();
            let order = s.next_order;
            s.next_order += 1;
            s.waiting.push(Waiter {
                priority,
                order,
                tx,
            });
            rx
        };
        match rx.await {
            Ok(permit) => permit,
            // The sender is only dropped after a send or with the gate, which this holds.
            Err(_) => Permit { gate: self.clone() },
        }
    }

    /// Requests waiting for a place now.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    fn release(self: &Arc<Self>) {
        let next = {
            let mut s = self.lock();
            match s.waiting.pop() {
                Some(w) => w,
                None => {
                    s.free += 1;
                    return;
                }
            }
        };
        // A waiter that left gives the permit back through its drop, to the next one.
        let _ = next.tx.send(Permit { gate: self.clone() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiting_requests_go_in_by_priority_then_arrival() {
        let gate = PriorityGate::new(1);
        let first = gate.enter(0).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for (name, priority) in [("low", 0), ("high", 5), ("low2", 0), ("mid", 2)] {
            let g = gate.clone();
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                let p = g.enter(priority).await;
                tx.send(name).unwrap();
                drop(p);
            }));
            // Each is in line before the next comes.
            while gate.waiting() < tasks.len() {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        let mut order = Vec::new();
        while let Ok(n) = rx.try_recv() {
            order.push(n);
        }
        assert_eq!(order, ["high", "mid", "low", "low2"]);
    }

    #[tokio::test]
    async fn a_waiter_that_left_passes_its_place_on() {
        let gate = PriorityGate::new(1);
        let first = gate.enter(0).await;
        let g = gate.clone();
        let gone = tokio::spawn(async move {
            let _p = g.enter(9).await;
        });
        while gate.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        drop(first);
        // The place came back: another request gets in.
        let _again = gate.enter(0).await;
    }
}
