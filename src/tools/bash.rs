//! Bash: run a command in the workdir through the sandbox, and format
//! `Exit code: {rc}\nSTDOUT:\n{out}\nSTDERR:\n{err}` (or `Timed out after {t:.1f}s...`),
//! capped at the limit as if the whole output had been kept.

use super::args::Args;
use super::format::{cut_with_total, Failure};
use super::{CommandRequest, ToolLimits};
use crate::sandbox::output::count_chars;
use crate::sandbox::{Captured, ExecExit, ExecRequest, OutputChunk, Sandbox, SandboxExt};
use std::time::Duration;

/// Timeouts above this are taken as milliseconds.
const MS_THRESHOLD: f64 = 1000.0;

pub(crate) fn request(a: &Args<'_>, lim: &ToolLimits) -> Result<CommandRequest, Failure> {
    let command = a.required("command")?;
    let secs = match (a.number("timeout")?, a.number("timeout_ms")?) {
        (Some(t), _) if t > MS_THRESHOLD => Some(t / 1000.0),
        (Some(t), _) if t > 0.0 => Some(t),
        (_, Some(ms)) if ms > 0.0 => Some(ms / 1000.0),
        _ => None,
    };
    let timeout = secs
        .map(Duration::from_secs_f64)
        .unwrap_or(lim.default_timeout)
        .min(lim.max_timeout);
    Ok(CommandRequest {
        command,
        description: a.string("description")?.filter(|d| !d.is_empty()),
        timeout,
    })
}

pub(crate) async fn run(
    sb: &dyn Sandbox,
    a: &Args<'_>,
    lim: &ToolLimits,
    live: Option<tokio::sync::mpsc::UnboundedSender<OutputChunk>>,
) -> Result<String, Failure> {
    let req = request(a, lim)?;
    let out = sb
        .exec(ExecRequest {
            command: req.command,
            cwd: sb.workdir().to_string(),
            timeout: req.timeout,
            // Enough bytes for `bash_chars` characters of any width.
            keep_bytes: lim.bash_chars * 4 + 16,
            stream: live,
        })
        .await
        .map_err(|e| Failure::new("RuntimeError", format!("sandbox: {e}")))?;
    let head = match out.exit {
        ExecExit::Exited(rc) => format!("Exit code: {rc}"),
        ExecExit::TimedOut => format!("Timed out after {:.1}s", req.timeout.as_secs_f64()),
    };
    Ok(format_result(
        &head,
        &out.stdout,
        &out.stderr,
        lim.bash_chars,
    ))
}

/// `{head}\nSTDOUT:\n{out}\nSTDERR:\n{err}` capped at `cap` characters of the full text.
pub(crate) fn format_result(head: &str, out: &Captured, err: &Captured, cap: usize) -> String {
    let o = String::from_utf8_lossy(&out.head);
    let e = String::from_utf8_lossy(&err.head);
    let text = format!("{head}\nSTDOUT:\n{o}\nSTDERR:\n{e}");
    let total = count_chars(head.as_bytes()) + 18 + out.total_chars + err.total_chars;
    // Characters of the kept text (lossy decoding may differ slightly from the raw count).
    let kept = text.chars().count() as u64;
    let total = if out.truncated() || err.truncated() {
        total.max(kept)
    } else {
        kept
    };
    cut_with_total(&text, cap, total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cap(s: &str) -> Captured {
        Captured {
            head: s.as_bytes().to_vec(),
            total_bytes: s.len() as u64,
            total_chars: s.chars().count() as u64,
        }
    }

    #[test]
    fn format_and_cap() {
        assert_eq!(
            format_result("Exit code: 0", &cap("hi\n"), &cap(""), 100),
            "Exit code: 0\nSTDOUT:\nhi\n\nSTDERR:\n"
        );
        let long = Captured {
            head: b"abcdef".to_vec(),
            total_bytes: 1006,
            total_chars: 1006,
        };
        let r = format_result("Exit code: 0", &long, &cap("e"), 22);
        // 12 + 9 + 1006 + 9 + 1 = 1037 characters in all.
        assert_eq!(r, "Exit code: 0\nSTDOUT:\na\n[truncated 1015 chars]");
    }

    #[test]
    fn timeouts() {
        let lim = ToolLimits::default();
        let t = |v: serde_json::Value| {
            let m = v.as_object().unwrap().clone();
            request(&Args::new(&m), &lim).map(|r| r.timeout)
        };
        assert_eq!(
            t(json!({"command": "x"})).unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(
            t(json!({"command": "x", "timeout": 5})).unwrap(),
            Duration::from_secs(5)
        );
        assert_eq!(
            t(json!({"command": "x", "timeout": "2500"})).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            t(json!({"command": "x", "timeout_ms": 300})).unwrap(),
            Duration::from_millis(300)
        );
        assert_eq!(
            t(json!({"command": ""})).unwrap_err().to_string(),
            "ValueError: command is required"
        );
    }
}
