//! The unchanged lines a diff leaves out: before its first hunk and between two hunks (each
//! hunk already shows three lines of context on either side). In a review each such gap is a
//! row `… N lines …`; the change review, which has the file's text, opens one on Enter (the
//! line cursor on a line beside it) and then shows its lines as context.
//!
//! Owns: where the gaps are and their rows (folded or opened), for the unified and the split
//! view. Does not own: which gaps are open or the key that opens one (the review does).

use crate::diff::{DiffLine, FileDiff, LineKind, Segment};
use crate::tui::theme::Theme;
use ratatui::text::{Line, Span};

/// How a review shows a diff's gaps.
#[derive(Debug, Clone, Copy)]
pub struct GapMarks<'a> {
    /// Per hunk: the gap before it is open.
    pub open: &'a [bool],
    /// The new text, whose lines an open gap shows (absent: gaps cannot open).
    pub text: Option<&'a str>,
}

/// The unchanged lines before hunk `h`: the 0-based first line of the gap in the old and the
/// new text, and how many lines it holds (0: none).
pub fn before(file: &FileDiff, h: usize) -> (usize, usize, usize) {
    let Some(hunk) = file.hunks.get(h) else {
        return (0, 0, 0);
    };
    let (old, new) = match h.checked_sub(1).and_then(|p| file.hunks.get(p)) {
        Some(prev) => (prev.old_lines.end, prev.new_lines.end),
        None => (0, 0),
    };
    // A new or deleted file has one hunk from line 1: no gap.
    let n = hunk.new_lines.start.saturating_sub(new);
    let n_old = hunk.old_lines.start.saturating_sub(old);
    (old, new, n.min(n_old))
}

/// The rows of the gap before hunk `h`: none when there is no gap; one `… N lines …` row while
/// it is folded; its lines as context rows once open.
pub fn lines(file: &FileDiff, h: usize, gaps: GapMarks<'_>) -> Vec<DiffLine> {
    let (old, new, n) = before(file, h);
    let Some(text) = gaps
        .text
        .filter(|_| gaps.open.get(h).copied().unwrap_or(false))
    else {
        return Vec::new();
    };
    text.lines()
        .skip(new)
        .take(n)
        .enumerate()
        .map(|(i, l)| DiffLine {
            kind: LineKind::Context,
            old_no: Some(old + i + 1),
            new_no: Some(new + i + 1),
            segments: vec![Segment {
                text: l.to_string(),
                fg: None,
                emph: false,
            }],
            no_newline: false,
        })
        .collect()
}

/// Whether the gap before hunk `h` is shown folded: it has lines, and is not open.
pub fn is_folded(file: &FileDiff, h: usize, gaps: GapMarks<'_>) -> bool {
    before(file, h).2 > 0 && !(gaps.text.is_some() && gaps.open.get(h).copied().unwrap_or(false))
}

/// The row of a folded gap: `… 12 lines …` (the footer names the key that opens it while the
/// line cursor is beside it).
pub fn folded_row(file: &FileDiff, h: usize, theme: &Theme) -> Line<'static> {
    let n = before(file, h).2;
    let lines = if n == 1 { "line" } else { "lines" };
    Line::from(Span::styled(format!("  … {n} {lines} …"), theme.dim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_hunks() -> (String, String, FileDiff) {
        let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 6\n", "six\n")
            .replace("line 25\n", "twenty-five\n");
        let d = FileDiff::compute("t.txt", Some(&before), &after);
        (before, after, d)
    }

    #[test]
    fn gaps_lie_before_the_first_hunk_and_between_hunks() {
        let (_, after, d) = two_hunks();
        assert_eq!(d.hunks.len(), 2);
        // Hunk 1 shows lines 3..=9; hunk 2 lines 22..=28.
        assert_eq!(before(&d, 0), (0, 0, 2));
        assert_eq!(before(&d, 1), (9, 9, 12));
        assert_eq!(before(&d, 2), (0, 0, 0));
        let closed = GapMarks {
            open: &[false, false],
            text: Some(&after),
        };
        assert!(is_folded(&d, 1, closed));
        assert!(lines(&d, 1, closed).is_empty());
        let open = GapMarks {
            open: &[false, true],
            text: Some(&after),
        };
        assert!(!is_folded(&d, 1, open));
        let shown = lines(&d, 1, open);
        assert_eq!(shown.len(), 12);
        assert_eq!(shown[0].text(), "line 10");
        assert_eq!((shown[0].old_no, shown[0].new_no), (Some(10), Some(10)));
        assert_eq!(shown[11].text(), "line 21");
        // Without the text (the session review) a gap stays folded.
        let no_text = GapMarks {
            open: &[true, true],
            text: None,
        };
        assert!(is_folded(&d, 1, no_text));
        // A new file has no gap.
        let new = FileDiff::compute("n.txt", None, "a\nb\n");
        assert_eq!(before(&new, 0).2, 0);
    }
}
