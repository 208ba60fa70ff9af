//! Result texts: the `{ErrorKind}: {message}` failure form (Python's kind names, as the model
//! was trained on), sandbox errors turned into it, and the character caps with their
//! `\n[truncated N chars]` suffix.

use crate::sandbox::SandboxError;

/// A failed call, shown to the model as `{kind}: {message}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub kind: &'static str,
    pub message: String,
}

impl Failure {
    pub(super) fn new(kind: &'static str, message: String) -> Self {
        Self { kind, message }
    }
    pub(super) fn value(message: String) -> Self {
        Self::new("ValueError", message)
    }

    /// A sandbox error about the file the model called `shown`.
    pub(super) fn from_sandbox(err: &SandboxError, shown: &str) -> Self {
        match err {
            SandboxError::NotFound { .. } => Self::new(
                "FileNotFoundError",
                format!("[Errno 2] No such file or directory: '{shown}'"),
            ),
            SandboxError::IsADirectory { .. } => Self::new(
                "IsADirectoryError",
                format!("[Errno 21] Is a directory: '{shown}'"),
            ),
            SandboxError::NotADirectory { .. } => Self::new(
                "NotADirectoryError",
                format!("[Errno 20] Not a directory: '{shown}'"),
            ),
            SandboxError::PermissionDenied { .. } => Self::new(
                "PermissionError",
                format!("[Errno 13] Permission denied: '{shown}'"),
            ),
            SandboxError::NoSpace { .. } => Self::new(
                "OSError",
                format!("[Errno 28] No space left on device: '{shown}'"),
            ),
            SandboxError::TooLarge { size, limit, .. } => Self::value(format!(
                "'{shown}' is too large ({size} bytes; the limit is {limit} bytes)"
            )),
            SandboxError::Io { op, source, .. } => {
                Self::new("OSError", format!("{op} '{shown}': {source}"))
            }
            other => Self::new("RuntimeError", format!("sandbox: {other}")),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// Cut `text` to `limit` characters, then append `\n[truncated N chars]` (N = characters cut).
pub fn cap_chars(text: String, limit: usize) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text;
    }
    cut_with_total(&text, limit, total as u64)
}

/// Like [`cap_chars`] when `text` is only the start of a longer text of `total` characters.
pub(crate) fn cut_with_total(text: &str, limit: usize, total: u64) -> String {
    if total <= limit as u64 {
        return text.to_string();
    }
    let end = text
        .char_indices()
        .nth(limit)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    format!(
        "{}\n[truncated {} chars]",
        &text[..end],
        total - limit as u64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_characters() {
        assert_eq!(cap_chars("héllo".into(), 5), "héllo");
        assert_eq!(cap_chars("héllo!".into(), 3), "hél\n[truncated 3 chars]");
    }

    #[test]
    fn sandbox_errors_name_the_path() {
        let e = SandboxError::NotFound {
            path: "/workspace/x".into(),
        };
        assert_eq!(
            Failure::from_sandbox(&e, "x").to_string(),
            "FileNotFoundError: [Errno 2] No such file or directory: 'x'"
        );
    }
}
