//! One generating request's accounting: its times and tokens in the metrics (under its key's
//! id), and its end, once, through its [`Admitted`] (the key's tokens, the request count and
//! the audit line); a request dropped before its end (the client went away) ends as `abort`
//! (status 499, as proxies write a closed client).
//!
//! Does not own: letting the request in or its audit line's format (`door.rs`, `audit.rs`),
//! what the request is or how it is answered (`chat.rs`, `completions.rs`), the metric names
//! (`metrics.rs`).

use super::door::{Admitted, CLIENT_GONE};
use super::metrics::Rejection;
use super::metrics::Replica;
use crate::engine::Figures;
use std::time::Instant;

/// A taken request, until it ends.
pub(super) struct Tracking {
    admitted: Admitted,
    /// The replica it went to (the metrics' `replica` label).
    replica: Replica,
    first: Option<Instant>,
    last: Option<Instant>,
    ended: bool,
}

impl Tracking {
    /// Taken on replica `replica`: it waits (for a place, then for its first token).
    pub(super) fn new(admitted: Admitted, replica: usize) -> Self {
        let replica = Replica(Some(replica));
        admitted
            .server()
            .metrics
            .taken(&admitted.caller.id, replica);
        Self {
            admitted,
            replica,
            first: None,
            last: None,
            ended: false,
        }
    }

    /// Before its first token, it moved to replica `to` (its own had failed).
    pub(super) fn moved(&mut self, to: usize) {
        let (m, key) = (&self.admitted.server().metrics, &self.admitted.caller.id);
        m.left_waiting(key, self.replica);
        self.replica = Replica(Some(to));
        m.taken(key, self.replica);
    }

    /// A token came.
    pub(super) fn token(&mut self) {
        let now = Instant::now();
        let (m, key) = (&self.admitted.server().metrics, &self.admitted.caller.id);
        match self.last {
            None => {
                self.first = Some(now);
                m.first_token(key, self.replica, now - self.admitted.arrived);
            }
            Some(last) => m.next_token(key, self.replica, now - last),
        }
        self.last = Some(now);
    }

    /// The engine refused it before any token: counted as refused, not as finished.
    pub(super) fn refused(mut self, why: Rejection, status: u16) {
        self.ended = true;
        let (m, key) = (&self.admitted.server().metrics, &self.admitted.caller.id);
        m.left_waiting(key, self.replica);
        self.admitted.refused(why, status);
    }

    /// It ended: `reason` as the metrics count it, `status` as the client got it, the
    /// request's figures if it finished (all its choices together), and the tools its reply
    /// called.
    pub(super) fn end(
        &mut self,
        reason: &str,
        status: u16,
        figures: Option<&Figures>,
        tool_names: Vec<String>,
    ) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let to_first = self.first.map(|f| f - self.admitted.arrived);
        self.admitted.server().metrics.ended(
            &self.admitted.caller.id,
            self.replica,
            reason,
            self.admitted.arrived.elapsed(),
            to_first,
            figures,
        );
        self.admitted.end(status, reason, figures, tool_names);
    }
}

impl Drop for Tracking {
    fn drop(&mut self) {
        self.end("abort", CLIENT_GONE, None, Vec::new());
    }
}
