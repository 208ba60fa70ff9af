//! The exported form of a session (`lilypad export --format json` prints it as it is; the
//! Markdown and HTML pages are drawn from it): the task, each model turn with its reasoning,
//! text and tool calls, each call's result, an edit's change as a unified diff, the final
//! patch and the provenance. `docs/export.md` documents the fields.
//!
//! Owns: building it from a session's header and events. Does not own: reading the log
//! (`crate::session`), or drawing it (`super::markdown`, `super::html`).

use crate::protocol::{ApprovalKind, Event, FinishReason, Message, RecordedComment, Resolution};
use crate::session::{ProjectDocRecord, Provenance, SessionHeader};
use serde::Serialize;
use std::collections::HashMap;

/// The version of this structure; it changes when a field changes meaning or goes away.
pub const FORMAT_VERSION: u32 = 1;

/// A session, exported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    pub format_version: u32,
    pub session_id: String,
    pub created: String,
    pub repo: String,
    /// How the model was reached (`llama:PATH`, `script:PATH`, `remote:URL`).
    pub engine: String,
    pub task: String,
    /// The project instructions files the first message started with, with their hashes.
    pub project_docs: Vec<ProjectDocRecord>,
    /// The messages from the person, in order (the first is the task as the model read it).
    pub messages: Vec<PersonMessage>,
    pub turns: Vec<Turn>,
    /// How the last task ended (`answered`, `step_limit`, ...), if it did.
    pub finish: Option<FinishReason>,
    /// The final answer, if the last task gave one.
    pub final_answer: Option<String>,
    /// Review comments the person kept without sending them to the model (the session
    /// review's "comment" end), in the order they were recorded.
    pub review_comments: Vec<RecordedComment>,
    /// The session patch as saved beside the log (`git diff` form); `None` when none was saved.
    pub patch: Option<String>,
    pub provenance: Option<Provenance>,
}

/// A message from the person, and the turn it came before.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PersonMessage {
    /// The model turns before it (0 for the task).
    pub after_turn: usize,
    pub text: String,
}

/// One model turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// 1-based.
    pub number: usize,
    pub reasoning: Option<String>,
    pub content: String,
    pub calls: Vec<Call>,
}

/// One tool call and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The result as the model read it (`None`: the session stopped before it had one).
    pub result: Option<String>,
    /// How it was decided (`auto`, `approved`, `denied`, `edited`, ...), when recorded.
    pub resolution: Option<Resolution>,
    /// For Write and Edit: the change as a unified diff. When the change was put to the
    /// person, the log holds the whole file before and after, and the diff is of the file
    /// (its own line numbers); otherwise of the call's arguments (the new text of a Write, the
    /// replaced text of an Edit, numbered from 1).
    pub diff: Option<String>,
    /// Whether `diff` is of the whole file, with its own line numbers.
    pub diff_of_file: bool,
    /// The file before and after, when the change was put to the person (for drawing the
    /// diff again with colours; not exported, the diff is).
    #[serde(skip)]
    pub(super) file: Option<FileText>,
}

/// A file as a reviewed change found it and left it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FileText {
    pub(super) path: String,
    pub(super) before: Option<String>,
    pub(super) after: String,
}

impl Call {
    /// The call's change with colours: of the file when the log holds it, else of the
    /// call's arguments; `None` for calls that change no file.
    pub(super) fn file_diff(&self) -> Option<crate::diff::FileDiff> {
        match &self.file {
            Some(f) => Some(crate::diff::FileDiff::compute(
                &f.path,
                f.before.as_deref(),
                &f.after,
            )),
            None => super::edits::file_diff(&self.name, &self.arguments),
        }
    }

    /// Whether the person decided this call (rather than the policy, or nobody).
    pub fn reviewed(&self) -> bool {
        matches!(
            self.resolution,
            Some(Resolution::Approved | Resolution::Edited | Resolution::Rejected)
        )
    }
}

/// Build the document from a session's header, events and saved patch.
pub fn build(header: &SessionHeader, events: &[Event], patch: Option<String>) -> Document {
    let messages = crate::session::rebuild_messages(&header.system_prompt, events);
    let resolutions: HashMap<&str, Resolution> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult {
                call_id,
                resolution,
                ..
            } => Some((call_id.as_str(), *resolution)),
            _ => None,
        })
        .collect();
    let files: HashMap<&str, FileText> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested(req) => match &req.kind {
                ApprovalKind::Change {
                    path,
                    before,
                    after,
                    binary_before: false,
                } => Some((
                    req.call.id.as_str(),
                    FileText {
                        path: path.clone(),
                        before: before.clone(),
                        after: after.clone(),
                    },
                )),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let mut turns: Vec<Turn> = Vec::new();
    let mut person = Vec::new();
    for m in messages {
        match m {
            Message::System { .. } => {}
            Message::User { content } => person.push(PersonMessage {
                after_turn: turns.len(),
                text: content,
            }),
            Message::Assistant {
                reasoning_content,
                content,
                tool_calls,
            } => turns.push(Turn {
                number: turns.len() + 1,
                reasoning: reasoning_content.filter(|r| !r.trim().is_empty()),
                content,
                calls: tool_calls
                    .into_iter()
                    .map(|c| {
                        let mut call = Call {
                            diff: None,
                            diff_of_file: false,
                            file: files.get(c.id.as_str()).cloned(),
                            resolution: resolutions.get(c.id.as_str()).copied(),
                            id: c.id,
                            name: c.name,
                            arguments: c.arguments,
                            result: None,
                        };
                        call.diff = call.file_diff().map(|d| super::edits::unified(&d));
                        call.diff_of_file = call.diff.is_some() && call.file.is_some();
                        call
                    })
                    .collect(),
            }),
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let call = turns
                    .iter_mut()
                    .rev()
                    .flat_map(|t| t.calls.iter_mut())
                    .find(|c| {
                        c.result.is_none() && tool_call_id.as_deref().is_none_or(|id| id == c.id)
                    });
                if let Some(c) = call {
                    c.result = Some(content);
                }
            }
        }
    }
    let (finish, final_answer) = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::TaskFinished {
                reason,
                final_answer,
            } => Some((Some(*reason), final_answer.clone())),
            _ => None,
        })
        .unwrap_or((None, None));
    Document {
        format_version: FORMAT_VERSION,
        session_id: header.session_id.clone(),
        created: header.created.clone(),
        repo: header.repo.display().to_string(),
        engine: header.engine.clone(),
        task: header.task.clone(),
        project_docs: header.project_docs.clone(),
        messages: person,
        turns,
        finish,
        final_answer,
        review_comments: events
            .iter()
            .filter_map(|e| match e {
                Event::CommentsRecorded { comments } => Some(comments.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect(),
        patch,
        provenance: header.provenance.clone(),
    }
}
