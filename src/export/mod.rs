//! `lilypad export`: a recorded session as one file to read or share: Markdown, a
//! self-contained HTML page, or JSON of a documented structure (`docs/export.md`). Each holds
//! the task, the turns (reasoning folded), the tool calls with their results, each edit as a
//! diff, the final patch and the provenance.
//!
//! Owns: reading a session's log and saved patch into a [`document::Document`], and drawing
//! it in each format. Does not own: finding the session (`crate::launch::resume::find` picks
//! it by id or as the newest), the log format (`crate::session`), or highlighting
//! (`crate::diff`).

pub mod document;
mod edits;
mod html;
mod markdown;
mod rich;

pub use document::{Document, FORMAT_VERSION};

use crate::protocol::{FinishReason, Resolution};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The formats a session exports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
    Json,
}

#[derive(Debug, Error)]
pub enum ExportError {
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    #[error("cannot read the session patch {path}: {source}")]
    Patch {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the export as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The session whose log is at `log`, as a document.
pub fn read(log: &Path) -> Result<Document, ExportError> {
    let (header, events) = crate::session::read_log(log)?;
    let events: Vec<_> = events.into_iter().map(|(_, e)| e).collect();
    let path = log.with_extension("patch");
    let patch = match std::fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(ExportError::Patch { path, source }),
    };
    Ok(document::build(&header, &events, patch))
}

/// `doc` in `format`.
pub fn render(doc: &Document, format: Format) -> Result<String, ExportError> {
    Ok(match format {
        Format::Markdown => markdown::render(doc),
        Format::Html => html::render(doc),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(doc)?;
            s.push('\n');
            s
        }
    })
}

/// Said where a session has no saved patch: the recorder saves one after each call that may
/// change files, so none means no such call finished, or the save failed (logged then).
const NO_PATCH: &str = "No session patch was saved with this session.";

/// How a task ended, in words.
fn finish_text(f: &FinishReason) -> &'static str {
    match f {
        FinishReason::Answered => "answered",
        FinishReason::TokenCap => "a turn hit the token cap",
        FinishReason::StepLimit => "step limit reached",
        FinishReason::ContextLimit => "context limit reached",
        FinishReason::TimeLimit => "time limit reached",
        FinishReason::Interrupted => "interrupted",
        FinishReason::Error => "stopped by an error",
    }
}

/// How a call was decided, in words.
fn resolution_text(r: Resolution) -> String {
    match serde_json::to_value(r) {
        Ok(serde_json::Value::String(s)) => s.replace('_', " "),
        _ => format!("{r:?}").to_lowercase(),
    }
}

/// A decided change's mark and words (`✓ approved`), and whether it went ahead.
fn decision_mark(r: Option<Resolution>) -> (&'static str, bool) {
    match r {
        Some(Resolution::Rejected) => ("✗ rejected", false),
        Some(Resolution::Edited) => ("✓ applied with the person's edits", true),
        _ => ("✓ approved", true),
    }
}

/// The final answer when the last turn's text does not already show it.
fn separate_answer(doc: &Document) -> Option<&str> {
    let answer = doc.final_answer.as_deref()?;
    let last = doc.turns.last().map(|t| t.content.trim());
    (last != Some(answer.trim())).then_some(answer)
}

/// A call's arguments, pretty JSON.
fn arguments_json(call: &document::Call) -> String {
    serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|e| format!("({e})"))
}

/// The provenance and the project instructions' hashes, pretty JSON.
fn provenance_json(doc: &Document) -> String {
    let v = serde_json::json!({
        "provenance": doc.provenance,
        "project_docs": doc.project_docs,
    });
    serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("({e})"))
}
