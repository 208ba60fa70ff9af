//! The engines behind one `lilypad serve` front end (`--replicas N`): which replica a request
//! goes to, how many requests each has in flight, and which have failed.
//!
//! A conversation stays on the replica that holds its memory: its route key (the
//! `X-Session-ID` header when sent, else the conversation key) is remembered with the replica
//! it first went to. A new conversation goes to the live replica with the fewest requests in
//! flight; on a tie, the one holding the fewest conversations, then the lowest index (so that
//! conversations arriving one after the other spread too). A replica whose engine stopped is marked failed once
//! (and logged); its conversations are forgotten here, so their next requests go to the
//! others, which read them in full (the memory is lost, the reply is the same).
//!
//! New weights (`weights.rs`) replace every replica at once ([`Replicas::replace`]) while no
//! request generates; conversations keep their homes, whose memory is then empty.
//!
//! Does not own: loading the engines (`crate::cli`), the HTTP handlers that ask for a
//! replica (`chat.rs`, `completions.rs`, `tokenize.rs`), the metrics' labels (`metrics.rs`).

use super::ServedModel;
use crate::engine::OccupancyReading;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Reads how full an engine's memory is (the in-process engine can say).
pub type OccupancyReader = Box<dyn Fn() -> OccupancyReading + Send + Sync>;

/// Stops an engine as a failure would; only for tests (see `faults.rs`).
pub type HaltForTests = Box<dyn Fn() + Send + Sync>;

/// Route keys remembered at most; past it the least recently used half is forgotten (their
/// conversations are placed again, as new ones).
const MAX_HOMES: usize = 65_536;

/// One engine of the server.
pub struct Replica {
    pub model: ServedModel,
    /// How full its memory is, where the engine can say.
    pub occupancy: Option<OccupancyReader>,
    /// Tests only: stop its engine (the test-only fault route, `faults.rs`).
    pub halt_for_tests: Option<HaltForTests>,
    /// Requests routed here and not finished.
    active: AtomicUsize,
    failed: AtomicBool,
}

impl Replica {
    pub fn new(model: ServedModel) -> Self {
        Self {
            model,
            occupancy: None,
            halt_for_tests: None,
            active: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
        }
    }

    /// Whether its engine is still believed to run.
    pub fn alive(&self) -> bool {
        !self.failed.load(Ordering::SeqCst)
    }

    /// Requests routed here and not finished.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// Where each conversation lives, and the last use of that entry (for forgetting).
#[derive(Default)]
struct Homes {
    of: HashMap<String, (usize, u64)>,
    clock: u64,
}

/// The server's replicas (at least one).
pub struct Replicas {
    all: RwLock<Vec<Arc<Replica>>>,
    homes: Mutex<Homes>,
}

/// A request's place on a replica; the replica counts it in flight until this is dropped.
pub(crate) struct Assigned {
    replica: Arc<Replica>,
    index: usize,
}

impl Assigned {
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn model(&self) -> &ServedModel {
        &self.replica.model
    }
}

impl Drop for Assigned {
    fn drop(&mut self) {
        self.replica.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Replicas {
    /// `first` and then `more`, indexed from 0 in that order.
    pub fn new(first: Replica, more: Vec<Replica>) -> Self {
        Self {
            all: RwLock::new(Self::arcs(first, more)),
            homes: Mutex::default(),
        }
    }

    fn arcs(first: Replica, more: Vec<Replica>) -> Vec<Arc<Replica>> {
        std::iter::once(first).chain(more).map(Arc::new).collect()
    }

    /// The replicas now (a poisoned lock still holds a whole list: it is only ever swapped).
    fn all(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Replica>>> {
        self.all.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> usize {
        self.all().len()
    }

    /// Never: there is always a first replica.
    pub fn is_empty(&self) -> bool {
        self.all().is_empty()
    }

    /// Each replica with its index, as they are now.
    pub fn snapshot(&self) -> Vec<(usize, Arc<Replica>)> {
        self.all().iter().cloned().enumerate().collect()
    }

    /// Replicas whose engine still runs.
    pub fn live(&self) -> usize {
        self.all().iter().filter(|r| r.alive()).count()
    }

    /// The replica requests are rendered with (every replica renders alike): the first one.
    pub fn renderer(&self) -> Arc<Replica> {
        self.all()[0].clone()
    }

    /// A live replica for work that needs any engine (tokenising); the first one when none
    /// lives (its engine then answers that it stopped).
    pub fn any(&self) -> (usize, Arc<Replica>) {
        let all = self.all();
        let i = all.iter().position(|r| r.alive()).unwrap_or(0);
        (i, all[i].clone())
    }

    /// Put `first` and `more` in the place of every replica (new weights), and hand back the
    /// ones they replace, for the caller to stop. Requests already routed keep the replica
    /// they were given; the caller makes sure none is generating. Conversations keep their
    /// homes where the new list has that index, and move otherwise.
    pub fn replace(&self, first: Replica, more: Vec<Replica>) -> Vec<Arc<Replica>> {
        let fresh = Self::arcs(first, more);
        let count = fresh.len();
        let old = std::mem::replace(
            &mut *self.all.write().unwrap_or_else(|p| p.into_inner()),
            fresh,
        );
        let mut homes = self.homes.lock().unwrap_or_else(|p| p.into_inner());
        homes.of.retain(|_, (i, _)| *i < count);
        old
    }

    /// The replica for a request of conversation `key`: its home while that lives, else the
    /// live one with the fewest requests in flight (which becomes its home). `None` when every
    /// replica failed.
    pub(crate) fn route(&self, key: &str) -> Option<Assigned> {
        let mut homes = self.homes.lock().unwrap_or_else(|p| p.into_inner());
        homes.clock += 1;
        let now = homes.clock;
        let all = self.all();
        let home = homes
            .of
            .get(key)
            .map(|&(i, _)| i)
            .filter(|&i| all.get(i).is_some_and(|r| r.alive()));
        let index = match home {
            Some(i) => i,
            None => {
                let mut held = vec![0usize; all.len()];
                for &(i, _) in homes.of.values() {
                    if let Some(n) = held.get_mut(i) {
                        *n += 1;
                    }
                }
                all.iter()
                    .enumerate()
                    .filter(|(_, r)| r.alive())
                    .min_by_key(|&(i, r)| (r.active(), held[i], i))
                    .map(|(i, _)| i)?
            }
        };
        homes.of.insert(key.to_string(), (index, now));
        if homes.of.len() > MAX_HOMES {
            forget_oldest_half(&mut homes.of);
        }
        drop(homes);
        let replica = all[index].clone();
        replica.active.fetch_add(1, Ordering::SeqCst);
        Some(Assigned { replica, index })
    }

    /// Replica `index`'s engine stopped: mark it failed (logged once) and forget its
    /// conversations, so that they move to the others.
    pub fn failed(&self, index: usize) {
        let Some(r) = self.all().get(index).cloned() else {
            return;
        };
        if !r.failed.swap(true, Ordering::SeqCst) {
            tracing::error!(
                replica = index,
                live = self.live(),
                "replica {index}: its engine stopped; its conversations move to the other replicas (their memory is lost)"
            );
        }
        let mut homes = self.homes.lock().unwrap_or_else(|p| p.into_inner());
        homes.of.retain(|_, (i, _)| *i != index);
    }
}

fn forget_oldest_half(of: &mut HashMap<String, (usize, u64)>) {
    let mut uses: Vec<u64> = of.values().map(|&(_, t)| t).collect();
    let mid = uses.len() / 2;
    let (_, &mut cut, _) = uses.select_nth_unstable(mid);
    of.retain(|_, (_, t)| *t > cut);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, ScriptEngine};
    use crate::prompt::PromptSettings;

    fn replicas(n: usize) -> Replicas {
        let one = || {
            let engine: Arc<dyn Engine> = Arc::new(ScriptEngine::new(Vec::new()));
            Replica::new(ServedModel::new(engine, &PromptSettings::default(), None).unwrap())
        };
        Replicas::new(one(), (1..n).map(|_| one()).collect())
    }

    #[test]
    fn new_conversations_go_to_the_least_busy_and_stay_home() {
        let r = replicas(2);
        let a = r.route("a").unwrap();
        let b = r.route("b").unwrap();
        assert_eq!((a.index(), b.index()), (0, 1));
        // `a`'s conversation stays on 0 even while 0 is the busier one.
        let a2 = r.route("a").unwrap();
        assert_eq!(a2.index(), 0);
        drop((a, a2));
        // 0 is idle now, 1 is not: a new conversation goes to 0.
        assert_eq!(r.route("c").unwrap().index(), 0);
        drop(b);
        // Both idle: the one holding fewer conversations (1 holds `b`, 0 holds `a` and `c`).
        assert_eq!(r.route("d").unwrap().index(), 1);
        assert_eq!(r.route("e").unwrap().index(), 0);
        assert_eq!(r.route("b").unwrap().index(), 1);
    }

    #[test]
    fn a_failed_replica_loses_its_conversations_to_the_others() {
        let r = replicas(2);
        drop(r.route("a"));
        drop(r.route("b"));
        assert_eq!(r.route("b").unwrap().index(), 1);
        r.failed(1);
        assert_eq!(r.live(), 1);
        assert_eq!(r.route("b").unwrap().index(), 0);
        assert_eq!(r.route("a").unwrap().index(), 0);
        assert_eq!(r.any().0, 0);
        r.failed(0);
        assert!(r.route("a").is_none());
    }

    #[test]
    fn forgetting_keeps_the_recent_half() {
        let mut of: HashMap<String, (usize, u64)> =
            (0..10u64).map(|t| (t.to_string(), (0, t))).collect();
        forget_oldest_half(&mut of);
        let mut kept: Vec<u64> = of.values().map(|&(_, t)| t).collect();
        kept.sort();
        assert_eq!(kept, vec![6, 7, 8, 9]);
    }
}
