//! The state of what is in front of the transcript: a file change or a command waiting for a
//! decision, and the session patch waiting for apply / save / discard. Pure state and the
//! decisions it leads to; drawing is in `views`, key dispatch in `app::keys`. The session
//! patch's review is in `app::pr_review`.

use crate::diff::{apply_hunks, DiffLine, FileDiff, LineKind};
use crate::protocol::{ApprovalKind, ApprovalRequest, HunkNote, ReviewDecision};
use crate::tui::diff_cursor::DiffCursor;
use crate::tui::diff_gaps;
use crate::tui::line_comments::LineComments;
use crate::tui::text_input::TextInput;
use crate::tui::Direction;
use std::sync::Arc;

/// What the person is deciding on.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one review in front at a time, matched on every key and frame: boxing buys nothing"
)]
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
                cursor: DiffCursor::default(),
                comments: LineComments::default(),
                feedback: None,
                feedback_for: FeedbackFor::Rejection,
                revision: 0,
                proposal: after.clone(),
                opened: None,
                note: None,
                dock: Default::default(),
                unfolded: false,
                open_gaps: Vec::new(),
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
                proposed: command.clone(),
                opened: None,
                prefix: None,
                note: None,
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
    /// The line cursor among all the hunks' lines (its hunk has the focus), the view's
    /// scroll and what the last drawing measured.
    pub cursor: DiffCursor,
    /// The person's comments on lines, sent with the decision.
    pub comments: LineComments,
    pub feedback: Option<TextInput>,
    /// What the feedback being typed is for.
    pub feedback_for: FeedbackFor,
    /// 0: the model's proposal; n: the person's n-th edit of it (`after` is then theirs).
    pub revision: u32,
    /// The model's proposed text, whatever `after` has become.
    pub proposal: String,
    /// The text handed to `$EDITOR`, while it is open.
    pub opened: Option<String>,
    /// A line shown under the header (what the editor did).
    pub note: Option<String>,
    /// Where the panel is and what has the focus.
    pub dock: super::DockView,
    /// A lock or generated file was opened (it starts folded to one line).
    pub unfolded: bool,
    /// Per hunk: the unchanged lines before it are shown (they start folded to `… N lines …`).
    pub open_gaps: Vec<bool>,
}

/// What the feedback field of a change review says to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackFor {
    /// Why the whole change is rejected.
    Rejection,
    /// Why the deselected hunks were dropped (the selected ones are applied).
    DroppedHunks,
    /// A comment on the line under the cursor.
    Comment,
}

/// What the editor gave back, for a change or a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorOutcome {
    /// Saved as it was opened: back to the review.
    Unchanged,
    /// Saved empty: taken as "never mind", back to the review.
    Emptied,
    /// Saved with changes: reviewed again.
    Edited,
}

/// What approving the change now sends.
#[derive(Debug, PartialEq)]
pub enum ChangeVerdict {
    Send(ReviewDecision),
    /// No hunk is selected: that is a rejection, so ask why.
    AskWhy,
}

impl ChangeReview {
    /// The folded gap the line cursor is beside (its hunk's index): on a hunk's first line the
    /// gap before it, on its last line the gap after it. Enter opens it.
    pub fn gap_at_cursor(&self) -> Option<usize> {
        let d = self.diff.as_deref()?;
        let gaps = self.gap_marks();
        let mut start = 0;
        for (h, hunk) in d.hunks.iter().enumerate() {
            let end = start + hunk.lines.len();
            if self.cursor.line == start && diff_gaps::is_folded(d, h, gaps) {
                return Some(h);
            }
            if self.cursor.line + 1 == end && diff_gaps::is_folded(d, h + 1, gaps) {
                return Some(h + 1);
            }
            start = end;
        }
        None
    }

    /// Which gaps are open, and the text that shows them.
    pub fn gap_marks(&self) -> diff_gaps::GapMarks<'_> {
        diff_gaps::GapMarks {
            open: &self.open_gaps,
            text: Some(&self.after),
        }
    }

    /// Enter on something folded: open the lock or generated file, else the gap beside the
    /// cursor.
    pub fn unfold(&mut self) {
        if self.folded().is_some() {
            self.unfolded = true;
        } else if let Some(h) = self.gap_at_cursor() {
            if let Some(open) = self.open_gaps.get_mut(h) {
                *open = true;
            }
        }
    }

    /// Why the diff is folded to one line, while it is: a lock or generated file not opened.
    pub fn folded(&self) -> Option<crate::diff::generated::Generated> {
        if self.unfolded {
            return None;
        }
        crate::diff::generated::kind(self.diff.as_deref()?)
    }

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
        let hunks = diff.hunks.len();
        self.diff = Some(diff);
        if !same_hunks {
            self.open_gaps = vec![false; hunks];
            self.selected = vec![true; hunks];
            self.focus = 0;
            let line = self.first_change(0);
            self.cursor.reset(line);
        }
    }

    /// Every line of the hunks, with its hunk's index, in order.
    fn lines(&self) -> impl Iterator<Item = (usize, &DiffLine)> {
        self.diff.iter().flat_map(|d| {
            d.hunks
                .iter()
                .enumerate()
                .flat_map(|(i, h)| h.lines.iter().map(move |l| (i, l)))
        })
    }

    /// The line under the cursor.
    pub fn cursor_line(&self) -> Option<&DiffLine> {
        self.cursor.under(self.lines().map(|(_, l)| l))
    }

    fn first_change(&self, hunk: usize) -> usize {
        first_change(self.lines(), hunk)
    }

    /// Move the line cursor by `delta` lines; the focus follows it to its hunk, and the view
    /// scrolls to keep it in sight. A folded file is one row: the cursor stays on it.
    pub fn move_line(&mut self, delta: isize) {
        let lines = if self.folded().is_some() {
            0
        } else {
            self.lines().count()
        };
        if !self.cursor.step(delta, lines) {
            return;
        }
        let hunk = self.lines().nth(self.cursor.line).map(|(hunk, _)| hunk);
        if let Some(hunk) = hunk {
            self.focus = hunk;
        }
    }

    /// A page of lines up (`pages` < 0) or down.
    pub fn move_page(&mut self, pages: isize) {
        self.move_line(pages * self.cursor.page() as isize);
    }

    /// Open the comment field for the line under the cursor (with its comment, if it has one).
    /// A folded file shows no line to comment on: the note says to open it first.
    pub fn start_comment(&mut self) {
        if let Some(g) = self.folded() {
            let open = crate::tui::keymap::keys_of(
                crate::tui::keymap::Context::Folded,
                crate::tui::keymap::Action::Unfold,
            );
            self.note = Some(format!(
                "this file is folded ({}): {open} opens it to comment on a line",
                g.label()
            ));
            return;
        }
        let Some(line) = self.cursor_line() else {
            return;
        };
        let text = self
            .comments
            .on(&self.path, line)
            .map(|c| c.text.clone())
            .unwrap_or_default();
        self.feedback_for = FeedbackFor::Comment;
        self.feedback = Some(TextInput::with_text(&text));
    }

    /// Put `text` on the line under the cursor (empty text removes its comment).
    pub fn comment(&mut self, text: &str) {
        let Some(line) = self.cursor_line().cloned() else {
            return;
        };
        self.comments.set(&self.path, &line, text);
    }

    /// The decision for "approve" given the selected hunks (and, when some are dropped from
    /// the model's proposal, what the person says about them); the line comments go with it,
    /// after that feedback.
    pub fn approve(&self, feedback: Option<String>) -> ChangeVerdict {
        let said = self
            .comments
            .with_feedback(feedback.as_deref().unwrap_or_default());
        let Some(diff) = &self.diff else {
            return ChangeVerdict::Send(self.whole(said));
        };
        let n = self.selected.iter().filter(|s| **s).count();
        if n == self.selected.len() {
            return ChangeVerdict::Send(self.whole(said));
        }
        if n == 0 {
            return ChangeVerdict::AskWhy;
        }
        let text = self.selected_text();
        if self.revision > 0 {
            // Hunks of the person's own edit: the model is told its proposal was edited.
            return ChangeVerdict::Send(edited(text, said));
        }
        let (mut kept, mut dropped) = (Vec::new(), Vec::new());
        for (i, (h, on)) in diff.hunks.iter().zip(&self.selected).enumerate() {
            let first_change = h
                .lines
                .iter()
                .find(|l| l.kind == LineKind::Added)
                .or_else(|| h.lines.iter().find(|l| l.kind == LineKind::Removed))
                .map(|l| l.text())
                .unwrap_or_default();
            let note = HunkNote {
                number: i + 1,
                header: h.header(),
                first_change,
            };
            if *on {
                kept.push(note);
            } else {
                dropped.push(note);
            }
        }
        ChangeVerdict::Send(ReviewDecision::ApproveHunks {
            text,
            kept,
            dropped,
            feedback: Some(said).filter(|f| !f.is_empty()),
        })
    }

    /// Approving every hunk: the proposal as it is, or the person's edit of it, with what
    /// the person says (`said`, maybe nothing).
    fn whole(&self, said: String) -> ReviewDecision {
        if self.after == self.proposal && said.is_empty() {
            ReviewDecision::Approve
        } else {
            edited(self.after.clone(), said)
        }
    }

    /// The text the model reads for a rejection: what is typed, then the line comments.
    pub fn rejection(&self, typed: &str) -> String {
        self.comments.with_feedback(typed)
    }

    /// The text with only the selected hunks applied (all of `after` when all are).
    pub fn selected_text(&self) -> String {
        match &self.diff {
            Some(d) if self.selected.iter().any(|s| !s) => apply_hunks(
                self.before.as_deref().unwrap_or(""),
                &self.after,
                &d.hunks,
                &self.selected,
            ),
            _ => self.after.clone(),
        }
    }

    /// Some hunks are selected and some not.
    pub fn is_partial(&self) -> bool {
        self.selected.iter().any(|s| *s) && self.selected.iter().any(|s| !s)
    }

    /// The editor closed on `text`: keep reviewing the proposal, or review the edit.
    pub fn edited(&mut self, text: String) -> EditorOutcome {
        let opened = self.opened.take().unwrap_or_else(|| self.after.clone());
        if text == opened {
            self.note = Some("unchanged in the editor: the review is as it was".into());
            return EditorOutcome::Unchanged;
        }
        if text.trim().is_empty() && !opened.trim().is_empty() {
            self.note = Some(
                "the editor left the file empty: nothing changed, the review is as it was".into(),
            );
            return EditorOutcome::Emptied;
        }
        self.revision += 1;
        self.after = text;
        self.diff = None;
        self.selected.clear();
        self.note = Some(
            "your edit, against the file as it is: y approves it · e edits again · Esc rejects the change"
                .into(),
        );
        EditorOutcome::Edited
    }

    pub fn hunk_count(&self) -> usize {
        self.selected.len()
    }

    /// Space: select or deselect the hunk in focus; on a folded file, the one row stands for
    /// all of its hunks, so all of them (selected unless all were).
    pub fn toggle_focused(&mut self) {
        if self.folded().is_some() {
            let all = self.selected.iter().all(|s| *s);
            self.selected.iter_mut().for_each(|s| *s = !all);
            return;
        }
        if let Some(s) = self.selected.get_mut(self.focus) {
            *s = !*s;
        }
    }

    /// Move the focus by one hunk (the line cursor to its first change) and scroll to it.
    pub fn move_focus(&mut self, to: Direction) {
        let n = self.hunk_count();
        if n == 0 {
            return;
        }
        self.focus = match to {
            Direction::Forward => (self.focus + 1).min(n - 1),
            Direction::Back => self.focus.saturating_sub(1),
        };
        let line = self.first_change(self.focus);
        self.cursor.jump(line, self.focus);
    }

    pub fn scroll_by(&mut self, delta: isize) {
        self.cursor.scroll_by(delta);
    }
}

/// The index among `lines` (each with its group: a hunk, a file) of the first changed line of
/// group `group`; its first line if none changed, 0 if it has none.
fn first_change<'a>(lines: impl Iterator<Item = (usize, &'a DiffLine)>, group: usize) -> usize {
    let mut first = None;
    for (i, (g, line)) in lines.enumerate() {
        if g > group {
            break;
        }
        if g == group {
            if line.kind != LineKind::Context {
                return i;
            }
            first.get_or_insert(i);
        }
    }
    first.unwrap_or(0)
}

/// Applying `text` (the proposal, or the person's edit of it), with what the person says.
fn edited(text: String, said: String) -> ReviewDecision {
    if said.is_empty() {
        ReviewDecision::ApproveEdited { text }
    } else {
        ReviewDecision::ApproveWithFeedback {
            text,
            feedback: said,
        }
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
    /// The command as the model proposed it (`command` may be the person's edit).
    pub proposed: String,
    /// The text handed to `$EDITOR`, while it is open.
    pub opened: Option<String>,
    /// Choosing the prefix of an approval rule.
    pub prefix: Option<PrefixChoice>,
    /// A line shown in the panel (what the editor did).
    pub note: Option<String>,
}

impl CommandReview {
    /// Whether the person changed the command.
    pub fn is_edited(&self) -> bool {
        self.command.trim() != self.proposed.trim()
    }

    /// The decision for "run it".
    pub fn approve(&self) -> ReviewDecision {
        if self.is_edited() {
            ReviewDecision::ApproveEdited {
                text: self.command.clone(),
            }
        } else {
            ReviewDecision::Approve
        }
    }

    /// The editor closed on `text`.
    pub fn edited(&mut self, text: &str) -> EditorOutcome {
        let opened = self.opened.take().unwrap_or_else(|| self.command.clone());
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            self.note = Some("the editor left the command empty: nothing changed".into());
            return EditorOutcome::Emptied;
        }
        if text == opened.trim_end_matches(['\n', '\r']) {
            self.note = Some("unchanged in the editor".into());
            return EditorOutcome::Unchanged;
        }
        self.command = text.to_string();
        self.note = None;
        EditorOutcome::Edited
    }

    /// Start choosing a rule's prefix, from the suggested one.
    pub fn choose_prefix(&mut self) {
        let words: Vec<String> = self
            .command
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let n = crate::agent::suggested_prefix_words(&self.command);
        self.prefix = Some(PrefixChoice { words, n });
        self.note = None;
    }
}

/// The words of a command and how many of them the rule's prefix takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixChoice {
    pub words: Vec<String>,
    pub n: usize,
}

impl PrefixChoice {
    pub fn prefix(&self) -> String {
        self.words[..self.n.min(self.words.len())].join(" ")
    }

    /// One word more or fewer (at least one, at most all).
    pub fn grow(&mut self, to: Direction) {
        self.n = match to {
            Direction::Forward => (self.n + 1).min(self.words.len()),
            Direction::Back => self.n.saturating_sub(1).max(1),
        };
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
        assert_eq!(
            c.approve(None),
            ChangeVerdict::Send(ReviewDecision::Approve)
        );
        c.move_focus(Direction::Forward);
        c.toggle_focused();
        match c.approve(Some("not that one".into())) {
            ChangeVerdict::Send(ReviewDecision::ApproveHunks {
                text,
                kept,
                dropped,
                feedback,
            }) => {
                assert!(
                    text.contains("two\n")
                        && text.contains("line 25\n")
                        && !text.contains("twenty")
                );
                assert_eq!(kept.len(), 1);
                assert_eq!((kept[0].number, kept[0].first_change.as_str()), (1, "two"));
                assert_eq!(
                    (dropped[0].number, dropped[0].first_change.as_str()),
                    (2, "twenty-five")
                );
                assert_eq!(feedback.as_deref(), Some("not that one"));
            }
            other => panic!("{other:?}"),
        }
        c.move_focus(Direction::Back);
        c.toggle_focused();
        assert_eq!(c.approve(None), ChangeVerdict::AskWhy);
    }

    #[test]
    fn the_line_cursor_carries_the_hunk_focus() {
        let before: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "two\n")
            .replace("line 25\n", "twenty-five\n");
        let mut c = change(&before, &after);
        // On the first change: the removed `line 2`.
        assert_eq!(c.cursor_line().map(|l| l.text()).as_deref(), Some("line 2"));
        c.move_line(1);
        assert_eq!(c.cursor_line().map(|l| l.text()).as_deref(), Some("two"));
        c.move_line(100);
        assert_eq!(c.focus, 1);
        c.move_focus(Direction::Back);
        assert_eq!(c.cursor_line().map(|l| l.text()).as_deref(), Some("line 2"));
        c.move_line(-100);
        assert_eq!((c.cursor.line, c.focus), (0, 0));
    }

    #[test]
    fn an_edit_is_reviewed_again_unless_unchanged_or_empty() {
        let mut c = change("a\nb\n", "a\nB\n");
        c.opened = Some(c.after.clone());
        assert_eq!(c.edited("a\nB\n".into()), EditorOutcome::Unchanged);
        c.opened = Some(c.after.clone());
        assert_eq!(c.edited("\n".into()), EditorOutcome::Emptied);
        assert_eq!(c.revision, 0);
        c.opened = Some(c.after.clone());
        assert_eq!(c.edited("a\nbee\n".into()), EditorOutcome::Edited);
        assert_eq!((c.revision, c.diff.is_none()), (1, true));
        c.set_diff(Arc::new(FileDiff::compute(
            "f.txt",
            Some("a\nb\n"),
            "a\nbee\n",
        )));
        assert_eq!(
            c.approve(None),
            ChangeVerdict::Send(ReviewDecision::ApproveEdited {
                text: "a\nbee\n".into()
            })
        );
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
        c.cursor.scroll = 7;
        let hl = crate::diff::Highlighter::default();
        let mut stages = Vec::new();
        FileDiff::compute_in_stages("f.rs", Some(&before), &after, &hl, |d| stages.push(d));
        for d in stages {
            c.set_diff(Arc::new(d));
        }
        assert_eq!(
            (c.selected.clone(), c.focus, c.cursor.scroll),
            (vec![true, false], 1, 7)
        );
        // A different change starts over.
        c.set_diff(Arc::new(FileDiff::compute("f.rs", Some("a\n"), "b\n")));
        assert_eq!(
            (c.selected.clone(), c.focus, c.cursor.scroll),
            (vec![true], 0, 0)
        );
    }
}
