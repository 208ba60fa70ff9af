//! Sessions on disk: the append-only JSONL log of every event (one line each, timestamped,
//! flushed and synced before the next), the session index, rebuilding the conversation from a
//! log for `resume`, and exporting trajectories. A process killed at any point leaves a log
//! whose every complete line is valid; a torn last line is ignored on reading.
//!
//! Layout of a session directory: `{id}.jsonl` (header line, then events) and `{id}.patch`
//! (the latest session patch, rewritten atomically after each turn that ran tools), and
//! `{id}.turns/{n}.patch`, the files of each recorded turn as a patch against the baseline,
//! which a rewind, a resume and `resume --at-turn` bring back.

mod log;
mod rebuild;
mod time;
mod trajectory;

pub use log::{
    list_sessions, read_log, read_turn_patches, turns_dir, ModelIdentity, ProjectDocRecord,
    Provenance, RunLimits, SessionError, SessionHeader, SessionLog, SessionSummary,
};
pub use rebuild::{rebuild, rebuild_at, rebuild_messages, Rebuilt};
pub use time::{format_unix_millis, now_rfc3339};
pub use trajectory::{trajectory, StepFigures, Trajectory};

/// A new session id: UTC time plus a suffix, sortable by creation. The suffix is a per-process
/// random start plus a counter, so the sessions one process starts in the same second (the
/// tasks of `lilypad run --parallel`) never share an id; two processes share one only when
/// they start in the same second with the same 16-bit start.
pub fn new_session_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;
    static START: OnceLock<u32> = OnceLock::new();
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let stamp = now_rfc3339()
        .replace([':', '-'], "")
        .replace('T', "-")
        .chars()
        .take(15)
        .collect::<String>();
    let start = *START.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        nanos ^ std::process::id()
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{stamp}-{:04x}", start.wrapping_add(n) & 0xffff)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_started_together_differ() {
        let ids: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..100)
                            .map(|_| super::new_session_id())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        assert!(
            ids.iter().all(|i| i.len() == "20261202-055148-347e".len()),
            "{ids:?}"
        );
    }
}
