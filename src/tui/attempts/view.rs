//! Drawing the attempts board: one column per attempt (its figures, patch and check tail,
//! drawn by [`super::card`]), or the pieces view (every hunk of every attempt with its mark, and the
//! focused one's diff below), with a line of news and the keys at the bottom.

use super::{card, Board, BoardView, Pieces};
use crate::diff::{FileDiff, FileStatus};
use crate::tui::app::App;
use crate::tui::diff_cursor::Drawing;
use crate::tui::diff_lines;
use crate::tui::theme::Theme;
use crate::tui::wrap::truncate;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// Draw the board; `apps[i]` is attempt i's App (its state, step and context).
pub fn draw(frame: &mut Frame<'_>, board: &Board, apps: &[&App], theme: &Theme) {
    let area = frame.area();
    let [main, news, hints] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    match &board.view {
        BoardView::Cards => cards(frame, main, board, apps, theme),
        BoardView::Pieces(p) => pieces(frame, main, board, p, theme),
    }
    if let Some(m) = &board.message {
        frame.render_widget(
            Paragraph::new(Line::styled(
                truncate(m, news.width as usize),
                theme.fg(theme.warning),
            )),
            news,
        );
    }
    // The keys in force, from the one key table.
    let keys = crate::tui::keymap::hints(&[board.context()])
        .into_iter()
        .map(|(key, hint)| format!("{key} {hint}"))
        .collect::<Vec<_>>()
        .join(" · ");
    frame.render_widget(
        Paragraph::new(Line::styled(
            truncate(&keys, hints.width as usize),
            theme.dim(),
        )),
        hints,
    );
}

fn cards(frame: &mut Frame<'_>, area: Rect, board: &Board, apps: &[&App], t: &Theme) {
    let n = board.cards.len().max(1);
    let columns = Layout::horizontal(vec![Constraint::Ratio(1, n as u32); n]).split(area);
    for (i, col) in columns.iter().enumerate().take(board.cards.len()) {
        card::draw(frame, *col, board, i, apps.get(i).copied(), t);
    }
}

fn piece_label(p: &Pieces, i: usize, files: &[&[FileDiff]]) -> String {
    let piece = &p.pieces[i];
    let file = files.get(piece.attempt).and_then(|f| f.get(piece.file));
    let what = match (piece.hunk, file) {
        (Some(h), Some(f)) => f
            .hunks
            .get(h)
            .map(|h| format!("{} +{} -{}", h.header(), h.added(), h.removed()))
            .unwrap_or_default(),
        (None, Some(f)) => match &f.status {
            FileStatus::Added => "new file".into(),
            FileStatus::Deleted => "deleted".into(),
            FileStatus::Renamed { from } => format!("renamed from {from}"),
            FileStatus::Binary => "binary".into(),
            FileStatus::Modified => "whole file".into(),
        },
        _ => String::new(),
    };
    format!("attempt {}  {}  {what}", piece.attempt + 1, piece.path)
}

fn pieces(frame: &mut Frame<'_>, area: Rect, board: &Board, p: &Pieces, t: &Theme) {
    let files: Vec<&[FileDiff]> = board
        .cards
        .iter()
        .map(|c| c.patch.as_ref().map(|(_, f)| f.as_slice()).unwrap_or(&[]))
        .collect();
    let list_h = (p.pieces.len() as u16 + 2).clamp(3, area.height / 2);
    let [list, diff] =
        Layout::vertical([Constraint::Length(list_h), Constraint::Min(1)]).areas(area);
    let taken = p.taken.iter().filter(|x| **x).count();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.accent))
        .title(Span::styled(
            format!(" Pieces of the attempts · {taken} taken "),
            t.accent().add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(list);
    frame.render_widget(block, list);
    let h = inner.height as usize;
    let first = p.focus.saturating_sub(h.saturating_sub(1));
    let mut lines = Vec::new();
    for i in first..p.pieces.len().min(first + h) {
        let mark = if p.taken[i] { "[x] " } else { "[ ] " };
        let clash = p.taken[i] && !p.conflicts_of(i).is_empty();
        let focus = if i == p.focus { "▶ " } else { "  " };
        let mut spans = vec![
            Span::styled(focus, t.accent()),
            Span::styled(mark, if p.taken[i] { t.fg(t.added) } else { t.dim() }),
            Span::styled(
                piece_label(p, i, &files),
                if i == p.focus { t.bold() } else { t.fg(t.text) },
            ),
        ];
        if clash {
            spans.push(Span::styled("  conflict", t.fg(t.error)));
        }
        if let Some(twin) = (0..i).find(|&j| crate::diff::combine::same(&p.pieces[j], &p.pieces[i]))
        {
            spans.push(Span::styled(
                format!("  same as attempt {}", p.pieces[twin].attempt + 1),
                t.dim(),
            ));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), inner);
    // The focused piece's diff.
    let Some(piece) = p.pieces.get(p.focus) else {
        return;
    };
    let Some(file) = files.get(piece.attempt).and_then(|f| f.get(piece.file)) else {
        return;
    };
    let shown = match piece.hunk {
        Some(h) => FileDiff {
            hunks: file.hunks.get(h).cloned().into_iter().collect(),
            ..file.clone()
        },
        None => file.clone(),
    };
    // Only the rows in view are built; PgUp/PgDn scroll them.
    let mut out = vec![diff_lines::header(&shown, t)];
    let (width, rows) = (diff.width as usize, diff.height.saturating_sub(1) as usize);
    let sized = diff_lines::render_window(&shown, t, width, Default::default(), 0, 0);
    let top = p.diff.top(sized.total, rows);
    out.extend(diff_lines::render_window(&shown, t, width, Default::default(), top, rows).lines);
    p.diff.drawn(Drawing {
        line_starts: sized.line_starts,
        hunk_starts: sized.hunk_starts,
        page: rows.max(1),
        view: rows,
        rows: sized.total,
        width: diff.width,
    });
    frame.render_widget(Paragraph::new(out), diff);
}
