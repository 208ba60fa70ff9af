//! Popups: the help overlay (every binding, from the key map), the quit question, and the
//! choice of how to go on when the context is full.

use crate::tui::app::App;
use crate::tui::keymap;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Every binding, in two columns when there is room.
pub(super) fn help(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = &app.theme;
    let mut blocks: Vec<Vec<Line<'static>>> = Vec::new();
    for (title, entries) in keymap::help_sections() {
        let mut lines = vec![Line::styled(
            title.to_string(),
            t.fg(t.heading).add_modifier(Modifier::BOLD),
        )];
        let key_w = entries
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0)
            .min(18);
        for (keys, help) in entries {
            lines.push(Line::from(vec![
                Span::styled(format!("  {keys:<key_w$}  "), t.accent()),
                Span::styled(help.to_string(), t.fg(t.text)),
            ]));
        }
        lines.push(Line::default());
        blocks.push(lines);
    }
    let total: usize = blocks.iter().map(Vec::len).sum();
    let popup = centered(
        area,
        area.width.saturating_sub(4),
        area.height.saturating_sub(2),
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.accent))
        .title(Span::styled(
            " Keys (Esc or ? to close) ",
            t.accent().add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let two = inner.width >= 100 && total > inner.height as usize;
    let (mut left, mut right) = (Vec::new(), Vec::new());
    let half = total.div_ceil(2);
    for b in blocks {
        if two && left.len() >= half.saturating_sub(b.len() / 2) {
            right.extend(b);
        } else {
            left.extend(b);
        }
    }
    if two {
        let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(inner);
        frame.render_widget(Paragraph::new(left), l);
        frame.render_widget(Paragraph::new(right), r);
    } else {
        frame.render_widget(Paragraph::new(left), inner);
    }
}

pub(super) fn confirm(frame: &mut Frame<'_>, area: Rect, app: &App, question: &str) {
    let t = &app.theme;
    let w = (question.chars().count() as u16 + 6).max(30);
    let popup = centered(area, w, 5);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.warning))
        .title(Span::styled(
            " Quit? ",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let lines = vec![
        Line::styled(question.to_string(), t.fg(t.text)),
        Line::default(),
        Line::from(vec![
            Span::styled("y", t.accent()),
            Span::styled(" quit · ", t.dim()),
            Span::styled("n", t.accent()),
            Span::styled(" stay", t.dim()),
        ]),
    ];
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The context is full: a fresh conversation, or dropping old tool results, for `message`.
pub(super) fn context_full(frame: &mut Frame<'_>, area: Rect, app: &App, message: &str) {
    let t = &app.theme;
    let popup = centered(area, 78, 10);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.warning))
        .title(Span::styled(
            " The conversation is full ",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let width = inner.width as usize;
    let first = message.lines().next().unwrap_or_default();
    let choice = |key: &'static str, text: &'static str| {
        Line::from(vec![
            Span::styled(format!("{key:<4}"), t.accent()),
            Span::styled(text, t.fg(t.text)),
        ])
    };
    let lines = vec![
        Line::styled(
            crate::tui::wrap::truncate(&format!("Your message: {first}"), width),
            t.dim(),
        ),
        Line::default(),
        choice("f", "a fresh conversation on the same workspace, carrying"),
        Line::styled(
            "    the task, the patch so far and your message",
            t.fg(t.text),
        ),
        choice("d", "drop the oldest tool results until it fits, then send"),
        Line::default(),
        choice("Esc", "back to the message, unsent"),
    ];
    frame.render_widget(Paragraph::new(lines), inner);
}
