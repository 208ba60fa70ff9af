//! The comments of the session review (the session patch reviewed as a pull request): each on
//! a line, a range of lines, a file or the whole review; pending (editable, deletable) until
//! the review is submitted, and the one message that "request changes" sends for them.
//!
//! Owns: where each comment is ([`Anchor`]), editing them (one comment per anchor; empty
//! text removes it), the marks the diff shows for them, and the message text:
//!
//! ```text
//! 1. inventory.py:29 (new) "return total <= threshold": say why
//! 2. inventory.py:12-14 (old) "def low(" … "return x": keep this
//! 3. README.md (the file): mention the flag
//! ```
//!
//! followed by the summary the person types last. A line is numbered in the new file (side
//! `new`), or in the old file for a removed line (side `old`). Does not own the cursor or the
//! drawing (`tui::app::pr_review`, `tui::views::pr_review`).

use crate::diff::{DiffLine, FileDiff, LineKind};
use crate::tui::line_comments::LineComments;

/// Characters of a line quoted in the message before it is shortened in the middle.
pub const QUOTE_CHARS: usize = 60;

/// One line of a diff, as a comment finds it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRef {
    pub kind: LineKind,
    pub old_no: Option<usize>,
    pub new_no: Option<usize>,
    /// The line's text, trimmed.
    pub quoted: String,
}

impl LineRef {
    pub fn of(line: &DiffLine) -> Self {
        Self {
            kind: line.kind,
            old_no: line.old_no,
            new_no: line.new_no,
            quoted: line.text().trim().to_string(),
        }
    }

    /// Whether this is `line`.
    pub fn is(&self, line: &DiffLine) -> bool {
        self.kind == line.kind && self.old_no == line.old_no && self.new_no == line.new_no
    }

    /// The side the line is numbered on: `old` for a removed line, else `new`.
    pub fn side(&self) -> &'static str {
        match self.kind {
            LineKind::Removed => "old",
            LineKind::Added | LineKind::Context => "new",
        }
    }

    /// The line's number on its side.
    pub fn number(&self) -> usize {
        match self.kind {
            LineKind::Removed => self.old_no,
            LineKind::Added | LineKind::Context => self.new_no,
        }
        .unwrap_or(0)
    }
}

/// Where a comment is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    Line {
        path: String,
        line: LineRef,
    },
    /// Lines `first` to `last` of one file, in the diff's order.
    Range {
        path: String,
        first: LineRef,
        last: LineRef,
    },
    File {
        path: String,
    },
    /// The whole review.
    Review,
}

impl Anchor {
    pub fn path(&self) -> Option<&str> {
        match self {
            Anchor::Line { path, .. } | Anchor::Range { path, .. } | Anchor::File { path } => {
                Some(path)
            }
            Anchor::Review => None,
        }
    }

    /// How the message names the place: `a.py:29 (new) "quoted"`.
    pub fn describe(&self) -> String {
        match self {
            Anchor::Line { path, line } => format!(
                "{path}:{} ({}) \"{}\"",
                line.number(),
                line.side(),
                shorten(&line.quoted, QUOTE_CHARS)
            ),
            Anchor::Range { path, first, last } => {
                let at = if first.side() == last.side() {
                    format!("{}-{} ({})", first.number(), last.number(), last.side())
                } else {
                    format!(
                        "{} ({})-{} ({})",
                        first.number(),
                        first.side(),
                        last.number(),
                        last.side()
                    )
                };
                let half = QUOTE_CHARS / 2;
                format!(
                    "{path}:{at} \"{}\" … \"{}\"",
                    shorten(&first.quoted, half),
                    shorten(&last.quoted, half)
                )
            }
            Anchor::File { path } => format!("{path} (the file)"),
            Anchor::Review => "the whole change".into(),
        }
    }

    /// The order of the message: by file, then by line; the review's own comment first.
    fn sort_key(&self) -> (String, usize, bool) {
        match self {
            Anchor::Review => (String::new(), 0, false),
            Anchor::File { path } => (path.clone(), 0, false),
            Anchor::Line { path, line } => {
                (path.clone(), line.number(), line.kind != LineKind::Removed)
            }
            Anchor::Range { path, first, .. } => (
                path.clone(),
                first.number(),
                first.kind != LineKind::Removed,
            ),
        }
    }
}

/// One comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub anchor: Anchor,
    pub text: String,
}

/// The comments of one session review: `pending` until the review is submitted; `recorded`
/// once submitted as "comment" (kept, not sent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewComments {
    pending: Vec<ReviewComment>,
    recorded: Vec<ReviewComment>,
}

impl ReviewComments {
    pub fn pending(&self) -> &[ReviewComment] {
        &self.pending
    }

    pub fn recorded(&self) -> &[ReviewComment] {
        &self.recorded
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The pending comment at `anchor`.
    pub fn at(&self, anchor: &Anchor) -> Option<&ReviewComment> {
        self.pending.iter().find(|c| c.anchor == *anchor)
    }

    /// Put `text` at `anchor`, replacing the comment there; empty text deletes it. A comment
    /// keeps its place in the list when edited.
    pub fn set(&mut self, anchor: Anchor, text: &str) {
        let text = text.trim();
        let at = self.pending.iter().position(|c| c.anchor == anchor);
        match (at, text.is_empty()) {
            (Some(i), true) => {
                self.pending.remove(i);
            }
            (Some(i), false) => self.pending[i].text = text.to_string(),
            (None, true) => {}
            (None, false) => self.pending.push(ReviewComment {
                anchor,
                text: text.to_string(),
            }),
        }
    }

    /// The pending comments on `path` (its file comment included).
    pub fn count_on(&self, path: &str) -> usize {
        self.pending
            .iter()
            .filter(|c| c.anchor.path() == Some(path))
            .count()
    }

    /// The pending comment on the line `line` of `path` or on a range that ends there: the
    /// one `m` edits on that line.
    pub fn on_line(&self, path: &str, line: &DiffLine) -> Option<&ReviewComment> {
        let line_comment = self.pending.iter().find(
            |c| matches!(&c.anchor, Anchor::Line { path: p, line: l } if p == path && l.is(line)),
        );
        line_comment.or_else(|| {
            self.pending.iter().find(|c| {
                matches!(&c.anchor, Anchor::Range { path: p, last, .. } if p == path && last.is(line))
            })
        })
    }

    /// The comments of `file` as the diff shows them, under their lines (a range's under its
    /// last line, named by its first line); recorded ones marked so.
    pub fn marks(&self, file: &FileDiff) -> LineComments {
        let mut marks = LineComments::default();
        let lines = file.hunks.iter().flat_map(|h| h.lines.iter());
        for line in lines {
            let mut said = Vec::new();
            for (c, done) in self
                .pending
                .iter()
                .map(|c| (c, false))
                .chain(self.recorded.iter().map(|c| (c, true)))
            {
                let shown = match &c.anchor {
                    Anchor::Line { path, line: l } if *path == file.path && l.is(line) => {
                        c.text.clone()
                    }
                    Anchor::Range { path, first, last } if *path == file.path && last.is(line) => {
                        format!("(from line {}) {}", first.number(), c.text)
                    }
                    _ => continue,
                };
                said.push(if done {
                    format!("{shown} (recorded)")
                } else {
                    format!("{shown} (pending)")
                });
            }
            if !said.is_empty() {
                marks.set(&file.path, line, &said.join(" · "));
            }
        }
        marks
    }

    /// The numbered list of the pending comments, in file and line order (empty when none).
    pub fn numbered(&self) -> String {
        let mut sorted: Vec<&ReviewComment> = self.pending.iter().collect();
        sorted.sort_by_key(|c| c.anchor.sort_key());
        sorted
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}. {}: {}", i + 1, c.anchor.describe(), c.text))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The one message "request changes" sends: the numbered comments, then the summary.
    /// `None` when there is nothing to say.
    pub fn request_message(&self, summary: &str) -> Option<String> {
        let summary = summary.trim();
        let list = self.numbered();
        match (list.is_empty(), summary.is_empty()) {
            (true, true) => None,
            (true, false) => Some(format!(
                "I reviewed your changes and request changes.\n\n{summary}"
            )),
            (false, true) => Some(format!(
                "I reviewed your changes and request changes:\n\n{list}"
            )),
            (false, false) => Some(format!(
                "I reviewed your changes and request changes:\n\n{list}\n\n{summary}"
            )),
        }
    }

    /// The message approving the patch with the pending comments (none without comments).
    pub fn approval_message(&self) -> Option<String> {
        let list = self.numbered();
        (!list.is_empty()).then(|| format!("My comments on the session patch:\n\n{list}"))
    }

    /// Submit the pending comments as "comment": they are kept as recorded, not sent. The
    /// summary, if any, is recorded as the review's own comment. Returns what was recorded.
    pub fn record(&mut self, summary: &str) -> Vec<ReviewComment> {
        self.set(Anchor::Review, summary);
        let mut done = std::mem::take(&mut self.pending);
        done.sort_by_key(|c| c.anchor.sort_key());
        self.recorded.extend(done.iter().cloned());
        done
    }

    /// Submitted (requested or approved): nothing is pending any more.
    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }
}

/// `text` in at most `max` characters: its head and tail around ` ... `.
pub fn shorten(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(5);
    let head = keep / 2;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{} ... {}", start.trim_end(), end.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff() -> FileDiff {
        FileDiff::compute(
            "inventory.py",
            Some("a\nb\nreturn total < threshold\nc\n"),
            "a\nb\nreturn total <= threshold\nc\nd\n",
        )
    }

    fn line(d: &FileDiff, kind: LineKind) -> DiffLine {
        d.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == kind)
            .cloned()
            .unwrap()
    }

    #[test]
    fn the_request_is_one_numbered_message_with_file_line_side_and_quote() {
        let d = diff();
        let added = line(&d, LineKind::Added);
        let removed = line(&d, LineKind::Removed);
        let mut c = ReviewComments::default();
        c.set(
            Anchor::Line {
                path: "inventory.py".into(),
                line: LineRef::of(&added),
            },
            "  right: at most  ",
        );
        c.set(
            Anchor::Line {
                path: "inventory.py".into(),
                line: LineRef::of(&removed),
            },
            "the old bug",
        );
        c.set(
            Anchor::File {
                path: "app.py".into(),
            },
            "call it",
        );
        let want = "I reviewed your changes and request changes:\n\n\
            1. app.py (the file): call it\n\
            2. inventory.py:3 (old) \"return total < threshold\": the old bug\n\
            3. inventory.py:3 (new) \"return total <= threshold\": right: at most\n\n\
            add a test";
        assert_eq!(c.request_message(" add a test ").as_deref(), Some(want));
        assert_eq!(ReviewComments::default().request_message("  "), None);
    }

    #[test]
    fn pending_comments_are_edited_in_place_and_deleted_when_emptied() {
        let d = diff();
        let added = line(&d, LineKind::Added);
        let at = Anchor::Line {
            path: "inventory.py".into(),
            line: LineRef::of(&added),
        };
        let file = Anchor::File {
            path: "inventory.py".into(),
        };
        let mut c = ReviewComments::default();
        c.set(at.clone(), "first");
        c.set(file.clone(), "whole file");
        c.set(at.clone(), "second thoughts");
        assert_eq!(c.pending().len(), 2);
        assert_eq!(c.pending()[0].text, "second thoughts");
        assert_eq!(c.count_on("inventory.py"), 2);
        assert_eq!(
            c.on_line("inventory.py", &added).map(|c| c.text.as_str()),
            Some("second thoughts")
        );
        c.set(at, " ");
        assert_eq!(c.pending().len(), 1);
        assert!(c.on_line("inventory.py", &added).is_none());
        // Recorded: kept, no longer pending, still shown.
        let done = c.record("overall fine");
        assert_eq!(done.len(), 2);
        assert!(c.is_empty() && c.recorded().len() == 2);
    }

    #[test]
    fn a_range_names_both_ends_and_shows_under_its_last_line() {
        let d = diff();
        let lines = &d.hunks[0].lines;
        let first = LineRef::of(&lines[0]);
        let last = LineRef::of(lines.last().unwrap());
        let mut c = ReviewComments::default();
        c.set(
            Anchor::Range {
                path: "inventory.py".into(),
                first,
                last,
            },
            "this block",
        );
        assert_eq!(
            c.numbered(),
            "1. inventory.py:1-5 (new) \"a\" … \"d\": this block"
        );
        let marks = c.marks(&d);
        let shown = marks.on("inventory.py", lines.last().unwrap()).unwrap();
        assert_eq!(shown.text, "(from line 1) this block (pending)");
    }

    #[test]
    fn long_lines_are_quoted_head_and_tail() {
        let long = format!("return {} <= threshold", "x".repeat(100));
        let s = shorten(&long, QUOTE_CHARS);
        assert!(s.chars().count() <= QUOTE_CHARS, "{s}");
        assert!(
            s.starts_with("return xx") && s.ends_with("<= threshold"),
            "{s}"
        );
        assert!(s.contains(" ... "));
    }
}
