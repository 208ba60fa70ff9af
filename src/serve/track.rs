//! One chat request's accounting: its times and tokens in the metrics (under its key's id),
//! its tokens against its key's limits, and its audit line, each once, when it ends; a request
//! dropped before its end (the client went away) ends as `abort` (status 499, as proxies write
//! a closed client).
//!
//! Audit lines are appended with a plain file write from the request's task: one short line,
//! not worth a thread hop.
//!
//! Does not own: what the request is or how it is answered (`chat.rs`), the metric names
//! (`metrics.rs`), the line's format (`audit.rs`).

use super::audit::{AuditLog, AuditRecord};
use super::keys::Caller;
use super::limits::Held;
use super::metrics::Replica;
use super::{Rejection, Server};
use crate::engine::Generation;
use std::sync::Arc;
use std::time::Instant;

/// Status written for a request whose client went away.
const CLIENT_GONE: u16 = 499;

/// The start of a request's audit line (`None` when there is no audit trail).
pub(super) fn draft(
    server: &Server,
    request_id: &str,
    client: &str,
    session_id: Option<&str>,
) -> Option<AuditRecord> {
    server.audit.as_ref().map(|_| AuditRecord {
        request_id: request_id.to_string(),
        client: client.to_string(),
        session_id: session_id.map(str::to_string),
        ..AuditRecord::default()
    })
}

/// Complete and write an audit line; a failure is logged and counted, not hidden.
pub(super) fn write_line(
    server: &Server,
    record: Option<AuditRecord>,
    key: &str,
    status: u16,
    reason: &str,
    arrived: Instant,
) -> Option<AuditRecord> {
    let (Some(log), Some(mut r)) = (server.audit.as_ref(), record) else {
        return None;
    };
    r.ts = AuditLog::now();
    r.key_id = key.to_string();
    r.status = status;
    r.finish_reason = reason.to_string();
    r.duration_ms = arrived.elapsed().as_millis() as u64;
    if let Err(e) = log.write(&r) {
        server.metrics.audit_failed(key);
        tracing::error!(request_id = %r.request_id, "the audit line was not written: {e}");
    }
    Some(r)
}

/// A refused request's metrics and audit line.
pub(super) fn refused(
    server: &Server,
    record: Option<AuditRecord>,
    key: &str,
    why: Rejection,
    status: u16,
    arrived: Instant,
) {
    server.metrics.rejected(key, why);
    write_line(server, record, key, status, why.label(), arrived);
}

/// A taken request, until it ends.
pub(super) struct Tracking {
    server: Arc<Server>,
    key: String,
    /// The replica it went to (the metrics' `replica` label).
    replica: Replica,
    held: Held,
    record: Option<AuditRecord>,
    arrived: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
    ended: bool,
}

impl Tracking {
    /// Taken on replica `replica`: it waits (for a place, then for its first token).
    pub(super) fn new(
        server: Arc<Server>,
        caller: &Caller,
        replica: usize,
        held: Held,
        record: Option<AuditRecord>,
        arrived: Instant,
    ) -> Self {
        let replica = Replica(Some(replica));
        server.metrics.taken(&caller.id, replica);
        Self {
            server,
            key: caller.id.clone(),
            replica,
            held,
            record,
            arrived,
            first: None,
            last: None,
            ended: false,
        }
    }

    /// Before its first token, it moved to replica `to` (its own had failed).
    pub(super) fn moved(&mut self, to: usize) {
        self.server.metrics.left_waiting(&self.key, self.replica);
        self.replica = Replica(Some(to));
        self.server.metrics.taken(&self.key, self.replica);
    }

    /// A token came.
    pub(super) fn token(&mut self) {
        let now = Instant::now();
        match self.last {
            None => {
                self.first = Some(now);
                self.server
                    .metrics
                    .first_token(&self.key, self.replica, now - self.arrived);
            }
            Some(last) => self
                .server
                .metrics
                .next_token(&self.key, self.replica, now - last),
        }
        self.last = Some(now);
    }

    /// The engine refused it before any token: counted as refused, not as finished.
    pub(super) fn refused(mut self, why: Rejection, status: u16) {
        self.ended = true;
        self.server.metrics.left_waiting(&self.key, self.replica);
        refused(
            &self.server,
            self.record.take(),
            &self.key,
            why,
            status,
            self.arrived,
        );
    }

    /// It ended: `reason` as the metrics count it, `status` as the client got it, the
    /// generation's figures if it finished, and the tools its reply called.
    pub(super) fn end(
        &mut self,
        reason: &str,
        status: u16,
        g: Option<&Generation>,
        tool_names: Vec<String>,
    ) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let to_first = self.first.map(|f| f - self.arrived);
        self.server.metrics.ended(
            &self.key,
            self.replica,
            reason,
            self.arrived.elapsed(),
            to_first,
            g,
        );
        let mut record = self.record.take();
        if let Some(g) = g {
            let f = &g.figures;
            self.held
                .used((f.prompt_tokens + f.generated_tokens) as u64);
            if let Some(r) = record.as_mut() {
                r.prompt_tokens = f.prompt_tokens;
                r.completion_tokens = f.generated_tokens;
                r.cached_tokens = f.reused_tokens;
            }
        }
        if let Some(r) = record.as_mut() {
            r.tool_names = tool_names;
        }
        write_line(
            &self.server,
            record,
            &self.key,
            status,
            reason,
            self.arrived,
        );
    }
}

impl Drop for Tracking {
    fn drop(&mut self) {
        self.end("abort", CLIENT_GONE, None, Vec::new());
    }
}
