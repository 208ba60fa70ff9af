//! A reviewer's comments on lines of a diff: which line each one is on (its kind and numbers,
//! so it can be found again in a diff of the same change) and the text the model reads for
//! them, one block per comment:
//!
//! ```text
//! path:LINE: the quoted line
//! the comment
//! ```
//!
//! LINE is the line's number in the new file for an added or unchanged line, and in the old
//! file for a removed one.

use crate::diff::{DiffLine, LineKind};

/// One comment on one line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineComment {
    pub path: String,
    pub kind: LineKind,
    pub old_no: Option<usize>,
    pub new_no: Option<usize>,
    /// The line's text, as it is quoted to the model.
    pub quoted: String,
    pub text: String,
}

impl LineComment {
    pub fn new(path: &str, line: &DiffLine, text: &str) -> Self {
        Self {
            path: path.to_string(),
            kind: line.kind,
            old_no: line.old_no,
            new_no: line.new_no,
            quoted: line.text().trim_end_matches(['\n', '\r']).to_string(),
            text: text.trim().to_string(),
        }
    }

    /// Whether the comment is on `line` (of a diff of `path`).
    pub fn is_on(&self, path: &str, line: &DiffLine) -> bool {
        self.path == path
            && self.kind == line.kind
            && self.old_no == line.old_no
            && self.new_no == line.new_no
    }

    /// The line number the model is told: the new file's, or the old file's for a removed
    /// line.
    pub fn number(&self) -> usize {
        match self.kind {
            LineKind::Removed => self.old_no,
            LineKind::Added | LineKind::Context => self.new_no,
        }
        .unwrap_or(0)
    }

    /// The comment as the model reads it.
    pub fn block(&self) -> String {
        format!(
            "{}:{}: {}\n{}",
            self.path,
            self.number(),
            self.quoted,
            self.text
        )
    }
}

/// The comments of a review, one per line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineComments {
    list: Vec<LineComment>,
}

impl LineComments {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The comment on `line` of `path`, if there is one.
    pub fn on(&self, path: &str, line: &DiffLine) -> Option<&LineComment> {
        self.list.iter().find(|c| c.is_on(path, line))
    }

    /// Put `text` on `line`, replacing the comment there; empty text removes it.
    pub fn set(&mut self, path: &str, line: &DiffLine, text: &str) {
        self.list.retain(|c| !c.is_on(path, line));
        if !text.trim().is_empty() {
            self.list.push(LineComment::new(path, line, text));
        }
    }

    /// Every block, in file and line order, separated by blank lines (empty when there are
    /// none).
    pub fn blocks(&self) -> String {
        let mut sorted: Vec<&LineComment> = self.list.iter().collect();
        sorted.sort_by_key(|c| (c.path.clone(), c.number(), c.kind != LineKind::Removed));
        sorted
            .iter()
            .map(|c| c.block())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// `feedback` (what the person typed, maybe nothing) followed by the blocks.
    pub fn with_feedback(&self, feedback: &str) -> String {
        let feedback = feedback.trim();
        match (feedback.is_empty(), self.is_empty()) {
            (_, true) => feedback.to_string(),
            (true, false) => self.blocks(),
            (false, false) => format!("{feedback}\n\n{}", self.blocks()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::FileDiff;

    #[test]
    fn removed_lines_are_numbered_in_the_old_file() {
        let d = FileDiff::compute("a.py", Some("x\nold\ny\n"), "x\nz\nnew\ny\n");
        let lines = &d.hunks[0].lines;
        let mut c = LineComments::default();
        let removed = lines.iter().find(|l| l.kind == LineKind::Removed).unwrap();
        let added = lines.iter().rfind(|l| l.kind == LineKind::Added).unwrap();
        c.set("a.py", added, "  why new?  ");
        c.set("a.py", removed, "keep this");
        assert_eq!(
            c.blocks(),
            "a.py:2: old\nkeep this\n\na.py:3: new\nwhy new?"
        );
        assert_eq!(c.with_feedback(""), c.blocks());
        assert!(c.with_feedback(" no ").starts_with("no\n\na.py:2: old"));
        c.set("a.py", removed, " ");
        assert_eq!(c.len(), 1);
    }
}
