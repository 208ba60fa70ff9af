//! One [`FileDiff`] as styled terminal lines, shared by the change review, the session patch
//! and expanded edits in the transcript: a header with +/- counts, hunk headers, a gutter with
//! old and new line numbers, syntax colours, a background by line kind and a stronger one on
//! the words that changed. One function per line kind, as in delta. In a review, the line
//! cursor's gutter is highlighted and a line's comment is shown in the rows under it.

use crate::diff::generated::Generated;
use crate::diff::{DiffLine, FileDiff, FileStatus, Hunk, LineKind};
use crate::tui::diff_gaps::{self, GapMarks};
use crate::tui::keymap::{self, Action, Context};
use crate::tui::line_comments::LineComments;
use crate::tui::theme::{rgb, Theme};
use crate::tui::wrap;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// How hunks are marked: in a review each hunk shows whether it is selected and which one has
/// the focus, which line the cursor is on and the comments on lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct HunkMarks<'a> {
    /// Selected flag per hunk (absent: no marks).
    pub selected: Option<&'a [bool]>,
    pub focus: Option<usize>,
    /// The line cursor: the index of a line among all the hunks' lines.
    pub cursor: Option<usize>,
    /// The comments shown under their lines.
    pub comments: Option<&'a LineComments>,
    /// Lines selected (first and last index, as the cursor counts them), marked as the
    /// cursor is.
    pub selection: Option<(usize, usize)>,
    /// A lock or generated file not opened yet: the diff is one row saying so.
    pub folded: Option<Generated>,
    /// The unchanged lines between hunks, shown as `… N lines …` rows or opened (a review's
    /// window only; absent: not shown, as in the transcript).
    pub gaps: Option<GapMarks<'a>>,
}

impl HunkMarks<'_> {
    /// Whether line `i` (as the cursor counts lines) is marked: the cursor or a selected one.
    pub fn marks_line(&self, i: usize) -> bool {
        self.cursor == Some(i) || self.selection.is_some_and(|(a, b)| a <= i && i <= b)
    }
}

/// The rendered diff plus the first row of each hunk (for jumping to a hunk) and of each line
/// (for keeping the line cursor in view).
pub struct RenderedDiff {
    pub lines: Vec<Line<'static>>,
    pub hunk_starts: Vec<usize>,
    pub line_starts: Vec<usize>,
}

/// The header line: path, status and counts.
pub fn header(file: &FileDiff, theme: &Theme) -> Line<'static> {
    let status = match &file.status {
        FileStatus::Modified => String::new(),
        FileStatus::Added => " (new file)".into(),
        FileStatus::Deleted => " (deleted)".into(),
        FileStatus::Renamed { from } => format!(" (renamed from {from})"),
        FileStatus::Binary => " (binary)".into(),
    };
    let mut spans = vec![
        Span::styled(file.path.clone(), theme.bold().fg(theme.accent)),
        Span::styled(status, theme.dim()),
        Span::raw("  "),
        Span::styled(format!("+{}", file.added()), theme.fg(theme.added)),
        Span::raw(" "),
        Span::styled(format!("-{}", file.removed()), theme.fg(theme.removed)),
    ];
    if !file.styled && file.status != FileStatus::Binary {
        spans.push(Span::styled(
            "  (over [interface] highlight_limit lines: no syntax colours)",
            theme.dim(),
        ));
    }
    Line::from(spans)
}

/// The whole diff of a file for a width.
pub fn render(file: &FileDiff, theme: &Theme, width: usize, marks: HunkMarks<'_>) -> RenderedDiff {
    if let Some(g) = marks.folded {
        let w = folded(file, g, theme, 0, usize::MAX);
        return RenderedDiff {
            lines: w.lines,
            hunk_starts: w.hunk_starts,
            line_starts: w.line_starts,
        };
    }
    let mut lines = Vec::new();
    let mut hunk_starts = Vec::new();
    let mut line_starts = Vec::new();
    let num_w = number_width(file);
    if file.status == FileStatus::Binary {
        lines.push(Line::styled("  binary content not shown", theme.dim()));
    }
    for (i, hunk) in file.hunks.iter().enumerate() {
        hunk_starts.push(lines.len());
        lines.push(hunk_header(hunk, i, theme, marks));
        let deselected = marks
            .selected
            .and_then(|s| s.get(i))
            .is_some_and(|sel| !sel);
        for dl in &hunk.lines {
            let cursor = marks.marks_line(line_starts.len());
            line_starts.push(lines.len());
            lines.extend(diff_line(dl, theme, width, num_w, deselected, cursor));
            lines.extend(comment_rows(file, dl, theme, width, num_w, marks));
        }
    }
    RenderedDiff {
        lines,
        hunk_starts,
        line_starts,
    }
}

/// A window of the diff's rows: only the rows `first..first + count` are built, so drawing a
/// review of a diff with thousands of lines costs what the screen shows (plus one width sum per
/// line to place it).
pub struct DiffWindow {
    /// The visible rows.
    pub lines: Vec<Line<'static>>,
    /// Rows of the whole diff at this width.
    pub total: usize,
    /// The first row of each hunk.
    pub hunk_starts: Vec<usize>,
    /// The first row of each line of the hunks.
    pub line_starts: Vec<usize>,
}

/// The rows `first..first + count` of a view made of groups of rows (a line, its wrapped
/// rows, a comment): a group is built only when some of its rows fall in the window.
pub(super) struct RowWindow {
    first: usize,
    end: usize,
    /// Rows emitted so far, in the window or not.
    pub(super) row: usize,
    /// The rows in the window.
    pub(super) lines: Vec<Line<'static>>,
}

impl RowWindow {
    pub(super) fn new(first: usize, count: usize) -> Self {
        Self {
            first,
            end: first.saturating_add(count),
            row: 0,
            lines: Vec::new(),
        }
    }

    /// A group of `rows` rows, built by `build` only when the window shows some of them.
    pub(super) fn emit(&mut self, rows: usize, build: impl FnOnce() -> Vec<Line<'static>>) {
        if self.row < self.end && self.row + rows > self.first {
            let skip = self.first.saturating_sub(self.row);
            let take = self.end.min(self.row + rows) - (self.row + skip);
            self.lines.extend(build().into_iter().skip(skip).take(take));
        }
        self.row += rows;
    }
}

/// Rows `first..first + count` of [`render`]'s output, built without rendering the rest.
pub fn render_window(
    file: &FileDiff,
    theme: &Theme,
    width: usize,
    marks: HunkMarks<'_>,
    first: usize,
    count: usize,
) -> DiffWindow {
    if let Some(g) = marks.folded {
        return folded(file, g, theme, first, count);
    }
    let num_w = number_width(file);
    let mut win = RowWindow::new(first, count);
    let mut hunk_starts = Vec::new();
    let mut line_starts = Vec::new();
    if file.status == FileStatus::Binary {
        win.emit(1, || {
            vec![Line::styled("  binary content not shown", theme.dim())]
        });
    }
    for (i, hunk) in file.hunks.iter().enumerate() {
        if let Some(gaps) = marks.gaps {
            gap_rows(&mut win, file, i, gaps, theme, width, num_w);
        }
        hunk_starts.push(win.row);
        win.emit(1, || vec![hunk_header(hunk, i, theme, marks)]);
        let deselected = marks
            .selected
            .and_then(|s| s.get(i))
            .is_some_and(|sel| !sel);
        for dl in &hunk.lines {
            let cursor = marks.marks_line(line_starts.len());
            line_starts.push(win.row);
            let rows = line_rows(dl, theme, width, num_w);
            win.emit(rows, || {
                diff_line(dl, theme, width, num_w, deselected, cursor)
            });
            // Comments are few: their rows are built to be counted.
            let comment = comment_rows(file, dl, theme, width, num_w, marks);
            if !comment.is_empty() {
                win.emit(comment.len(), || comment);
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

/// The rows of the gap before hunk `h` (see [`diff_gaps`]): one folded row, or its lines.
pub(super) fn gap_rows(
    win: &mut RowWindow,
    file: &FileDiff,
    h: usize,
    gaps: GapMarks<'_>,
    theme: &Theme,
    width: usize,
    num_w: usize,
) {
    if diff_gaps::is_folded(file, h, gaps) {
        win.emit(1, || vec![diff_gaps::folded_row(file, h, theme)]);
        return;
    }
    for dl in diff_gaps::lines(file, h, gaps) {
        let rows = line_rows(&dl, theme, width, num_w);
        win.emit(rows, || diff_line(&dl, theme, width, num_w, false, false));
    }
}

/// A folded lock or generated file: one row (`Cargo.lock: 120 lines changed (lock file) Enter
/// opens`) in place of its hunks, every hunk and line starting on it (the cursor stays there).
pub fn folded(
    file: &FileDiff,
    g: Generated,
    theme: &Theme,
    first: usize,
    count: usize,
) -> DiffWindow {
    let mut win = RowWindow::new(first, count);
    let changed = file.added() + file.removed();
    let lines = if changed == 1 { "line" } else { "lines" };
    win.emit(1, || {
        vec![Line::from(vec![
            Span::styled(format!("  {}: ", file.path), theme.fg(theme.accent)),
            Span::styled(
                format!("{changed} {lines} changed ({})", g.label()),
                theme.dim(),
            ),
            Span::styled(
                format!(
                    " {} opens",
                    keymap::keys_of(Context::Folded, Action::Unfold)
                ),
                theme.accent(),
            ),
        ])]
    });
    DiffWindow {
        total: win.row,
        lines: win.lines,
        hunk_starts: vec![0; file.hunks.len()],
        line_starts: vec![0; file.line_count()],
    }
}

/// Rows [`diff_line`] gives `dl` at `width`: one when it fits (the common case, decided by a
/// width sum), otherwise counted by wrapping it.
fn line_rows(dl: &DiffLine, theme: &Theme, width: usize, num_w: usize) -> usize {
    // Gutter "OLD NEW " plus the sign.
    let mut w = 2 * num_w + 3;
    for seg in &dl.segments {
        w += cells(&seg.text);
    }
    if dl.no_newline {
        w += NO_NEWLINE.width();
    }
    if w <= width {
        1
    } else {
        diff_line(dl, theme, width, num_w, false, false).len()
    }
}

/// The rows of the comment on `dl`, if it has one: under the line's text, after the gutter.
pub(crate) fn comment_rows(
    file: &FileDiff,
    dl: &DiffLine,
    theme: &Theme,
    width: usize,
    num_w: usize,
    marks: HunkMarks<'_>,
) -> Vec<Line<'static>> {
    let Some(comment) = marks.comments.and_then(|c| c.on(&file.path, dl)) else {
        return Vec::new();
    };
    let pad = " ".repeat(2 * num_w + 2);
    let style = theme.fg(theme.accent).add_modifier(Modifier::ITALIC);
    let line = Line::from(vec![
        Span::raw(pad.clone()),
        Span::styled("└ ", theme.fg(theme.accent)),
        Span::styled(comment.text.clone(), style),
    ]);
    wrap::wrap(&line, width, &[Span::raw(format!("{pad}  "))])
}

pub(crate) fn number_width(file: &FileDiff) -> usize {
    file.hunks
        .iter()
        .map(|h| (h.old_start + h.old_len).max(h.new_start + h.new_len))
        .max()
        .unwrap_or(1)
        .to_string()
        .len()
        .max(3)
}

pub(crate) const NO_NEWLINE: &str = "  (no newline at end of file)";

pub(crate) fn hunk_header(
    hunk: &Hunk,
    i: usize,
    theme: &Theme,
    marks: HunkMarks<'_>,
) -> Line<'static> {
    let mut spans = Vec::new();
    let focused = marks.focus == Some(i);
    if let Some(sel) = marks.selected {
        let on = sel.get(i).copied().unwrap_or(true);
        let pointer = if focused { "▶ " } else { "  " };
        spans.push(Span::styled(
            pointer,
            theme.accent().add_modifier(Modifier::BOLD),
        ));
        let (mark, style) = if on {
            ("[✓] ", theme.fg(theme.added))
        } else {
            ("[ ] ", theme.fg(theme.removed))
        };
        spans.push(Span::styled(mark, style));
    }
    let mut style = theme.fg(theme.hunk_header);
    if focused {
        style = style.add_modifier(Modifier::BOLD).bg(theme.selection_bg);
    }
    spans.push(Span::styled(hunk.header(), style));
    spans.push(Span::styled(
        format!("  hunk {}  +{} -{}", i + 1, hunk.added(), hunk.removed()),
        theme.dim(),
    ));
    Line::from(spans)
}

fn number(n: Option<usize>, w: usize) -> String {
    match n {
        Some(n) => format!("{n:>w$}"),
        None => " ".repeat(w),
    }
}

/// One diff line, wrapped, with the background filled to the width.
fn diff_line(
    dl: &DiffLine,
    theme: &Theme,
    width: usize,
    num_w: usize,
    deselected: bool,
    cursor: bool,
) -> Vec<Line<'static>> {
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
    // A deselected hunk's changes are shown dimmed, without backgrounds: they will not apply.
    let (bg, emph_bg) = if deselected && dl.kind != LineKind::Context {
        (None, None)
    } else {
        (bg, Some(emph_bg))
    };
    let base = match bg {
        Some(c) => Style::default().bg(c),
        None => Style::default(),
    };
    let gutter = format!("{} {} ", number(dl.old_no, num_w), number(dl.new_no, num_w));
    let gutter_style = if cursor {
        theme
            .fg(theme.accent)
            .bg(theme.selection_bg)
            .add_modifier(Modifier::BOLD)
    } else {
        theme.fg(theme.line_number)
    };
    let mut spans = vec![
        Span::styled(gutter.clone(), gutter_style),
        Span::styled(sign, base.fg(sign_fg)),
    ];
    for seg in &dl.segments {
        let mut s = base;
        s = match (deselected && dl.kind != LineKind::Context, seg.fg) {
            (true, _) => s.fg(theme.dim),
            (false, Some(c)) => s.fg(rgb(c)),
            (false, None) => s.fg(theme.text),
        };
        if seg.emph {
            if let Some(e) = emph_bg {
                s = s.bg(e);
            }
        }
        spans.push(Span::styled(expand_tabs(&seg.text), s));
    }
    if dl.no_newline {
        spans.push(Span::styled(NO_NEWLINE, theme.dim()));
    }
    let indent = vec![Span::styled(
        " ".repeat(gutter.width() + 1),
        theme.fg(theme.line_number),
    )];
    let mut wrapped = wrap::wrap(&Line::from(spans), width, &indent);
    if let Some(c) = bg {
        for line in &mut wrapped {
            let w: usize = line.spans.iter().map(|s| s.content.width()).sum();
            if w < width {
                line.spans
                    .push(Span::styled(" ".repeat(width - w), Style::default().bg(c)));
            }
        }
    }
    wrapped
}

/// The cells `s` takes once its tabs are expanded, without building the expanded text when it
/// has none (the common case: this runs for every line of a diff at every frame).
pub(crate) fn cells(s: &str) -> usize {
    if s.contains('\t') {
        expand_tabs(s).width()
    } else {
        s.width()
    }
}

pub(crate) fn expand_tabs(s: &str) -> String {
    if s.contains('\t') {
        s.replace('\t', "    ")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_slices_of_the_whole_rendering() {
        let before: String = (0..60)
            .map(|i| format!("line {i}\twith a tab and some words to wrap at narrow widths\n"))
            .collect();
        let after = before
            .replace("line 3\t", "changed 3\t")
            .replace(
                "line 40\t",
                "a much longer replacement line 40 that will certainly wrap\t",
            )
            .trim_end()
            .to_string();
        let file = FileDiff::compute("a.rs", Some(&before), &after);
        let theme = Theme::dark();
        let selected = vec![true, false, true];
        let mut comments = LineComments::default();
        let commented = &file.hunks[1].lines[2];
        comments.set(
            "a.rs",
            commented,
            "a comment long enough to wrap at the narrow width",
        );
        let marks = HunkMarks {
            selected: Some(&selected),
            focus: Some(1),
            cursor: Some(4),
            comments: Some(&comments),
            selection: None,
            folded: None,
            gaps: None,
        };
        for width in [30, 60, 200] {
            let whole = render(&file, &theme, width, marks);
            for (first, count) in [(0, 5), (3, 10), (7, 1000), (1000, 5), (0, 0)] {
                let w = render_window(&file, &theme, width, marks, first, count);
                assert_eq!(w.total, whole.lines.len(), "width {width}");
                assert_eq!(w.hunk_starts, whole.hunk_starts);
                assert_eq!(w.line_starts, whole.line_starts);
                let expect: Vec<_> = whole
                    .lines
                    .iter()
                    .skip(first)
                    .take(count)
                    .cloned()
                    .collect();
                assert_eq!(w.lines, expect, "width {width}, rows {first}+{count}");
            }
        }
    }
}
