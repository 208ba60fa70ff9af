//! The check command (`--check CMD`, `[sandbox] check`): run in an attempt's sandbox after
//! the agent has finished and its patch has been taken, so that what the check writes (test
//! caches, build outputs) never enters the patch. Its exit status says whether the attempt
//! passed; the last bytes of its output (stdout and stderr interleaved as they came) are kept.
//! Owns running it and its recorded outcome; not where it comes from (`crate::cli`) or when
//! it runs (a batch after each attempt, the interface's attempts after each task).

use crate::sandbox::{ExecExit, ExecRequest, Sandbox, SandboxError, SandboxExt};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Bytes of the check's output kept (its end).
pub const TAIL_BYTES: usize = 4096;

/// How long a check may run when the settings give no longest command time.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(3600);

/// What to run after the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSpec {
    /// Shell command text, run in the sandbox's working directory.
    pub command: String,
    /// Longest it may run.
    pub timeout: Duration,
}

impl CheckSpec {
    /// `--check CMD`, else `[sandbox] check`, limited to the longest command time.
    pub fn from_settings(
        flag: Option<&str>,
        settings: &crate::sandbox::SandboxSettings,
    ) -> Option<Self> {
        let command = flag
            .map(str::to_string)
            .or_else(|| settings.check.clone())?;
        Some(Self {
            command,
            timeout: settings
                .max_command_timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(DEFAULT_CHECK_TIMEOUT),
        })
    }
}

/// How the check went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// Exit status 0 within the time limit.
    pub passed: bool,
    /// The exit status (absent when it timed out).
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    /// The last [`TAIL_BYTES`] bytes of its output (lossy UTF-8).
    pub output_tail: String,
    pub seconds: f64,
}

/// Run `check` in `sandbox`.
pub async fn run_check(
    sandbox: &dyn Sandbox,
    check: &CheckSpec,
) -> Result<CheckOutcome, SandboxError> {
    let (tx, mut rx) =
        tokio::sync::mpsc::unbounded_channel::<crate::sandbox::output::OutputChunk>();
    // The output is gathered beside the command in the same task (no spawned task whose
    // failure would lose it); the channel closes when the command's request is dropped.
    let collect = async move {
        let mut tail = Tail::default();
        while let Some(chunk) = rx.recv().await {
            tail.push(&chunk.data);
        }
        tail
    };
    let run = sandbox.exec(ExecRequest {
        command: check.command.clone(),
        cwd: sandbox.workdir().to_string(),
        timeout: check.timeout,
        keep_bytes: TAIL_BYTES,
        stream: Some(tx),
    });
    let (out, mut tail) = tokio::join!(run, collect);
    let out = out?;
    if tail.0.is_empty() {
        // A sandbox that does not stream: what it kept of each stream.
        tail.push(&out.stdout.head);
        tail.push(&out.stderr.head);
    }
    let exit_code = match out.exit {
        ExecExit::Exited(c) => Some(c),
        ExecExit::TimedOut => None,
    };
    Ok(CheckOutcome {
        passed: exit_code == Some(0),
        exit_code,
        timed_out: exit_code.is_none(),
        output_tail: String::from_utf8_lossy(&tail.0).into_owned(),
        seconds: out.elapsed.as_secs_f64(),
    })
}

/// The last [`TAIL_BYTES`] bytes seen.
#[derive(Debug, Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.0.extend_from_slice(data);
        if self.0.len() > TAIL_BYTES {
            let cut = self.0.len() - TAIL_BYTES;
            self.0.drain(..cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes() {
        let mut t = Tail::default();
        t.push(&vec![b'a'; TAIL_BYTES]);
        t.push(b"end");
        assert_eq!(t.0.len(), TAIL_BYTES);
        assert!(t.0.ends_with(b"aend"));
    }
}
