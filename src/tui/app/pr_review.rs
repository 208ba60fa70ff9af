//! The session review: the session patch reviewed as a pull request. A file list (path, +/-,
//! a viewed mark, the comments on it) beside or above the shown file's diff; comments on a
//! line, a range (`v`), a file or the whole review that stay pending and editable until the
//! review is submitted; three ends, as a pull request's: approve (apply, save or discard),
//! request changes (one message to the model) and comment (recorded, not sent); a scope
//! switch between the last turn's changes and the whole session's.
//!
//! Owns the review's state and what a key does to it ([`PatchReview::handle`], which answers
//! an [`Outcome`] for the App to carry out). Does not own the key table (`tui::keymap`), the
//! App's effects (`app::pr_keys`) or drawing (`views::pr_review`).
//!
//! Invariants: the shown file is an index into [`PatchReview::files`] of the current scope
//! (or 0 when it is empty); the line cursor indexes that file's lines; comments are anchored
//! by path and line numbers, so they survive a scope switch and a new export of the patch.

use crate::diff::{DiffLine, FileDiff, Hunk, LineKind};
use crate::tui::diff_cursor::{DiffCursor, Marked};
use crate::tui::keymap::{Action, Context};
use crate::tui::review_comments::{Anchor, LineRef, ReviewComment, ReviewComments};
use crate::tui::text_input::TextInput;
use std::collections::BTreeSet;

/// Which changes the review shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The hunks the last task changed.
    LastTurn,
    /// Everything the session changed.
    Session,
}

impl Scope {
    pub fn label(self) -> &'static str {
        match self {
            Scope::LastTurn => "last turn",
            Scope::Session => "whole session",
        }
    }
}

/// Which part of the review the arrow keys move in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPane {
    Files,
    Diff,
}

/// How a submitted review ends (approving is applying, saving or discarding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Every pending comment and the summary go to the model as one message.
    RequestChanges,
    /// The comments are recorded, not sent.
    Comment,
}

/// What is being typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// A comment at this place (its text, when it had one, is in the field).
    Comment(Anchor),
    /// The review's summary, typed last; Enter submits the review.
    Summary(End),
    /// Where to save the patch.
    SavePath,
}

/// What the App does after a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Nothing,
    Apply,
    /// Open the save field with the App's default file name.
    AskSavePath,
    Save(String),
    Discard,
    Copy,
    /// Back to the transcript; the review (and its pending comments) kept.
    Back,
    /// Send this message and go back to the transcript.
    Request(String),
    /// These comments were recorded.
    Recorded(Vec<ReviewComment>),
}

/// The session patch under review.
#[derive(Debug)]
pub struct PatchReview {
    pub raw: Vec<u8>,
    session: Vec<FileDiff>,
    last_turn: Vec<FileDiff>,
    pub scope: Scope,
    /// The shown file (index into [`PatchReview::files`]).
    pub file: usize,
    /// The file list's cursor.
    pub list: usize,
    pub pane: ListPane,
    /// The line cursor among the shown file's lines, the range selected with `v`, the
    /// view's scroll and what the last drawing measured.
    pub cursor: DiffCursor,
    /// Paths marked viewed.
    pub viewed: BTreeSet<String>,
    pub comments: ReviewComments,
    pub field: Option<(Field, TextInput)>,
    /// A line under the title (what the last key did, when it did nothing visible).
    pub note: Option<String>,
    /// Lock and generated files opened (they start folded to one line).
    pub unfolded: BTreeSet<String>,
}

impl PatchReview {
    /// The review of `files`; `last_turn` holds the hunks the last task changed.
    pub fn new(raw: Vec<u8>, files: Vec<FileDiff>, last_turn: Vec<FileDiff>) -> Self {
        let mut p = Self {
            raw,
            session: files,
            last_turn,
            scope: Scope::Session,
            file: 0,
            list: 0,
            pane: ListPane::Diff,
            cursor: DiffCursor::default(),
            viewed: BTreeSet::new(),
            comments: ReviewComments::default(),
            field: None,
            note: None,
            unfolded: BTreeSet::new(),
        };
        p.show(0);
        p
    }

    /// A new export of the patch replaces `old`: its comments and scope are kept, and so are
    /// its viewed marks on files whose diff did not change.
    pub fn carry(&mut self, old: PatchReview) {
        self.comments = old.comments;
        self.viewed = old
            .viewed
            .into_iter()
            .filter(|path| {
                let before = old.session.iter().find(|f| f.path == *path);
                let now = self.session.iter().find(|f| f.path == *path);
                matches!((before, now), (Some(a), Some(b)) if same_hunks(&a.hunks, &b.hunks))
            })
            .collect();
        if old.scope != self.scope {
            self.set_scope(old.scope);
        }
        if let Some(f) = self.files().first() {
            self.viewed.insert(f.path.clone());
        }
    }

    /// The files of the scope in force.
    pub fn files(&self) -> &[FileDiff] {
        match self.scope {
            Scope::LastTurn => &self.last_turn,
            Scope::Session => &self.session,
        }
    }

    pub fn shown(&self) -> Option<&FileDiff> {
        self.files().get(self.file)
    }

    /// (+, -) of the scope's files.
    pub fn totals(&self) -> (usize, usize) {
        (
            self.files().iter().map(FileDiff::added).sum(),
            self.files().iter().map(FileDiff::removed).sum(),
        )
    }

    fn lines(&self) -> impl Iterator<Item = &DiffLine> + Clone {
        self.shown()
            .into_iter()
            .flat_map(|f| f.hunks.iter().flat_map(|h| h.lines.iter()))
    }

    /// The line under the cursor.
    pub fn cursor_line(&self) -> Option<&DiffLine> {
        self.cursor.under(self.lines())
    }

    /// The range selected (first and last line index), while `v` selects one.
    pub fn selection(&self) -> Option<(usize, usize)> {
        self.cursor.selection()
    }

    /// The contexts keys are looked up in, most specific first.
    pub fn contexts(&self) -> Vec<Context> {
        match &self.field {
            Some((Field::SavePath, _)) => vec![Context::SavePath, Context::Anywhere],
            Some((Field::Comment(_), _)) => vec![Context::Comment, Context::Anywhere],
            Some((Field::Summary(_), _)) => vec![Context::ReviewSummary, Context::Anywhere],
            None if self.pane == ListPane::Diff && self.folded().is_some() => vec![
                Context::Folded,
                Context::Patch,
                Context::Browse,
                Context::Anywhere,
            ],
            None => vec![Context::Patch, Context::Browse, Context::Anywhere],
        }
    }

    /// Why the shown file is folded to one line, while it is: a lock or generated file not
    /// opened.
    pub fn folded(&self) -> Option<crate::diff::generated::Generated> {
        let f = self.shown()?;
        if self.unfolded.contains(&f.path) {
            return None;
        }
        crate::diff::generated::kind(f)
    }

    pub fn field_mut(&mut self) -> Option<&mut TextInput> {
        self.field.as_mut().map(|(_, f)| f)
    }

    /// The label of the field being typed.
    pub fn field_label(&self) -> Option<&'static str> {
        Some(match &self.field.as_ref()?.0 {
            Field::SavePath => "save to › ",
            Field::Comment(Anchor::Line { .. }) => "comment on this line › ",
            Field::Comment(Anchor::Range { .. }) => "comment on these lines › ",
            Field::Comment(Anchor::File { .. }) => "comment on this file › ",
            Field::Comment(Anchor::Review) => "comment on the review › ",
            Field::Summary(End::RequestChanges) => "request changes: a summary (optional) › ",
            Field::Summary(End::Comment) => "record the comments: a summary (optional) › ",
        })
    }

    /// Show file `i` of the scope: its first change under the cursor, marked viewed.
    pub fn show(&mut self, i: usize) {
        let n = self.files().len();
        self.file = i.min(n.saturating_sub(1));
        self.list = self.file;
        let line = first_change(self.lines());
        self.cursor.reset(line);
        if let Some(path) = self.shown().map(|f| f.path.clone()) {
            self.viewed.insert(path);
        }
    }

    pub fn set_scope(&mut self, scope: Scope) {
        let path = self.shown().map(|f| f.path.clone());
        self.scope = scope;
        let i = path
            .and_then(|p| self.files().iter().position(|f| f.path == p))
            .unwrap_or(0);
        self.show(i);
    }

    /// Lines the cursor moves among: none while the shown file is folded to one row.
    fn movable_lines(&self) -> usize {
        if self.folded().is_some() {
            0
        } else {
            self.lines().count()
        }
    }

    /// Move the line cursor by `delta`; the view follows it.
    pub fn move_line(&mut self, delta: isize) {
        let lines = self.movable_lines();
        self.cursor.step(delta, lines);
    }

    pub fn scroll_by(&mut self, delta: isize) {
        self.cursor.scroll_by(delta);
    }

    /// Where `m` comments now: the selected range, else the line under the cursor (or the
    /// range that ends there, to edit it).
    /// A file folded to one row: the file itself.
    fn line_anchor(&self) -> Option<Anchor> {
        let path = self.shown()?.path.clone();
        if self.folded().is_some() {
            return Some(Anchor::File { path });
        }
        let line = match self.cursor.marked(self.lines())? {
            Marked::Range(first, last) => {
                return Some(Anchor::Range {
                    path,
                    first: LineRef::of(first),
                    last: LineRef::of(last),
                })
            }
            Marked::Line(line) => line,
        };
        if let Some(c) = self.comments.on_line(&path, line) {
            return Some(c.anchor.clone());
        }
        Some(Anchor::Line {
            path,
            line: LineRef::of(line),
        })
    }

    /// Open the comment field at `anchor`, with its pending comment's text.
    fn start_comment(&mut self, anchor: Anchor) {
        let text = self
            .comments
            .at(&anchor)
            .map(|c| c.text.clone())
            .unwrap_or_default();
        self.field = Some((Field::Comment(anchor), TextInput::with_text(&text)));
    }

    /// What `action` does (see the module docs).
    pub fn handle(&mut self, action: Action) -> Outcome {
        use Action as A;
        self.note = None;
        if let Some((field, input)) = self.field.take() {
            return match action {
                A::Submit => self.submit(field, input),
                A::Cancel => Outcome::Nothing,
                _ => {
                    self.field = Some((field, input));
                    Outcome::Nothing
                }
            };
        }
        match action {
            A::ApplyPatch => return Outcome::Apply,
            A::SavePatch => return Outcome::AskSavePath,
            A::DiscardPatch => return Outcome::Discard,
            A::Copy => return Outcome::Copy,
            A::Cancel if self.cursor.range_from.is_some() => self.cursor.range_from = None,
            A::Cancel => return Outcome::Back,
            A::NextHunk | A::PrevHunk => {
                let n = self.files().len();
                let i = if action == A::NextHunk {
                    (self.file + 1).min(n.saturating_sub(1))
                } else {
                    self.file.saturating_sub(1)
                };
                self.show(i);
            }
            A::SwitchPane => {
                self.pane = match self.pane {
                    ListPane::Files => ListPane::Diff,
                    ListPane::Diff => ListPane::Files,
                };
            }
            A::Unfold => {
                if let Some(f) = self.shown() {
                    self.unfolded.insert(f.path.clone());
                }
            }
            A::OpenFile => {
                self.show(self.list);
                self.pane = ListPane::Diff;
            }
            A::ScrollUp | A::ScrollDown => {
                let d = if action == A::ScrollUp { -1 } else { 1 };
                match self.pane {
                    ListPane::Files => {
                        let n = self.files().len() as isize;
                        self.list = (self.list as isize + d).clamp(0, (n - 1).max(0)) as usize;
                    }
                    ListPane::Diff => self.move_line(d),
                }
            }
            A::PageUp | A::PageDown => {
                let lines = self.movable_lines();
                self.cursor
                    .page_by(if action == A::PageUp { -1 } else { 1 }, lines);
            }
            A::SelectRange if self.folded().is_none() => self.cursor.toggle_range(),
            A::Comment => {
                if let Some(anchor) = self.line_anchor() {
                    self.start_comment(anchor);
                }
            }
            A::CommentFile => {
                if let Some(path) = self.shown().map(|f| f.path.clone()) {
                    self.start_comment(Anchor::File { path });
                }
            }
            A::ToggleViewed => {
                let i = match self.pane {
                    ListPane::Files => self.list,
                    ListPane::Diff => self.file,
                };
                if let Some(path) = self.files().get(i).map(|f| f.path.clone()) {
                    if !self.viewed.remove(&path) {
                        self.viewed.insert(path);
                    }
                }
            }
            A::ToggleScope => {
                let to = match self.scope {
                    Scope::LastTurn => Scope::Session,
                    Scope::Session => Scope::LastTurn,
                };
                self.set_scope(to);
                if self.files().is_empty() {
                    self.note = Some("the last turn changed no file".into());
                }
            }
            A::RequestChanges => self.start_summary(End::RequestChanges),
            A::CommentReview => self.start_summary(End::Comment),
            _ => {}
        }
        Outcome::Nothing
    }

    /// Open the summary field; the review's own pending comment, if any, is its text.
    pub fn start_summary(&mut self, end: End) {
        let text = self
            .comments
            .at(&Anchor::Review)
            .map(|c| c.text.clone())
            .unwrap_or_default();
        self.cursor.range_from = None;
        self.field = Some((Field::Summary(end), TextInput::with_text(&text)));
    }

    fn submit(&mut self, field: Field, mut input: TextInput) -> Outcome {
        let text = input.take();
        match field {
            Field::SavePath if text.trim().is_empty() => Outcome::Nothing,
            Field::SavePath => Outcome::Save(text.trim().to_string()),
            Field::Comment(anchor) => {
                self.comments.set(anchor, &text);
                self.cursor.range_from = None;
                Outcome::Nothing
            }
            Field::Summary(End::RequestChanges) => {
                self.comments.set(Anchor::Review, "");
                match self.comments.request_message(&text) {
                    Some(message) => Outcome::Request(message),
                    None => {
                        self.note =
                            Some("nothing to send: comment on lines or type a summary".into());
                        Outcome::Nothing
                    }
                }
            }
            Field::Summary(End::Comment) => {
                let done = self.comments.record(&text);
                if done.is_empty() {
                    self.note = Some("no pending comment to record".into());
                    return Outcome::Nothing;
                }
                Outcome::Recorded(done)
            }
        }
    }
}

/// The index of the first changed line among `lines` (0 when none changed).
fn first_change<'a>(lines: impl Iterator<Item = &'a DiffLine>) -> usize {
    lines
        .enumerate()
        .find(|(_, l)| l.kind != LineKind::Context)
        .map_or(0, |(i, _)| i)
}

/// Whether two lists of hunks change the same lines the same way (numbers aside).
fn same_hunks(a: &[Hunk], b: &[Hunk]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_hunk(x, y))
}

fn same_hunk(a: &Hunk, b: &Hunk) -> bool {
    a.lines.len() == b.lines.len()
        && a.lines
            .iter()
            .zip(&b.lines)
            .all(|(x, y)| x.kind == y.kind && x.text() == y.text())
}

/// The part of the session patch `now` that the last task changed, given the patch as it was
/// before that task (`before`): each file's hunks that were not in it, as they were (a file
/// whose hunks all were is left out).
pub fn last_turn(now: &[FileDiff], before: &[FileDiff]) -> Vec<FileDiff> {
    now.iter()
        .filter_map(|f| {
            let Some(old) = before.iter().find(|o| o.path == f.path) else {
                return Some(f.clone());
            };
            let hunks: Vec<Hunk> = f
                .hunks
                .iter()
                .filter(|h| !old.hunks.iter().any(|o| same_hunk(o, h)))
                .cloned()
                .collect();
            (!hunks.is_empty()).then(|| FileDiff { hunks, ..f.clone() })
        })
        .collect()
}

/// The session patches the App has seen, for the last turn's scope: the one exported at the
/// end of the task before last and the last one.
#[derive(Debug, Default)]
pub struct PatchMemory {
    before: Vec<FileDiff>,
    latest: Vec<FileDiff>,
    /// A task finished since the last export: the next one starts a new turn's changes.
    pub task_ended: bool,
    /// The review put aside with Esc (its pending comments kept), until the next export or
    /// `/request`.
    pub stash: Option<PatchReview>,
}

impl PatchMemory {
    /// A new export `files`: the last turn's changes in it.
    pub fn exported(&mut self, files: &[FileDiff]) -> Vec<FileDiff> {
        if std::mem::take(&mut self.task_ended) {
            self.before = std::mem::replace(&mut self.latest, files.to_vec());
        } else {
            self.latest = files.to_vec();
        }
        last_turn(files, &self.before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<FileDiff> {
        vec![
            FileDiff::compute("a.py", Some("x\ny\nz\n"), "x\nY\nz\n"),
            FileDiff::compute("b.py", Some("one\n"), "one\ntwo\n"),
        ]
    }

    fn typed(p: &mut PatchReview, text: &str) {
        if let Some(f) = p.field_mut() {
            f.insert_str(text);
        }
    }

    #[test]
    fn files_are_marked_viewed_as_they_are_shown_and_toggled() {
        let mut p = PatchReview::new(Vec::new(), files(), Vec::new());
        assert!(p.viewed.contains("a.py") && !p.viewed.contains("b.py"));
        p.handle(Action::NextHunk);
        assert_eq!(p.shown().map(|f| f.path.as_str()), Some("b.py"));
        assert!(p.viewed.contains("b.py"));
        p.handle(Action::ToggleViewed);
        assert!(!p.viewed.contains("b.py"));
        // The list: move its cursor, Enter shows the file.
        p.handle(Action::SwitchPane);
        p.handle(Action::ScrollUp);
        p.handle(Action::OpenFile);
        assert_eq!((p.file, p.pane), (0, ListPane::Diff));
    }

    #[test]
    fn a_pending_comment_is_edited_then_requested_in_one_message() {
        let mut p = PatchReview::new(Vec::new(), files(), Vec::new());
        p.handle(Action::Comment);
        typed(&mut p, "why capital");
        assert_eq!(p.handle(Action::Submit), Outcome::Nothing);
        // `m` again on the line opens the pending comment to edit it.
        p.handle(Action::Comment);
        let f = p.field_mut().unwrap();
        assert_eq!(f.text(), "why capital");
        f.take();
        f.insert_str("why a capital Y");
        p.handle(Action::Submit);
        p.handle(Action::NextHunk);
        p.handle(Action::CommentFile);
        typed(&mut p, "needs a test");
        p.handle(Action::Submit);
        p.handle(Action::RequestChanges);
        typed(&mut p, "then run the tests");
        let Outcome::Request(text) = p.handle(Action::Submit) else {
            panic!("no request")
        };
        assert_eq!(
            text,
            "I reviewed your changes and request changes:\n\n\
             1. a.py:2 (old) \"y\": why a capital Y\n\
             2. b.py (the file): needs a test\n\nthen run the tests"
        );
    }

    #[test]
    fn v_selects_a_range_to_comment_on() {
        let mut p = PatchReview::new(Vec::new(), files(), Vec::new());
        p.handle(Action::SelectRange);
        p.handle(Action::ScrollDown);
        assert_eq!(p.selection(), Some((1, 2)));
        p.handle(Action::Comment);
        typed(&mut p, "both");
        p.handle(Action::Submit);
        assert_eq!(p.selection(), None);
        assert_eq!(
            p.comments.numbered(),
            "1. a.py:2 (old)-2 (new) \"y\" … \"Y\": both"
        );
    }

    #[test]
    fn the_last_turn_scope_holds_only_new_hunks() {
        let before = vec![FileDiff::compute("a.py", Some("x\ny\nz\n"), "x\nY\nz\n")];
        let mut m = PatchMemory {
            task_ended: true,
            ..Default::default()
        };
        assert_eq!(m.exported(&before).len(), 1);
        m.task_ended = true;
        let turn = m.exported(&files());
        assert_eq!(
            turn.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["b.py"]
        );
        let mut p = PatchReview::new(Vec::new(), files(), turn);
        p.handle(Action::ToggleScope);
        assert_eq!((p.scope, p.files().len()), (Scope::LastTurn, 1));
        // Another export in the same turn compares with the same base.
        assert_eq!(m.exported(&files()).len(), 1);
    }
}
