//! Write and Edit as two steps: a [`ProposedChange`] (path, text before, text after) that the
//! agent can hold for approval, then [`apply`] of the approved text.
//!
//! Invariants: `apply` writes exactly the approved text (converted to the file's line endings)
//! and nothing else; it writes nothing if the file changed (or appeared, or its path now
//! resolves elsewhere) since the proposal. Texts in a proposal use `\n` line endings; a file
//! that used `\r\n` gets them back when written. Binary files are never edited.

use super::args::Args;
use super::files::{expect_file, is_binary};
use super::format::Failure;
use super::paths;
use crate::sandbox::{EntryKind, Sandbox};
use serde::{Deserialize, Serialize};

/// Which tool proposed a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeTool {
    Write,
    Edit,
}

/// What the file held when the change was proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Before {
    /// No file there: the change creates it.
    New,
    /// A text file (line endings normalised to `\n`).
    Text(String),
    /// A binary file of this many bytes (only Write may replace it).
    Binary(u64),
}

/// A file's line-ending convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LineEnding {
    Lf,
    CrLf,
}

impl LineEnding {
    /// `\r\n` when most line breaks of `text` are `\r\n`.
    pub fn detect(text: &str) -> Self {
        let crlf = text.matches("\r\n").count();
        let lf = text.matches('\n').count();
        if crlf > 0 && crlf * 2 >= lf {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        }
    }

    /// `text` with `\n` line breaks turned into this convention.
    pub fn apply(self, text: &str) -> String {
        match self {
            LineEnding::Lf => text.to_string(),
            LineEnding::CrLf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
        }
    }
}

/// A change to one file, waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedChange {
    /// The tool call that proposed it.
    pub call_id: String,
    pub tool: ChangeTool,
    /// Canonical sandbox path.
    pub path: String,
    /// The path as results show it (relative to the workdir).
    pub shown_path: String,
    pub before: Before,
    /// The proposed new content (`\n` line endings when the file uses `\r\n`).
    pub new_text: String,
    pub line_ending: LineEnding,
    /// Occurrences an Edit replaced (1 for Write).
    pub replacements: usize,
    /// Length and FNV-1a hash of the bytes on disk at proposal time; `None`: no file.
    pub fingerprint: Option<(u64, u64)>,
}

fn fingerprint(bytes: &[u8]) -> (u64, u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (bytes.len() as u64, h)
}

pub(crate) async fn propose_write(
    sb: &dyn Sandbox,
    call_id: &str,
    a: &Args<'_>,
) -> Result<ProposedChange, Failure> {
    let raw = a.file_path()?;
    let content = a.text("content")?;
    let t = paths::resolve(sb, &raw).await?;
    let (before, line_ending, fp) = match t.kind {
        EntryKind::Missing => (Before::New, LineEnding::Lf, None),
        EntryKind::Dir => {
            return Err(Failure::new(
                "IsADirectoryError",
                format!("[Errno 21] Is a directory: '{}'", t.shown),
            ))
        }
        EntryKind::File | EntryKind::Other => {
            let bytes = sb
                .read(&t.path)
                .await
                .map_err(|e| Failure::from_sandbox(&e, &t.shown))?;
            let fp = Some(fingerprint(&bytes));
            match std::str::from_utf8(&bytes) {
                Ok(s) if !is_binary(&bytes) => {
                    let le = LineEnding::detect(s);
                    (Before::Text(s.replace("\r\n", "\n")), le, fp)
                }
                _ => (Before::Binary(bytes.len() as u64), LineEnding::Lf, fp),
            }
        }
    };
    let new_text = match line_ending {
        LineEnding::CrLf => content.replace("\r\n", "\n"),
        LineEnding::Lf => content,
    };
    Ok(ProposedChange {
        call_id: call_id.into(),
        tool: ChangeTool::Write,
        path: t.path,
        shown_path: t.shown,
        before,
        new_text,
        line_ending,
        replacements: 1,
        fingerprint: fp,
    })
}

pub(crate) async fn propose_edit(
    sb: &dyn Sandbox,
    call_id: &str,
    a: &Args<'_>,
) -> Result<ProposedChange, Failure> {
    let raw = a.file_path()?;
    let old = a.string("old_string")?.unwrap_or_default();
    if old.is_empty() {
        return Err(Failure::value("old_string must be non-empty".into()));
    }
    let new = a.text("new_string")?;
    let replace_all = a.truthy("replace_all");
    let t = paths::resolve(sb, &raw).await?;
    expect_file(&t)?;
    let bytes = sb
        .read(&t.path)
        .await
        .map_err(|e| Failure::from_sandbox(&e, &t.shown))?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(s) if !is_binary(&bytes) => s,
        _ => {
            return Err(Failure::value(format!(
                "'{}' is a binary file; Edit only changes text files",
                t.shown
            )))
        }
    };
    let line_ending = LineEnding::detect(text);
    let (body, old, new) = match line_ending {
        LineEnding::CrLf => (
            text.replace("\r\n", "\n"),
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
        ),
        LineEnding::Lf => (text.to_string(), old, new),
    };
    let n = body.matches(old.as_str()).count();
    if n == 0 {
        return Err(Failure::value("old_string was not found".into()));
    }
    if n > 1 && !replace_all {
        return Err(Failure::value(format!(
            "old_string matched {n} times; set replace_all=true or use a more specific old_string"
        )));
    }
    let new_text = if replace_all {
        body.replace(old.as_str(), &new)
    } else {
        body.replacen(old.as_str(), &new, 1)
    };
    Ok(ProposedChange {
        call_id: call_id.into(),
        tool: ChangeTool::Edit,
        path: t.path,
        shown_path: t.shown,
        before: Before::Text(body),
        new_text,
        line_ending,
        replacements: if replace_all { n } else { 1 },
        fingerprint: Some(fingerprint(&bytes)),
    })
}

pub(crate) async fn apply(
    sb: &dyn Sandbox,
    change: &ProposedChange,
    approved: &str,
) -> Result<String, Failure> {
    let shown = &change.shown_path;
    let changed = || {
        Failure::new(
            "RuntimeError",
            format!(
                "'{shown}' changed since this change was proposed; nothing was written. \
                 Read it again and redo the change."
            ),
        )
    };
    let now = sb
        .resolve(&change.path)
        .await
        .map_err(|e| Failure::from_sandbox(&e, shown))?;
    if paths::normalize(&now.path) != change.path {
        return Err(changed());
    }
    let current = match now.kind {
        EntryKind::Missing => None,
        EntryKind::Dir => return Err(changed()),
        _ => Some(fingerprint(
            &sb.read(&change.path)
                .await
                .map_err(|e| Failure::from_sandbox(&e, shown))?,
        )),
    };
    if current != change.fingerprint {
        return Err(changed());
    }
    let data = change.line_ending.apply(approved);
    sb.write(&change.path, data.as_bytes())
        .await
        .map_err(|e| Failure::from_sandbox(&e, shown))?;
    Ok(match change.tool {
        ChangeTool::Write => format!("Wrote {shown} ({} bytes).", approved.chars().count()),
        ChangeTool::Edit if change.replacements == 1 => format!("Edited {shown} (1 replacement)."),
        ChangeTool::Edit => format!("Edited {shown} ({} replacements).", change.replacements),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_round_trip() {
        assert_eq!(LineEnding::detect("a\r\nb\r\n"), LineEnding::CrLf);
        assert_eq!(LineEnding::detect("a\nb\n"), LineEnding::Lf);
        assert_eq!(LineEnding::CrLf.apply("a\nb\r\n"), "a\r\nb\r\n");
    }
}
