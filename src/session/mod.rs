//! Sessions on disk: the append-only JSONL log of every event (one line each, timestamped,
//! flushed and synced before the next), the session index, rebuilding the conversation from a
//! log for `resume`, and exporting trajectories. A process killed at any point leaves a log
//! whose every complete line is valid; a torn last line is ignored on reading.
//!
//! Layout of a session directory: `{id}.jsonl` (header line, then events) and `{id}.patch`
//! (the latest session patch, rewritten atomically after each turn that ran tools).

mod log;
mod rebuild;
mod time;
mod trajectory;

pub use log::{list_sessions, read_log, SessionError, SessionHeader, SessionLog, SessionSummary};
pub use rebuild::{rebuild, rebuild_messages, Rebuilt};
pub use time::now_rfc3339;
pub use trajectory::{trajectory, StepFigures, Trajectory};

/// A new session id: UTC time plus a random suffix, sortable by creation.
pub fn new_session_id() -> String {
    let stamp = now_rfc3339()
        .replace([':', '-'], "")
        .replace('T', "-")
        .chars()
        .take(15)
        .collect::<String>();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{stamp}-{:04x}", (nanos ^ std::process::id()) & 0xffff)
}
