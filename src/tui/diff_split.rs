//! One [`FileDiff`] side by side: the old file on the left, the new one on the right, each
//! side with its own line numbers, syntax colours and the changed words emphasised (the same
//! segments the unified view draws). Within a hunk a run of removed lines and the run of added
//! lines after it are paired row by row, as the word emphasis pairs them; an unchanged line
//! shows on both sides. A line longer than its side wraps under itself, the continuation rows
//! marked `↪` in the number column.
//!
//! The rows keep the unified view's contract ([`DiffWindow`]): hunk and line starts for the
//! line cursor, a window built without building the rest, the comments under the row of their
//! line. A paired removed and added line share a row, so two lines can start on one row.
//! Owns the layout of a side-by-side row; the line kinds' colours and the hunk headers are
//! `diff_lines`'.

use crate::diff::{DiffLine, FileDiff, FileStatus, Hunk, LineKind};
use crate::tui::diff_lines::{self, DiffWindow, HunkMarks};
use crate::tui::theme::{rgb, Theme};
use crate::tui::wrap;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// What one row of the split view holds: a hunk's header, or a line on either side (by its
/// index among all the hunks' lines).
enum Row<'a> {
    Header(usize, &'a Hunk),
    Pair {
        hunk: usize,
        left: Option<(usize, &'a DiffLine)>,
        right: Option<(usize, &'a DiffLine)>,
    },
}

/// The rows of `file`, lines paired.
fn rows(file: &FileDiff) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    let mut index = 0usize;
    for (h, hunk) in file.hunks.iter().enumerate() {
        out.push(Row::Header(h, hunk));
        let lines = &hunk.lines;
        let mut i = 0;
        while i < lines.len() {
            if lines[i].kind == LineKind::Context {
                let l = Some((index + i, &lines[i]));
                out.push(Row::Pair {
                    hunk: h,
                    left: l,
                    right: l,
                });
                i += 1;
                continue;
            }
            let rem = i;
            while i < lines.len() && lines[i].kind == LineKind::Removed {
                i += 1;
            }
            let add = i;
            while i < lines.len() && lines[i].kind == LineKind::Added {
                i += 1;
            }
            let (removed, added) = (add - rem, i - add);
            for k in 0..removed.max(added) {
                let side = |start: usize, n: usize| {
                    (k < n).then(|| (index + start + k, &lines[start + k]))
                };
                out.push(Row::Pair {
                    hunk: h,
                    left: side(rem, removed),
                    right: side(add, added),
                });
            }
        }
        index += lines.len();
    }
    out
}

/// Rows `first..first + count` of the split view of `file` at `width`, with the first row of
/// each hunk and of each line.
pub fn render_window<'f>(
    file: &'f FileDiff,
    theme: &Theme,
    width: usize,
    marks: HunkMarks<'_>,
    first: usize,
    count: usize,
) -> DiffWindow {
    if let Some(g) = marks.folded {
        return diff_lines::folded(file, g, theme, first, count);
    }
    let num_w = diff_lines::number_width(file);
    let left_w = width.saturating_sub(1) / 2;
    let right_w = width.saturating_sub(1 + left_w);
    let mut win = diff_lines::RowWindow::new(first, count);
    let mut hunk_starts = Vec::new();
    let mut line_starts = vec![0usize; file.hunks.iter().map(|h| h.lines.len()).sum()];
    if file.status == FileStatus::Binary {
        win.emit(1, || {
            vec![Line::styled("  binary content not shown", theme.dim())]
        });
    }
    for r in rows(file) {
        let (hunk, left, right) = match r {
            Row::Header(h, hunk) => {
                if let Some(gaps) = marks.gaps {
                    gap_rows(&mut win, file, h, gaps, theme, (left_w, right_w), num_w);
                }
                hunk_starts.push(win.row);
                win.emit(1, || vec![diff_lines::hunk_header(hunk, h, theme, marks)]);
                continue;
            }
            Row::Pair { hunk, left, right } => (hunk, left, right),
        };
        let deselected = marks
            .selected
            .and_then(|s| s.get(hunk))
            .is_some_and(|sel| !sel);
        for (i, _) in left.iter().chain(right.iter()) {
            line_starts[*i] = win.row;
        }
        let side = |s: Option<(usize, &'f DiffLine)>, w: usize, old: bool| Side {
            line: s.map(|(_, l)| l),
            number: s.and_then(|(_, l)| if old { l.old_no } else { l.new_no }),
            cursor: s.is_some_and(|(i, _)| marks.marks_line(i)),
            width: w,
            num_w,
            deselected,
        };
        let (l, rt) = (side(left, left_w, true), side(right, right_w, false));
        let height = l.rows(theme).max(rt.rows(theme));
        win.emit(height, || pair_rows(&l, &rt, theme, height));
        // The comments, under the row: the removed line's, then the added or unchanged one's.
        let same = matches!((left, right), (Some((a, _)), Some((b, _))) if a == b);
        let commented = left.into_iter().chain(right.filter(|_| !same));
        for (_, dl) in commented {
            let c = diff_lines::comment_rows(file, dl, theme, width, num_w, marks);
            if !c.is_empty() {
                win.emit(c.len(), || c);
            }
        }
    }
    DiffWindow {
        total: win.row,
        lines: win.lines,
        hunk_starts,
        line_starts,
    }
}

/// The rows of the gap before hunk `h`: one folded row across both sides, or its unchanged
/// lines on both sides.
fn gap_rows(
    win: &mut diff_lines::RowWindow,
    file: &FileDiff,
    h: usize,
    gaps: crate::tui::diff_gaps::GapMarks<'_>,
    theme: &Theme,
    (left_w, right_w): (usize, usize),
    num_w: usize,
) {
    use crate::tui::diff_gaps;
    if diff_gaps::is_folded(file, h, gaps) {
        win.emit(1, || vec![diff_gaps::folded_row(file, h, theme)]);
        return;
    }
    for dl in diff_gaps::lines(file, h, gaps) {
        let side = |w: usize, number: Option<usize>| Side {
            line: Some(&dl),
            number,
            cursor: false,
            width: w,
            num_w,
            deselected: false,
        };
        let (l, r) = (side(left_w, dl.old_no), side(right_w, dl.new_no));
        let height = l.rows(theme).max(r.rows(theme));
        win.emit(height, || pair_rows(&l, &r, theme, height));
    }
}

/// One side of a row.
struct Side<'a> {
    line: Option<&'a DiffLine>,
    /// The line's number on this side (old on the left, new on the right).
    number: Option<usize>,
    cursor: bool,
    width: usize,
    num_w: usize,
    deselected: bool,
}

impl Side<'_> {
    /// Rows this side takes: one when it fits (decided by a width sum), else as wrapped.
    fn rows(&self, theme: &Theme) -> usize {
        let Some(dl) = self.line else {
            return 1;
        };
        let mut w = self.num_w + 2;
        for seg in &dl.segments {
            w += diff_lines::cells(&seg.text);
        }
        if dl.no_newline {
            w += diff_lines::NO_NEWLINE.width();
        }
        if w <= self.width {
            1
        } else {
            self.lines(theme).len()
        }
    }

    /// The side's rows, each padded to its width.
    fn lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let Some(dl) = self.line else {
            return vec![Line::raw(" ".repeat(self.width))];
        };
        let (sign, bg, emph_bg, sign_fg) = match dl.kind {
            LineKind::Added => ("+", Some(theme.added_bg), theme.added_emph_bg, theme.added),
            LineKind::Removed => (
                "-",
                Some(theme.removed_bg),
                theme.removed_emph_bg,
                theme.removed,
            ),
            LineKind::Context => (" ", None, theme.selection_bg, theme.dim),
        };
        let changed = dl.kind != LineKind::Context;
        let dim = self.deselected && changed;
        // A deselected hunk's changes are dimmed without backgrounds: they will not apply.
        let bg = if dim { None } else { bg };
        let base = bg.map_or(Style::default(), |c| Style::default().bg(c));
        let number = match self.number {
            Some(n) => format!("{n:>w$} ", w = self.num_w),
            None => " ".repeat(self.num_w + 1),
        };
        let gutter_style = if self.cursor {
            theme
                .fg(theme.accent)
                .bg(theme.selection_bg)
                .add_modifier(Modifier::BOLD)
        } else {
            theme.fg(theme.line_number)
        };
        let mut spans = vec![
            Span::styled(number, gutter_style),
            Span::styled(sign, base.fg(sign_fg)),
        ];
        for seg in &dl.segments {
            let mut s = match (dim, seg.fg) {
                (true, _) => base.fg(theme.dim),
                (false, Some(c)) => base.fg(rgb(c)),
                (false, None) => base.fg(theme.text),
            };
            if seg.emph && !dim {
                s = s.bg(emph_bg);
            }
            spans.push(Span::styled(diff_lines::expand_tabs(&seg.text), s));
        }
        if dl.no_newline {
            spans.push(Span::styled(diff_lines::NO_NEWLINE, theme.dim()));
        }
        let marker = format!("{}↪ ", " ".repeat(self.num_w.saturating_sub(1)));
        let indent = [Span::styled(marker, theme.fg(theme.line_number))];
        let mut wrapped = wrap::wrap(&Line::from(spans), self.width, &indent);
        for line in &mut wrapped {
            let w: usize = line.spans.iter().map(|s| s.content.width()).sum();
            if w < self.width {
                line.spans
                    .push(Span::styled(" ".repeat(self.width - w), base));
            }
        }
        wrapped
    }
}

/// The `height` rows of a pair: the left side, a rule, the right side (the shorter padded).
fn pair_rows(
    left: &Side<'_>,
    right: &Side<'_>,
    theme: &Theme,
    height: usize,
) -> Vec<Line<'static>> {
    let (mut l, mut r) = (left.lines(theme), right.lines(theme));
    l.resize_with(height, || Line::raw(" ".repeat(left.width)));
    r.resize_with(height, || Line::raw(" ".repeat(right.width)));
    l.into_iter()
        .zip(r)
        .map(|(l, r)| {
            let mut spans = l.spans;
            spans.push(Span::styled("│", theme.fg(theme.border)));
            spans.extend(r.spans);
            Line::from(spans)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::line_comments::LineComments;

    fn text(l: &Line<'_>) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_changed_line_has_its_old_and_new_text_on_one_row() {
        let before = "a\nb\nold words here\nd\n";
        let after = "a\nb\nnew words here\nd\nadded at the end\n";
        let file = FileDiff::compute("x.txt", Some(before), after);
        let w = render_window(&file, &Theme::dark(), 80, HunkMarks::default(), 0, 100);
        let rows: Vec<String> = w.lines.iter().map(text).collect();
        let row = rows.iter().find(|r| r.contains("old words")).unwrap();
        assert!(row.contains("new words here"), "{rows:#?}");
        assert!(row.find("old").unwrap() < row.find("new").unwrap());
        let added = rows
            .iter()
            .find(|r| r.contains("added at the end"))
            .unwrap();
        assert!(
            added.split('│').next().unwrap().trim().is_empty(),
            "{added}"
        );
        let mut pairs = rows.iter().filter(|r| r.contains('│'));
        assert!(
            pairs.clone().count() >= 5 && pairs.all(|r| r.width() == 80),
            "{rows:#?}"
        );
        // The removed and the added line start on the same row.
        let index = |kind| {
            file.hunks[0]
                .lines
                .iter()
                .position(|l| l.kind == kind)
                .unwrap()
        };
        let (rem, add) = (index(LineKind::Removed), index(LineKind::Added));
        assert_eq!(w.line_starts[rem], w.line_starts[add]);
    }

    #[test]
    fn long_lines_wrap_with_a_marker_and_windows_are_slices() {
        let before: String = (0..30)
            .map(|i| format!("line {i} with some words\n"))
            .collect();
        let after = before.replace(
            "line 12 with some words",
            "line 12 with some words and a great many more words that cannot fit on half a narrow screen",
        );
        let file = FileDiff::compute("x.txt", Some(&before), &after);
        let theme = Theme::dark();
        let mut comments = LineComments::default();
        let removed = file.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Removed)
            .unwrap();
        comments.set("x.txt", removed, "why drop it?");
        let selected = vec![true];
        let marks = HunkMarks {
            selected: Some(&selected),
            focus: Some(0),
            cursor: Some(3),
            comments: Some(&comments),
            selection: None,
            folded: None,
            gaps: None,
        };
        let whole = render_window(&file, &theme, 60, marks, 0, usize::MAX);
        let rows: Vec<String> = whole.lines.iter().map(text).collect();
        assert!(rows.iter().any(|r| r.contains('↪')), "{rows:#?}");
        assert!(rows.iter().any(|r| r.contains("why drop it?")), "{rows:#?}");
        assert_eq!(whole.total, whole.lines.len());
        for (first, count) in [(0, 3), (2, 5), (5, 100), (100, 4)] {
            let w = render_window(&file, &theme, 60, marks, first, count);
            assert_eq!(w.total, whole.total);
            assert_eq!(w.line_starts, whole.line_starts);
            let want: Vec<_> = whole
                .lines
                .iter()
                .skip(first)
                .take(count)
                .cloned()
                .collect();
            assert_eq!(w.lines, want, "rows {first}+{count}");
        }
    }
}
