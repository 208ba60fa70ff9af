//! The state of what is in front of the transcript: a file change or a command waiting for a
//! decision, and the session patch waiting for apply / save / discard. Pure state and the
//! decisions it leads to; drawing is in `views`, key dispatch in `app::keys`.

use crate::diff::{apply_hunks, FileDiff};
use crate::protocol::{ApprovalKind, ApprovalRequest, ReviewDecision};
use crate::tui::text_input::TextInput;
use crate::tui::Direction;
use std::cell::Cell as Slot;
use std::sync::Arc;

/// What the person is deciding on.
#[derive(Debug)]
pub enum Review {
    Change(ChangeReview),
    Command(CommandReview),
}

impl Review {
    pub fn new(req: ApprovalRequest) -> Self {
        match &req.kind {
            ApprovalKind::Change {
                path,
                before,
                after,
                binary_before,
            } => Review::Change(ChangeReview {
                path: path.clone(),
                before: before.clone(),
                after: after.clone(),
                binary_before: *binary_before,
                diff: None,
                selected: Vec::new(),
                focus: 0,
                scroll: 0,
                hunk_starts: Default::default(),
                page: Slot::new(20),
                feedback: None,
                req,
            }),
            ApprovalKind::Command {
                command,
                description,
                timeout_seconds,
            } => Review::Command(CommandReview {
                command: command.clone(),
                description: description.clone(),
                timeout_seconds: *timeout_seconds,
                feedback: None,
                req,
            }),
        }
    }

    pub fn request(&self) -> &ApprovalRequest {
        match self {
            Review::Change(c) => &c.req,
            Review::Command(c) => &c.req,
        }
    }

    pub fn feedback_mut(&mut self) -> &mut Option<TextInput> {
        match self {
            Review::Change(c) => &mut c.feedback,
            Review::Command(c) => &mut c.feedback,
        }
    }
}

/// A Write or Edit waiting for review.
#[derive(Debug)]
pub struct ChangeReview {
    pub req: ApprovalRequest,
    pub path: String,
    pub before: Option<String>,
    pub after: String,
    pub binary_before: bool,
    /// Computed off the draw path; `None` until it arrives.
    pub diff: Option<Arc<FileDiff>>,
    /// Per hunk: included in the approval.
    pub selected: Vec<bool>,
    pub focus: usize,
    pub scroll: usize,
    /// First line of each hunk in the last drawing (for jumping).
    pub hunk_starts: std::cell::RefCell<Vec<usize>>,
    /// Lines visible in the last drawing.
    pub page: Slot<usize>,
    pub feedback: Option<TextInput>,
}

/// What approving the change now sends.
#[derive(Debug, PartialEq)]
pub enum ChangeVerdict {
    Send(ReviewDecision),
    /// No hunk is selected: that is a rejection, so ask why.
    AskWhy,
}

impl ChangeReview {
    /// Show `diff`. A diff replacing one with the same hunks (the fully coloured stage of the
    /// same change) keeps the hunk selection, focus and scroll position.
    pub fn set_diff(&mut self, diff: Arc<FileDiff>) {
        let same_hunks = self.diff.as_ref().is_some_and(|old| {
            old.hunks.len() == diff.hunks.len()
                && old
                    .hunks
                    .iter()
                    .zip(&diff.hunks)
                    .all(|(a, b)| a.old_lines == b.old_lines && a.new_lines == b.new_lines)
        });
        if !same_hunks {
            self.selected = vec![true; diff.hunks.len()];
            self.focus = 0;
            self.scroll = 0;
        }
        self.diff = Some(diff);
    }

    /// The decision for "approve" given the selected hunks.
    pub fn approve(&self) -> ChangeVerdict {
        let Some(diff) = &self.diff else {
            return ChangeVerdict::Send(ReviewDecision::Approve);
        };
        let n = self.selected.iter().filter(|s| **s).count();
        if n == self.selected.len() {
            ChangeVerdict::Send(ReviewDecision::Approve)
        } else if n == 0 {
            ChangeVerdict::AskWhy
        } else {
            let before = self.before.as_deref().unwrap_or("");
            let text = apply_hunks(before, &self.after, &diff.hunks, &self.selected);
            ChangeVerdict::Send(ReviewDecision::ApproveEdited { text })
        }
    }

    pub fn hunk_count(&self) -> usize {
        self.selected.len()
    }

    pub fn toggle_focused(&mut self) {
        if let Some(s) = self.selected.get_mut(self.focus) {
            *s = !*s;
        }
    }

    /// Move the focus by one hunk and scroll to it.
    pub fn move_focus(&mut self, to: Direction) {
        let n = self.hunk_count();
        if n == 0 {
            return;
        }
        self.focus = match to {
            Direction::Forward => (self.focus + 1).min(n - 1),
            Direction::Back => self.focus.saturating_sub(1),
        };
        if let Some(start) = self.hunk_starts.borrow().get(self.focus) {
            self.scroll = start.saturating_sub(1);
        }
    }

    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll = (self.scroll as isize + delta).max(0) as usize;
    }
}

/// A command waiting for review.
#[derive(Debug)]
pub struct CommandReview {
    pub req: ApprovalRequest,
    pub command: String,
    pub description: Option<String>,
    pub timeout_seconds: f64,
    pub feedback: Option<TextInput>,
}

/// The session patch, once exported.
#[derive(Debug)]
pub struct PatchReview {
    pub raw: Vec<u8>,
    pub files: Vec<FileDiff>,
    pub scroll: usize,
    pub file_focus: usize,
    pub file_starts: std::cell::RefCell<Vec<usize>>,
    pub page: Slot<usize>,
    /// Typing the file name to save to.
    pub save_path: Option<TextInput>,
}

impl PatchReview {
    pub fn new(raw: Vec<u8>, files: Vec<FileDiff>) -> Self {
        Self {
            raw,
            files,
            scroll: 0,
            file_focus: 0,
            file_starts: Default::default(),
            page: Slot::new(20),
            save_path: None,
        }
    }

    /// Move the focus by one file and scroll to it.
    pub fn move_focus(&mut self, to: Direction) {
        let n = self.files.len();
        if n == 0 {
            return;
        }
        self.file_focus = match to {
            Direction::Forward => (self.file_focus + 1).min(n - 1),
            Direction::Back => self.file_focus.saturating_sub(1),
        };
        if let Some(start) = self.file_starts.borrow().get(self.file_focus) {
            self.scroll = *start;
        }
    }

    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll = (self.scroll as isize + delta).max(0) as usize;
    }

    pub fn totals(&self) -> (usize, usize) {
        (
            self.files.iter().map(FileDiff::added).sum(),
            self.files.iter().map(FileDiff::removed).sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolCategory};

    fn change(before: &str, after: &str) -> ChangeReview {
        let req = ApprovalRequest {
            id: 1,
            call: ToolCall {
                id: "call_1".into(),
                name: "Write".into(),
                arguments: Default::default(),
            },
            category: ToolCategory::Edits,
            kind: ApprovalKind::Change {
                path: "f.txt".into(),
                before: Some(before.into()),
                after: after.into(),
                binary_before: false,
            },
        };
        let Review::Change(mut c) = Review::new(req) else {
            unreachable!()
        };
        c.set_diff(Arc::new(FileDiff::compute("f.txt", Some(before), after)));
        c
    }

    #[test]
    fn hunk_selection_decides_the_verdict() {
        let before: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "two\n")
            .replace("line 25\n", "twenty-five\n");
        let mut c = change(&before, &after);
        assert_eq!(c.hunk_count(), 2);
        assert_eq!(c.approve(), ChangeVerdict::Send(ReviewDecision::Approve));
        c.move_focus(Direction::Forward);
        c.toggle_focused();
        match c.approve() {
            ChangeVerdict::Send(ReviewDecision::ApproveEdited { text }) => {
                assert!(
                    text.contains("two\n")
                        && text.contains("line 25\n")
                        && !text.contains("twenty")
                );
            }
            other => panic!("{other:?}"),
        }
        c.move_focus(Direction::Back);
        c.toggle_focused();
        assert_eq!(c.approve(), ChangeVerdict::AskWhy);
    }

    #[test]
    fn the_coloured_stage_keeps_selection_and_focus() {
        let before: String = (0..400).map(|i| format!("let a{i} = {i};\n")).collect();
        let after = before
            .replace("= 3;", "= three;")
            .replace("= 390;", "= many;");
        let mut c = change(&before, &after);
        c.move_focus(Direction::Forward);
        c.toggle_focused();
        c.scroll = 7;
        let hl = crate::diff::Highlighter::default();
        let mut stages = Vec::new();
        FileDiff::compute_in_stages("f.rs", Some(&before), &after, &hl, |d| stages.push(d));
        for d in stages {
            c.set_diff(Arc::new(d));
        }
        assert_eq!(
            (c.selected.clone(), c.focus, c.scroll),
            (vec![true, false], 1, 7)
        );
        // A different change starts over.
        c.set_diff(Arc::new(FileDiff::compute("f.rs", Some("a\n"), "b\n")));
        assert_eq!((c.selected.clone(), c.focus, c.scroll), (vec![true], 0, 0));
    }
}
