//! The check command of an attempt (`--check "python -m pytest -q"`, or `[sandbox] check`):
//! run in the attempt's own sandbox once its task has finished, its exit status saying
//! whether the attempt passed. Owns running it and keeping its output's tail; does not own
//! when it runs (the callers decide) or how the result is shown.

use crate::sandbox::{ExecExit, ExecRequest, Sandbox, SandboxError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Bytes of the check's output kept (its tail): enough for a test runner's summary.
pub const CHECK_OUTPUT_BYTES: usize = 4096;

/// How long a check may run unless the settings give the longest command time.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(1800);

/// Bytes of each stream read before the tail is taken (the sandbox keeps a stream's head).
const KEEP_BYTES: usize = 1 << 20;

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    pub command: String,
    /// Exit status 0.
    pub passed: bool,
    /// The exit status; `None` when it was killed at the timeout.
    pub exit_code: Option<i64>,
    /// The tail of stdout then stderr.
    pub output: String,
    pub seconds: f64,
}

/// Run `command` in `sandbox`'s working directory, killed after `timeout`.
pub async fn run_check(
    sandbox: &dyn Sandbox,
    command: &str,
    timeout: Duration,
) -> Result<CheckOutcome, SandboxError> {
    let out = sandbox
        .exec(ExecRequest {
            command: command.to_string(),
            cwd: sandbox.workdir().to_string(),
            timeout,
            keep_bytes: KEEP_BYTES,
            stream: None,
        })
        .await?;
    let mut text = String::from_utf8_lossy(&out.stdout.head).into_owned();
    let err = String::from_utf8_lossy(&out.stderr.head);
    if !err.trim().is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&err);
    }
    let exit_code = match out.exit {
        ExecExit::Exited(c) => Some(c),
        ExecExit::TimedOut => None,
    };
    if exit_code.is_none() {
        text.push_str(&format!("\n(killed after {} s)", timeout.as_secs()));
    }
    Ok(CheckOutcome {
        command: command.to_string(),
        passed: exit_code == Some(0),
        exit_code,
        output: tail(&text, CHECK_OUTPUT_BYTES),
        seconds: out.elapsed.as_secs_f64(),
    })
}

/// The last `max` bytes of `text`, cut at a character boundary.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end_at_a_character_boundary() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aéb", 2), "b");
    }
}
