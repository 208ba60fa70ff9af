//! The session review on screen: a file list (path, +/-, a viewed mark, the comments on it)
//! beside the shown file's diff on a wide terminal, above it on a narrow one; the diff with
//! its line cursor, the lines selected with `v` and the comments under their lines. State
//! and keys are in `app::pr_review`.

use crate::diff::FileDiff;
use crate::tui::app::pr_review::{ListPane, PatchReview};
use crate::tui::app::App;
use crate::tui::diff_cursor::Drawing;
use crate::tui::diff_lines::{self, HunkMarks};
use crate::tui::keymap::{keys_of, Action, Context};
use crate::tui::review_comments::Anchor;
use crate::tui::theme::Theme;
use crate::tui::wrap::truncate;
use crate::tui::{diff_split, wrap};
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Columns from which the file list stands beside the diff rather than above it.
pub(super) const SIDE_BY_SIDE_COLUMNS: u16 = 100;

pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, p: &PatchReview) {
    let t = &app.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.accent))
        .title(title(p, t));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    if inner.height < 3 || inner.width < 10 {
        return;
    }
    let intro = match &p.note {
        Some(note) => Line::styled(note.clone(), t.fg(t.warning)),
        None => Line::styled(
            "Nothing has touched your working tree yet: apply, save or discard it, or request changes.",
            t.dim(),
        ),
    };
    put(frame, inner.x, inner.y, inner.width, &intro);
    let body = Rect {
        y: inner.y + 1,
        height: inner.height - 1,
        ..inner
    };
    let (list, diff) = if body.width >= SIDE_BY_SIDE_COLUMNS {
        let w = list_width(p, body.width);
        for y in body.y..body.bottom() {
            put(frame, body.x + w, y, 1, &Line::styled("│", t.dim()));
        }
        (
            // A column between the longest row and the rule.
            Rect {
                width: w.saturating_sub(1),
                ..body
            },
            Rect {
                x: body.x + w + 2,
                width: body.width - w - 2,
                ..body
            },
        )
    } else {
        let h = (p.files().len().max(1) as u16).min((body.height / 4).max(2));
        put(
            frame,
            body.x,
            body.y + h,
            body.width,
            &Line::styled("─".repeat(body.width as usize), t.dim()),
        );
        (
            Rect { height: h, ..body },
            Rect {
                y: body.y + h + 1,
                height: body.height.saturating_sub(h + 1),
                ..body
            },
        )
    };
    draw_list(frame, list, app, p);
    draw_diff(frame, diff, app, p);
}

fn title<'a>(p: &PatchReview, t: &Theme) -> Line<'a> {
    let (added, removed) = p.totals();
    let n = p.files().len();
    let viewed = p
        .files()
        .iter()
        .filter(|f| p.viewed.contains(&f.path))
        .count();
    let pending = p.comments.pending().len();
    let mut spans = vec![
        Span::styled(" Session patch ", t.accent().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!("{n} file{} ", if n == 1 { "" } else { "s" }),
            t.dim(),
        ),
        Span::styled(format!("+{added} "), t.fg(t.added)),
        Span::styled(format!("-{removed} "), t.fg(t.removed)),
        Span::styled(
            format!("· {} · {viewed}/{n} viewed ", p.scope.label()),
            t.dim(),
        ),
    ];
    if pending > 0 {
        spans.push(Span::styled(
            format!("· {pending} pending "),
            t.fg(t.warning),
        ));
    }
    Line::from(spans)
}

/// One row of the file list without its path: the marks before it, and after it the counts
/// (`+a`, ` -r`) and the comments (` ✎n`, empty without).
fn row_parts(p: &PatchReview, i: usize, f: &FileDiff) -> (String, [String; 3]) {
    let shown = if i == p.file { "▶" } else { " " };
    let viewed = if p.viewed.contains(&f.path) {
        "✓"
    } else {
        "·"
    };
    let comments = match p.comments.count_on(&f.path) {
        0 => String::new(),
        n => format!(" ✎{n}"),
    };
    (
        format!("{shown}{viewed} "),
        [
            format!("  +{}", f.added()),
            format!(" -{}", f.removed()),
            comments,
        ],
    )
}

/// The list's width beside the diff: its longest row and a gap, within a third of `width`.
fn list_width(p: &PatchReview, width: u16) -> u16 {
    let longest = p
        .files()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (head, tail) = row_parts(p, i, f);
            head.width() + f.path.width() + tail.concat().width()
        })
        .max()
        .unwrap_or(0);
    // One column more: the gap before the rule.
    (longest as u16 + 1).clamp(20, width / 3)
}

fn draw_list(frame: &mut Frame<'_>, area: Rect, app: &App, p: &PatchReview) {
    let t = &app.theme;
    if p.files().is_empty() {
        let line = Line::styled(
            format!(
                "the last turn changed no file ({}: the whole session)",
                keys_of(Context::Patch, Action::ToggleScope)
            ),
            t.dim(),
        );
        let rows = wrap::wrap(&line, area.width as usize, &[]);
        for (y, row) in (area.y..area.bottom()).zip(rows) {
            put(frame, area.x, y, area.width, &row);
        }
        return;
    }
    let rows = area.height as usize;
    let first = p.list.saturating_sub(rows.saturating_sub(1));
    for (row, (i, f)) in p
        .files()
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .enumerate()
    {
        let (head, tail) = row_parts(p, i, f);
        let room = (area.width as usize).saturating_sub(head.width() + tail.concat().width());
        let mut path_style = if i == p.file {
            t.bold().fg(t.accent)
        } else {
            t.fg(t.text)
        };
        let chosen = p.pane == ListPane::Files && i == p.list;
        if chosen {
            path_style = path_style.add_modifier(Modifier::REVERSED);
        }
        let [plus, minus, comments] = tail;
        let line = Line::from(vec![
            Span::styled(head, t.accent()),
            Span::styled(truncate(&f.path, room), path_style),
            Span::styled(plus, t.fg(t.added)),
            Span::styled(minus, t.fg(t.removed)),
            Span::styled(comments, t.fg(t.warning)),
        ]);
        put(frame, area.x, area.y + row as u16, area.width, &line);
    }
}

fn draw_diff(frame: &mut Frame<'_>, area: Rect, app: &App, p: &PatchReview) {
    let t = &app.theme;
    let Some(f) = p.shown() else {
        return;
    };
    let width = area.width as usize;
    let mut head = vec![diff_lines::header(f, t)];
    let file_comments = p
        .comments
        .pending()
        .iter()
        .map(|c| (c, "pending"))
        .chain(p.comments.recorded().iter().map(|c| (c, "recorded")));
    for (c, state) in file_comments {
        if matches!(&c.anchor, Anchor::File { path } if *path == f.path) {
            let line = Line::from(vec![
                Span::styled("└ on the file: ", t.fg(t.accent)),
                Span::styled(
                    format!("{} ({state})", c.text),
                    t.fg(t.accent).add_modifier(Modifier::ITALIC),
                ),
            ]);
            head.extend(wrap::wrap(&line, width, &[Span::raw("  ")]));
        }
    }
    let head_rows = head.len().min(area.height as usize);
    for (i, line) in head.iter().take(head_rows).enumerate() {
        put(frame, area.x, area.y + i as u16, area.width, line);
    }
    let rows = (area.height as usize).saturating_sub(head_rows);
    let comments = p.comments.marks(f);
    let marks = HunkMarks {
        cursor: Some(p.cursor.line),
        comments: Some(&comments),
        selection: p.selection(),
        folded: p.folded(),
        // The session patch has no file text: its gaps are shown, not opened.
        gaps: Some(crate::tui::diff_gaps::GapMarks {
            open: &[],
            text: None,
        }),
        ..Default::default()
    };
    let render = if app.diff_layout.is_split(area.width, f.one_sided()) {
        diff_split::render_window
    } else {
        diff_lines::render_window
    };
    let sized = render(f, t, width, marks, 0, 0);
    let total = sized.total;
    let scroll = p.cursor.top(total, rows);
    let window = render(f, t, width, marks, scroll, rows);
    p.cursor.drawn(Drawing {
        line_starts: sized.line_starts,
        hunk_starts: sized.hunk_starts,
        page: rows.saturating_sub(1).max(1),
        view: rows,
        rows: total,
        width: area.width,
    });
    for (i, line) in window.lines.iter().enumerate() {
        let y = area.y + (head_rows + i) as u16;
        put(frame, area.x, y, area.width, line);
    }
}

fn put(frame: &mut Frame<'_>, x: u16, y: u16, width: u16, line: &Line<'_>) {
    frame.buffer_mut().set_line(x, y, line, width);
}
