//! The audit trail of `lilypad serve` (`--audit DIR`, `[serve] audit_dir`): one JSON line per
//! request in `DIR/YYYY-MM-DD.jsonl`, by the UTC day the request ended, so that files
//! rotate by day. With `audit_retention_days`, files of days older than that are removed when
//! the first line of a new day is written (and at start).
//!
//! A line holds who asked and what it cost, not what was said: `ts`, `request_id`, `endpoint`
//! (every endpoint behind the door leaves one, see `door.rs`), `key_id`,
//! `client` (the peer address), `session_id` (the client's `X-Session-ID`, if sent), `status` (the HTTP status), `prompt_sha256` (the SHA-256 of
//! the request's messages as the server read them, in JSON), `prompt_tokens`,
//! `completion_tokens`, `cached_tokens`, `finish_reason`, `tool_names` (the tools the reply
//! called) and `duration_ms`. With `--audit-content` (`[serve] audit_content`) it also holds
//! the `messages`. A weight update also holds `model_path` and `weight_version`.
//!
//! Invariant: a line that cannot be written is an error to the caller (`chat.rs` logs it and
//! counts it in `lilypad:audit_write_failures`); nothing is written in its place.
//!
//! Does not own: when a request ends or what it cost (`chat.rs`), the date arithmetic
//! (`crate::session::format_unix_millis`).

use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};
use thiserror::Error;

/// Errors of the audit trail.
#[derive(Debug, Error)]
pub enum AuditError {
    #[error("cannot create the audit directory {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the audit file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode an audit line: {0}")]
    Encode(#[from] serde_json::Error),
}

/// One request's line.
#[derive(Debug, Clone, Serialize, Default)]
pub struct AuditRecord {
    pub ts: String,
    pub request_id: String,
    /// The endpoint asked (`chat_completions`, `completions`, `tokenize`, `update_weights`, ...).
    pub endpoint: String,
    pub key_id: String,
    pub client: String,
    pub session_id: Option<String>,
    pub status: u16,
    pub prompt_sha256: Option<String>,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub cached_tokens: usize,
    pub finish_reason: String,
    pub tool_names: Vec<String>,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Value>,
    /// An operator's weight update: the file asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_path: Option<String>,
    /// An operator's weight update: the version named (in force when `status` is 200).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_version: Option<String>,
}

/// Where the lines go.
pub struct AuditLog {
    dir: PathBuf,
    content: bool,
    retention_days: Option<u32>,
    /// The day of the last line written (a new one sweeps old files), and the write lock.
    day: Mutex<String>,
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        // A clock before 1970 is written as 1970.
        .unwrap_or(0)
}

impl AuditLog {
    /// A trail in `dir` (created if missing); `content`: lines hold the messages too.
    pub fn new(dir: &Path, content: bool, retention_days: Option<u32>) -> Result<Self, AuditError> {
        std::fs::create_dir_all(dir).map_err(|source| AuditError::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
        let log = Self {
            dir: dir.to_path_buf(),
            content,
            retention_days,
            day: Mutex::new(String::new()),
        };
        log.sweep(now_millis());
        Ok(log)
    }

    /// Whether lines hold the messages.
    pub fn content(&self) -> bool {
        self.content
    }

    /// Now, as a line's `ts`.
    pub fn now() -> String {
        crate::session::format_unix_millis(now_millis())
    }

    /// Append `record` to the file of its day (`record.ts`'s date).
    pub fn write(&self, record: &AuditRecord) -> Result<(), AuditError> {
        let mut line = serde_json::to_string(record)?;
        line.push('\n');
        let day = record.ts.get(..10).unwrap_or("unknown-day");
        let path = self.dir.join(format!("{day}.jsonl"));
        let mut last = self.day.lock().unwrap_or_else(|p| p.into_inner());
        if *last != day {
            *last = day.to_string();
            self.sweep(now_millis());
        }
        let write = |path: &Path| -> std::io::Result<()> {
            let mut options = std::fs::OpenOptions::new();
            options.create(true).append(true);
            // Lines name who asked what (and with --audit-content, the messages): readable by
            // the server's user only.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut f = options.open(path)?;
            // One write of the whole line, so that lines never interleave.
            f.write_all(line.as_bytes())
        };
        write(&path).map_err(|source| AuditError::Write { path, source })
    }

    /// Remove day files older than the retention (failures are logged: they do not stop a
    /// request).
    fn sweep(&self, now_ms: i64) {
        let Some(days) = self.retention_days else {
            return;
        };
        let cutoff_ms = now_ms - i64::from(days) * 86_400_000;
        let cutoff = crate::session::format_unix_millis(cutoff_ms);
        let cutoff = &cutoff[..10];
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(
                    "cannot list the audit directory {}: {e}",
                    self.dir.display()
                );
                return;
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(day) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            // Only files named as this module names them: YYYY-MM-DD.jsonl.
            if !is_day(day) || day >= cutoff {
                continue;
            }
            if let Err(e) = std::fs::remove_file(entry.path()) {
                tracing::warn!(
                    "cannot remove the old audit file {}: {e}",
                    entry.path().display()
                );
            }
        }
    }
}

fn is_day(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_go_to_their_days_file_and_old_days_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("2001-01-01.jsonl"), "{}\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "keep").unwrap();
        let log = AuditLog::new(dir.path(), false, Some(30)).unwrap();
        assert!(!dir.path().join("2001-01-01.jsonl").exists());
        assert!(dir.path().join("notes.txt").exists());
        let mut r = AuditRecord {
            ts: AuditLog::now(),
            request_id: "r1".into(),
            key_id: "a".into(),
            finish_reason: "stop".into(),
            ..Default::default()
        };
        log.write(&r).unwrap();
        r.request_id = "r2".into();
        log.write(&r).unwrap();
        let day = dir.path().join(format!("{}.jsonl", &r.ts[..10]));
        let text = std::fs::read_to_string(&day).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["request_id"].to_string())
            .collect();
        assert_eq!(ids, ["\"r1\"", "\"r2\""]);
        assert!(!text.contains("messages"), "no content unless asked");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&day).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
    }

    #[test]
    fn a_line_that_cannot_be_written_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(&dir.path().join("audit"), false, None).unwrap();
        std::fs::remove_dir(dir.path().join("audit")).unwrap();
        std::fs::write(dir.path().join("audit"), "not a directory").unwrap();
        let r = AuditRecord {
            ts: AuditLog::now(),
            ..Default::default()
        };
        let e = log.write(&r).unwrap_err().to_string();
        assert!(e.contains("cannot write the audit file"), "{e}");
    }
}
