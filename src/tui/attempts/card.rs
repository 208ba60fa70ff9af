//! One attempt's column on the board: its figures (state, step, tokens, finish reason, check,
//! diffstat), then its patch drawn as the change review draws a diff (syntax colours, line
//! numbers, emphasis) from the first file's first hunk on, as much as the column holds, or
//! `same patch as attempt N` when an earlier attempt made the very same patch, and at the bottom
//! the last lines of its check's output.
//!
//! Owns: how the column's rows are shared (figures first, then the check's tail, at most
//! [`TAIL_ROWS`] rows and never more than half of what is left, the patch in between) and the
//! patch preview's cut (`… N more rows`). Does not own: the board's state or which patches agree
//! ([`super::Board::same_patch_as`]), the diff's styling ([`crate::tui::diff_lines`]), the board
//! around the columns ([`super::view`]).

use super::Board;
use crate::diff::FileDiff;
use crate::tui::app::App;
use crate::tui::diff_lines;
use crate::tui::theme::Theme;
use crate::tui::wrap::truncate;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// Rows of the check's output shown at most.
pub const TAIL_ROWS: usize = 6;

/// Draw attempt `i`'s column into `area`; `app` is its App (state and step), when there is one.
pub fn draw(
    frame: &mut Frame<'_>,
    area: Rect,
    board: &Board,
    i: usize,
    app: Option<&App>,
    t: &Theme,
) {
    let Some(card) = board.cards.get(i) else {
        return;
    };
    let selected = i == board.selected;
    let title = Line::from(vec![
        Span::styled(
            format!(" Attempt {} ", i + 1),
            if selected {
                t.accent().add_modifier(Modifier::BOLD)
            } else {
                t.bold()
            },
        ),
        Span::styled(format!("seed {} ", card.seed), t.dim()),
    ]);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(if selected { t.accent } else { t.border }))
        .title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (width, height) = (inner.width as usize, inner.height as usize);

    let mut lines = figures(board, i, app, t);
    let free = height.saturating_sub(lines.len());
    let tail = card
        .check
        .as_ref()
        .map(|(_, out)| check_tail(out, t, width, (free / 2).min(TAIL_ROWS)))
        .unwrap_or_default();
    // A blank row before the patch, and one before the tail's label.
    let tail_rows = if tail.is_empty() { 0 } else { tail.len() + 2 };
    let room = free.saturating_sub(tail_rows + 1);
    if let Some((_, files)) = card.patch.as_ref().filter(|(raw, _)| !raw.is_empty()) {
        lines.push(Line::default());
        match board.same_patch_as(i) {
            Some(twin) => lines.push(Line::styled(
                format!("same patch as attempt {}", twin + 1),
                t.accent(),
            )),
            None => lines.extend(preview(files, t, width, room)),
        }
    }
    if !tail.is_empty() {
        let pad = height.saturating_sub(lines.len() + tail_rows);
        lines.extend(std::iter::repeat_n(Line::default(), pad + 1));
        lines.push(Line::styled(
            truncate("check output, last lines:", width),
            t.dim().add_modifier(Modifier::ITALIC),
        ));
        lines.extend(tail);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The figures at the top of the column.
fn figures(board: &Board, i: usize, app: Option<&App>, t: &Theme) -> Vec<Line<'static>> {
    let card = &board.cards[i];
    let field = |name: &str, value: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("{name:<9}"), t.dim()),
            Span::styled(value, style),
        ])
    };
    let mut lines = Vec::new();
    if let Some(app) = app {
        let s = &app.status;
        lines.push(field("state", s.state.label().to_string(), t.bold()));
        let max = if s.max_steps > 0 {
            s.max_steps.to_string()
        } else {
            "∞".into()
        };
        lines.push(field("step", format!("{}/{max}", s.step), t.fg(t.text)));
    }
    lines.push(field("tokens", card.tokens.to_string(), t.fg(t.text)));
    let finish = card
        .finish
        .map(|r| format!("{r:?}").to_lowercase())
        .unwrap_or_else(|| "—".into());
    lines.push(field("finish", finish, t.fg(t.text)));
    let (check, style) = match &card.check {
        Some((true, _)) => ("passed".to_string(), t.fg(t.added)),
        Some((false, _)) => ("failed".to_string(), t.fg(t.error)),
        None => ("—".to_string(), t.dim()),
    };
    lines.push(field("check", check, style));
    lines.push(match card.diffstat() {
        Some((0, _, _)) => field("patch", "no changes".into(), t.dim()),
        Some((files, added, removed)) => Line::from(vec![
            Span::styled(format!("{:<9}", "patch"), t.dim()),
            Span::styled(
                format!("{files} file{} ", if files == 1 { "" } else { "s" }),
                t.fg(t.text),
            ),
            Span::styled(format!("+{added} "), t.fg(t.added)),
            Span::styled(format!("-{removed}"), t.fg(t.removed)),
        ]),
        None => field("patch", "—".into(), t.dim()),
    });
    lines
}

/// The patch's first rows: each file's header and its hunks as the change review draws them,
/// cut to `room` rows with a last row saying how much was left out. Only the rows shown are
/// built ([`diff_lines::render_window`]), however long the patch.
pub fn preview(files: &[FileDiff], t: &Theme, width: usize, room: usize) -> Vec<Line<'static>> {
    let (rows, cut) = first_rows(files, t, width, room);
    if cut.is_none() {
        return rows;
    }
    // One row fewer, for the line that says what is left out.
    let (mut rows, cut) = first_rows(files, t, width, room.saturating_sub(1));
    let rest = match cut.unwrap_or(0) {
        0 => "… the rest of this hunk".to_string(),
        1 => "… 1 more hunk".to_string(),
        n => format!("… {n} more hunks"),
    };
    if room > 0 {
        rows.push(Line::styled(truncate(&rest, width), t.dim()));
    }
    rows
}

/// The first `budget` rows of the patch, and, when it does not fit, how many hunks have their
/// header beyond them (`None`: it fits).
fn first_rows(
    files: &[FileDiff],
    t: &Theme,
    width: usize,
    budget: usize,
) -> (Vec<Line<'static>>, Option<usize>) {
    let mut rows = Vec::new();
    let mut cut = None;
    for f in files {
        let left = budget.saturating_sub(rows.len());
        if left == 0 {
            cut = Some(cut.unwrap_or(0) + f.hunks.len());
            continue;
        }
        rows.push(diff_lines::header(f, t));
        let w = diff_lines::render_window(f, t, width, Default::default(), 0, left - 1);
        let unseen = w.hunk_starts.iter().filter(|h| **h >= left - 1).count();
        if w.total > left - 1 {
            cut = Some(cut.unwrap_or(0) + unseen);
        }
        rows.extend(w.lines);
    }
    (rows, cut)
}

/// The last `rows` non-empty lines of a check's output, cut to the column's width.
fn check_tail(output: &str, t: &Theme, width: usize, rows: usize) -> Vec<Line<'static>> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(rows)..]
        .iter()
        .map(|l| Line::styled(truncate(l, width), t.dim()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_text(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn a_long_patch_is_cut_with_what_was_left_out() {
        let before: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "LINE 2\n")
            .replace("line 20\n", "LINE 20\n")
            .replace("line 35\n", "LINE 35\n");
        let files = vec![FileDiff::compute("f.txt", Some(&before), &after)];
        assert_eq!(files[0].hunks.len(), 3);
        let t = Theme::dark();
        let all = preview(&files, &t, 60, 100);
        assert!(rows_text(&all).iter().all(|r| !r.starts_with('…')));
        // Room for the header, the first hunk's header and a few of its lines.
        let cut = rows_text(&preview(&files, &t, 60, 6));
        assert_eq!(cut.len(), 6);
        assert!(cut[0].starts_with("f.txt"), "{cut:?}");
        assert_eq!(cut[5], "… 2 more hunks", "{cut:?}");
        // A cut inside the last hunk shown says so.
        let hunk_rows = 1 + files[0].hunks[0].lines.len();
        let inside = rows_text(&preview(&files, &t, 60, 1 + hunk_rows + 3));
        assert_eq!(inside.last().unwrap(), "… 1 more hunk", "{inside:?}");
        assert_eq!(preview(&files, &t, 60, 0).len(), 0);
        // A column too narrow for the gutter still draws (many attempts, a small terminal).
        for width in [1, 4, 9] {
            assert_eq!(preview(&files, &t, width, 8).len(), 8);
        }
    }
}
