//! Each key's use against its limits (`keys::Limits`): requests in flight, and tokens (prompt
//! and completion) over the last 60 seconds. A request over a limit is refused with how long to
//! wait before trying again (the HTTP `Retry-After`).
//!
//! The use is kept by key id, so it carries over when the keys file is read again. Tokens are
//! known only when a request ends, so a key may go over its tokens per minute by one request's
//! worth; the next ones wait until the window has room.
//!
//! Does not own: which key sent a request (`keys.rs`), the answer's shape (`chat.rs`).

use super::keys::Caller;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

/// Why a key's request is refused, and when to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OverLimit {
    /// `max_parallel_requests` of its requests are in flight.
    Parallel { limit: u32 },
    /// `tokens_per_minute` tokens were used in the last minute.
    Tokens { limit: u64, retry_after_secs: u64 },
}

impl OverLimit {
    /// Whole seconds to wait, at least 1.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        match self {
            OverLimit::Parallel { .. } => 1,
            OverLimit::Tokens {
                retry_after_secs, ..
            } => *retry_after_secs,
        }
    }
}

#[derive(Debug, Default)]
struct Usage {
    in_flight: u32,
    /// When tokens were used, oldest first, within the window.
    tokens: VecDeque<(Instant, u64)>,
}

impl Usage {
    fn forget_old(&mut self, now: Instant) {
        while self
            .tokens
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) >= WINDOW)
        {
            self.tokens.pop_front();
        }
    }
}

/// Every key's use.
#[derive(Debug, Default)]
pub(crate) struct Usages {
    by_key: Mutex<HashMap<String, Usage>>,
}

impl Usages {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Usage>> {
        // The critical sections below cannot panic; a poisoned map is still consistent.
        self.by_key.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count a request of `caller` in, if its limits allow; the slot is given back when the
    /// returned [`Held`] is dropped.
    pub(crate) fn admit(self: &Arc<Self>, caller: &Caller) -> Result<Held, OverLimit> {
        let now = Instant::now();
        let mut map = self.lock();
        let usage = map.entry(caller.id.clone()).or_default();
        if let Some(limit) = caller.limits.max_parallel_requests {
            if usage.in_flight >= limit {
                return Err(OverLimit::Parallel { limit });
            }
        }
        if let Some(limit) = caller.limits.tokens_per_minute {
            usage.forget_old(now);
            let used: u64 = usage.tokens.iter().map(|(_, n)| n).sum();
            if used >= limit {
                // Room comes back as the oldest uses leave the window.
                let mut left = used;
                let mut wait = WINDOW;
                for (at, n) in &usage.tokens {
                    left -= n;
                    if left < limit {
                        wait = WINDOW.saturating_sub(now.duration_since(*at));
                        break;
                    }
                }
                return Err(OverLimit::Tokens {
                    limit,
                    retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
                });
            }
        }
        usage.in_flight += 1;
        Ok(Held {
            usages: self.clone(),
            key: caller.id.clone(),
        })
    }

    fn used(&self, key: &str, tokens: u64) {
        if tokens == 0 {
            return;
        }
        let mut map = self.lock();
        let usage = map.entry(key.to_string()).or_default();
        usage.tokens.push_back((Instant::now(), tokens));
    }

    fn release(&self, key: &str) {
        if let Some(u) = self.lock().get_mut(key) {
            u.in_flight = u.in_flight.saturating_sub(1);
        }
    }
}

/// A request counted in its key's use; dropping it ends the request.
pub(crate) struct Held {
    usages: Arc<Usages>,
    key: String,
}

impl Held {
    /// The request used `tokens` (prompt and completion).
    pub(crate) fn used(&self, tokens: u64) {
        self.usages.used(&self.key, tokens);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.usages.release(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::keys::Limits;

    fn caller(parallel: Option<u32>, tpm: Option<u64>) -> Caller {
        Caller {
            id: "k".into(),
            limits: Limits {
                max_parallel_requests: parallel,
                tokens_per_minute: tpm,
            },
            priority: 0,
            role: crate::serve::keys::Role::User,
        }
    }

    #[test]
    fn parallel_requests_are_bounded_and_given_back() {
        let u = Arc::new(Usages::default());
        let c = caller(Some(2), None);
        let a = u.admit(&c).unwrap();
        let _b = u.admit(&c).unwrap();
        assert_eq!(u.admit(&c).err(), Some(OverLimit::Parallel { limit: 2 }));
        drop(a);
        assert!(u.admit(&c).is_ok());
    }

    #[test]
    fn tokens_per_minute_refuse_until_the_window_has_room() {
        let u = Arc::new(Usages::default());
        let c = caller(None, Some(100));
        let a = u.admit(&c).unwrap();
        a.used(60);
        drop(a);
        let b = u.admit(&c).unwrap();
        b.used(60);
        drop(b);
        match u.admit(&c) {
            Err(OverLimit::Tokens {
                limit,
                retry_after_secs,
            }) => {
                assert_eq!(limit, 100);
                assert!((1..=60).contains(&retry_after_secs), "{retry_after_secs}");
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        // Another key is not affected.
        let other = Caller {
            id: "other".into(),
            ..c
        };
        assert!(u.admit(&other).is_ok());
    }
}
