//! Drawing the attempts board: one column per attempt (state, step, tokens, finish reason,
//! check, diffstat), or the pieces view (every hunk of every attempt with its mark, and the
//! focused one's diff below), with a line of news and the keys at the bottom.

use super::{Board, BoardView, Pieces};
use crate::diff::{FileDiff, FileStatus};
use crate::tui::app::App;
use crate::tui::diff_lines;
use crate::tui::theme::Theme;
use crate::tui::wrap::truncate;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
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
    let keys = match board.view {
        BoardView::Cards => {
            "←/→ choose · enter open its transcript (b back) · a apply its patch · p take pieces · q quit"
        }
        BoardView::Pieces(_) => {
            "↑/↓ move · space take/drop · t take all of its attempt · a apply what is taken · esc back"
        }
    };
    frame.render_widget(
        Paragraph::new(Line::styled(
            truncate(keys, hints.width as usize),
            theme.dim(),
        )),
        hints,
    );
}

fn cards(frame: &mut Frame<'_>, area: Rect, board: &Board, apps: &[&App], t: &Theme) {
    let n = board.cards.len().max(1);
    let columns = Layout::horizontal(vec![Constraint::Ratio(1, n as u32); n]).split(area);
    for (i, (card, col)) in board.cards.iter().zip(columns.iter()).enumerate() {
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
        let inner = block.inner(*col);
        frame.render_widget(block, *col);
        let mut lines = Vec::new();
        let field = |name: &str, value: String, style| {
            Line::from(vec![
                Span::styled(format!("{name:<9}"), t.dim()),
                Span::styled(value, style),
            ])
        };
        if let Some(app) = apps.get(i) {
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
        match card.diffstat() {
            Some((0, _, _)) => lines.push(field("patch", "no changes".into(), t.dim())),
            Some((files, added, removed)) => lines.push(Line::from(vec![
                Span::styled(format!("{:<9}", "patch"), t.dim()),
                Span::styled(
                    format!("{files} file{} ", if files == 1 { "" } else { "s" }),
                    t.fg(t.text),
                ),
                Span::styled(format!("+{added} "), t.fg(t.added)),
                Span::styled(format!("-{removed}"), t.fg(t.removed)),
            ])),
            None => lines.push(field("patch", "—".into(), t.dim())),
        }
        if let Some((_, files)) = &card.patch {
            for f in files.iter().take(6) {
                lines.push(Line::styled(
                    format!("  {} +{} -{}", f.path, f.added(), f.removed()),
                    t.dim(),
                ));
            }
        }
        if let Some((_, output)) = &card.check {
            lines.push(Line::default());
            let room = (inner.height as usize).saturating_sub(lines.len()).max(1);
            let tail: Vec<&str> = output.lines().collect();
            for l in &tail[tail.len().saturating_sub(room)..] {
                lines.push(Line::styled(l.to_string(), t.dim()));
            }
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
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
    let mut out = vec![diff_lines::header(&shown, t)];
    out.extend(diff_lines::render(&shown, t, diff.width as usize, Default::default()).lines);
    frame.render_widget(Paragraph::new(out), diff);
}
