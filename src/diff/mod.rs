//! Diffs for review: the hunks of a file change, word-level emphasis of the changed parts of
//! paired removed/added lines, and syntax colours from syntect, all as plain styled data
//! ([`FileDiff`] of [`DiffLine`]s of [`Segment`]s) that the interface turns into widgets.
//!
//! Owns: computing hunks from a before/after text ([`FileDiff::compute`]), reading a unified
//! git patch back into the same shape ([`patch::parse`]), applying only some hunks of a
//! change ([`apply_hunks`]), the caps that keep this cheap (past [`Highlighter::limit`] lines,
//! [`PLAIN_TEXT_LINES`] unless configured, a diff is shown without syntax colours and emphasis),
//! and telling lock and generated files apart ([`generated::kind`]), which a review folds.
//!
//! Does not own: drawing, colours of roles (the theme decides what "added" looks like; here a
//! line only says it *is* added), or when this work runs. Everything here is synchronous and
//! may take a second on a file of thousands of lines: callers run it off the draw path, and
//! [`FileDiff::compute_in_stages`] hands over a diff whose first screens are coloured first.
//!
//! Invariant: for a computed diff, applying every hunk gives exactly `after` and applying none
//! gives exactly `before` (line endings and a missing final newline included).

pub mod combine;
mod emphasis;
pub mod generated;
pub mod highlight;
mod hunks;
mod paint;
pub mod patch;

pub use highlight::{Highlighter, Rgb};
pub use hunks::apply_hunks;
pub use paint::Painter;

/// Past this many lines (either side), a diff is shown as plain text: no syntax colours, no
/// word emphasis. The default of `[interface] highlight_limit`; [`Highlighter::with_limit`]
/// sets another.
pub const PLAIN_TEXT_LINES: usize = 20_000;

/// Diff lines [`FileDiff::compute_in_stages`] colours before handing the diff over the first
/// time: several screens of the review, so the first view is coloured at once.
pub const FIRST_STAGE_LINES: usize = 200;

/// Lines of unchanged context around each change.
pub const CONTEXT_LINES: usize = 3;

/// What a diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// A run of text within a line: its syntax colour (if highlighted) and whether it is a changed
/// part of a paired line (word-level emphasis).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub text: String,
    pub fg: Option<Rgb>,
    pub emph: bool,
}

/// One line of a diff, without its line terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    /// 1-based line number in the old text (absent for added lines).
    pub old_no: Option<usize>,
    /// 1-based line number in the new text (absent for removed lines).
    pub new_no: Option<usize>,
    pub segments: Vec<Segment>,
    /// The line has no final newline in its file.
    pub no_newline: bool,
}

impl DiffLine {
    /// The line's text without styles.
    pub fn text(&self) -> String {
        self.segments.iter().map(|s| s.text.as_str()).collect()
    }
}

/// A group of changes with their context, as in a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based first old line and count (as in `@@ -a,b +c,d @@`).
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    /// 0-based line ranges this hunk covers in the old and new texts (context included).
    pub old_lines: std::ops::Range<usize>,
    pub new_lines: std::ops::Range<usize>,
    pub lines: Vec<DiffLine>,
}

impl Hunk {
    /// The `@@ -a,b +c,d @@` header.
    pub fn header(&self) -> String {
        format!(
            "@@ -{},{} +{},{} @@",
            self.old_start, self.old_len, self.new_start, self.new_len
        )
    }

    pub fn added(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Added)
            .count()
    }

    pub fn removed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Removed)
            .count()
    }
}

/// What happened to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    Modified,
    Added,
    Deleted,
    /// Renamed from the given path.
    Renamed {
        from: String,
    },
    /// A binary file changed: no text lines are shown.
    Binary,
}

/// The diff of one file, ready to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub path: String,
    pub status: FileStatus,
    pub hunks: Vec<Hunk>,
    /// Syntax colours and word emphasis were applied (false past the highlighter's limit).
    pub styled: bool,
}

impl FileDiff {
    /// [`FileDiff::compute_with`] the default syntax theme.
    pub fn compute(path: &str, before: Option<&str>, after: &str) -> Self {
        Self::compute_with(path, before, after, &Highlighter::default())
    }

    /// The diff from `before` (`None`: a new file) to `after` for `path` (its extension picks
    /// the syntax), coloured by `hl`.
    pub fn compute_with(path: &str, before: Option<&str>, after: &str, hl: &Highlighter) -> Self {
        let mut diff = Self::compute_plain(path, before, after, hl.limit());
        if diff.styled {
            Painter::new(hl, path, after).paint(&mut diff, usize::MAX);
        }
        diff
    }

    /// The diff with word emphasis but no syntax colours yet (paint them with a [`Painter`]
    /// when [`FileDiff::styled`]): plain past `limit` lines on either side.
    pub fn compute_plain(path: &str, before: Option<&str>, after: &str, limit: usize) -> Self {
        let old = before.unwrap_or("");
        let styled = line_count(old) <= limit && line_count(after) <= limit;
        let mut hunks = hunks::compute(old, after);
        if styled {
            emphasis::emphasize(&mut hunks);
        }
        Self {
            path: path.to_string(),
            status: if before.is_none() {
                FileStatus::Added
            } else {
                FileStatus::Modified
            },
            hunks,
            styled,
        }
    }

    /// [`FileDiff::compute_with`] in two stages for a large change: `ready` gets the diff with
    /// its first [`FIRST_STAGE_LINES`] lines coloured as soon as they are, then, unless that
    /// was all of it, again once every line is. Both diffs have the same hunks.
    pub fn compute_in_stages(
        path: &str,
        before: Option<&str>,
        after: &str,
        hl: &Highlighter,
        mut ready: impl FnMut(FileDiff),
    ) {
        let mut diff = Self::compute_plain(path, before, after, hl.limit());
        if diff.styled {
            let mut painter = Painter::new(hl, path, after);
            if !painter.paint(&mut diff, FIRST_STAGE_LINES) {
                ready(diff.clone());
                painter.paint(&mut diff, usize::MAX);
            }
        }
        ready(diff)
    }

    /// Lines added in all hunks.
    pub fn added(&self) -> usize {
        self.hunks.iter().map(Hunk::added).sum()
    }

    /// Lines removed in all hunks.
    pub fn removed(&self) -> usize {
        self.hunks.iter().map(Hunk::removed).sum()
    }

    /// Whether one side of the file is empty (a new or a deleted file): a side-by-side view
    /// of it would leave one half blank.
    pub fn one_sided(&self) -> bool {
        matches!(self.status, FileStatus::Added | FileStatus::Deleted)
    }

    /// Lines in all hunks.
    pub fn line_count(&self) -> usize {
        self.hunks.iter().map(|h| h.lines.len()).sum()
    }

    /// The diff as unified-diff text (`--- a/path`, `+++ b/path`, hunks), without colours:
    /// what copying a change gives.
    pub fn unified(&self) -> String {
        let old = match &self.status {
            FileStatus::Added => "/dev/null".to_string(),
            FileStatus::Renamed { from } => format!("a/{from}"),
            _ => format!("a/{}", self.path),
        };
        let new = match self.status {
            FileStatus::Deleted => "/dev/null".to_string(),
            _ => format!("b/{}", self.path),
        };
        let mut out = format!("--- {old}\n+++ {new}\n");
        for h in &self.hunks {
            out.push_str(&h.header());
            out.push('\n');
            for l in &h.lines {
                out.push(match l.kind {
                    LineKind::Context => ' ',
                    LineKind::Added => '+',
                    LineKind::Removed => '-',
                });
                out.push_str(&l.text());
                out.push('\n');
                if l.no_newline {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
        out
    }
}

fn line_count(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_headers() {
        let d = FileDiff::compute("a.py", Some("a\nb\nc\n"), "a\nB\nc\nd\n");
        assert_eq!((d.added(), d.removed()), (2, 1));
        assert_eq!(d.hunks.len(), 1);
        assert_eq!(d.hunks[0].header(), "@@ -1,3 +1,4 @@");
        assert!(d.styled);
    }

    #[test]
    fn unified_text_reads_back_as_a_patch() {
        let d = FileDiff::compute("a.py", Some("a\nb\nc\n"), "a\nB\nc\n");
        assert_eq!(
            d.unified(),
            "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn new_file_is_all_added() {
        let d = FileDiff::compute("n.md", None, "x\ny\n");
        assert_eq!(d.status, FileStatus::Added);
        assert_eq!((d.added(), d.removed()), (2, 0));
        assert_eq!(d.hunks[0].header(), "@@ -0,0 +1,2 @@");
    }

    #[test]
    fn stages_colour_the_start_first_then_everything() {
        let before: String = (0..2_000).map(|i| format!("let a{i} = {i};\n")).collect();
        // A change every 10 lines: several hundred diff lines, more than the first stage.
        let after: String = (0..2_000)
            .map(|i| match i % 10 {
                0 => format!("let a{i} = changed;\n"),
                _ => format!("let a{i} = {i};\n"),
            })
            .collect();
        let hl = Highlighter::default();
        let mut stages = Vec::new();
        FileDiff::compute_in_stages("x.rs", Some(&before), &after, &hl, |d| stages.push(d));
        assert_eq!(stages.len(), 2);
        let coloured = |l: &DiffLine| l.segments.iter().any(|s| s.fg.is_some());
        let first = &stages[0];
        assert!(first.hunks[0].lines.iter().all(coloured));
        let last = first.hunks.last().expect("hunks");
        assert!(!last.lines.iter().any(coloured));
        assert_eq!(
            stages[1],
            FileDiff::compute_with("x.rs", Some(&before), &after, &hl)
        );
        // A small change arrives once, fully coloured.
        let mut small = Vec::new();
        FileDiff::compute_in_stages("x.rs", Some("a\n"), "b\n", &hl, |d| small.push(d));
        assert_eq!(small.len(), 1);
    }

    #[test]
    fn huge_diffs_are_plain() {
        let before: String = (0..PLAIN_TEXT_LINES + 5)
            .map(|i| format!("{i}\n"))
            .collect();
        let after = before.replace("17\n", "seventeen\n");
        let d = FileDiff::compute("big.rs", Some(&before), &after);
        assert!(!d.styled);
        // A lower limit (`[interface] highlight_limit`) makes a small file plain too.
        let hl = Highlighter::default().with_limit(3);
        let small = FileDiff::compute_with("s.rs", Some("a\nb\nc\n"), "a\nB\nc\nd\n", &hl);
        assert!(!small.styled);
        let hl = Highlighter::default().with_limit(4);
        let small = FileDiff::compute_with("s.rs", Some("a\nb\nc\n"), "a\nB\nc\nd\n", &hl);
        assert!(small.styled);
        assert!(d
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .all(|l| l.segments.iter().all(|s| s.fg.is_none() && !s.emph)));
    }
}
