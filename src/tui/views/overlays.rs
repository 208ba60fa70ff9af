//! Popups: the help overlay (every binding, from the key map), the quit question, the
//! choice of how to go on when the context is full, and the rewind question.

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

/// Every binding, in two columns when there is room; descriptions wrap under themselves, and
/// the list scrolls when it is longer than the screen.
pub(super) fn help(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = &app.theme;
    let popup = centered(
        area,
        area.width.saturating_sub(4),
        area.height.saturating_sub(2),
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.accent))
        .title(Span::styled(
            " Keys (Esc or ? to close · ↑ ↓ PgUp PgDn scroll) ",
            t.accent().add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let sections = keymap::help_sections();
    let unwrapped: usize = sections.iter().map(|(_, e)| e.len() + 2).sum();
    let two = inner.width >= 100 && unwrapped > inner.height as usize;
    let col_w = if two { inner.width / 2 } else { inner.width } as usize;
    let blocks: Vec<Vec<Line<'static>>> = sections
        .into_iter()
        .map(|(title, entries)| help_block(app, title, &entries, col_w.saturating_sub(1)))
        .collect();
    let total: usize = blocks.iter().map(Vec::len).sum();
    let (mut left, mut right) = (Vec::new(), Vec::new());
    let half = total.div_ceil(2);
    for b in blocks {
        if two && left.len() >= half.saturating_sub(b.len() / 2) {
            right.extend(b);
        } else {
            left.extend(b);
        }
    }
    let h = inner.height as usize;
    app.help_page.set(h.saturating_sub(2).max(1));
    let longest = left.len().max(right.len());
    let scroll = app.help_scroll.min(longest.saturating_sub(h));
    let window = |lines: Vec<Line<'static>>| -> Vec<Line<'static>> {
        lines.into_iter().skip(scroll).take(h).collect()
    };
    if two {
        let [l, r] =
            Layout::horizontal([Constraint::Length(col_w as u16), Constraint::Min(1)]).areas(inner);
        frame.render_widget(Paragraph::new(window(left)), l);
        frame.render_widget(Paragraph::new(window(right)), r);
    } else {
        frame.render_widget(Paragraph::new(window(left)), inner);
    }
    if longest > h {
        let pos = format!(
            " {}-{} of {} ",
            scroll + 1,
            (scroll + h).min(longest),
            longest
        );
        let x = popup.right().saturating_sub(pos.len() as u16 + 2);
        frame
            .buffer_mut()
            .set_string(x, popup.bottom() - 1, pos, t.dim());
    }
}

/// One context's bindings: the title, then a line per binding with its help wrapped to
/// `width` under the description column.
fn help_block(
    app: &App,
    title: &str,
    entries: &[(String, &'static str)],
    width: usize,
) -> Vec<Line<'static>> {
    let t = &app.theme;
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
    let indent = [Span::raw(" ".repeat(key_w + 4))];
    for (keys, help) in entries {
        let line = Line::from(vec![
            Span::styled(format!("  {keys:<key_w$}  "), t.accent()),
            Span::styled(help.to_string(), t.fg(t.text)),
        ]);
        lines.extend(crate::tui::wrap::wrap(&line, width, &indent));
    }
    lines.push(Line::default());
    lines
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
            Span::styled(
                keymap::keys_of(keymap::Context::Confirm, keymap::Action::Yes),
                t.accent(),
            ),
            Span::styled(" quit · ", t.dim()),
            Span::styled(
                keymap::keys_of(keymap::Context::Confirm, keymap::Action::No),
                t.accent(),
            ),
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

/// Which turn to rewind to, and what going back means, before anything is sent.
pub(super) fn rewind(frame: &mut Frame<'_>, area: Rect, app: &App, turn: u32, turns: &[u32]) {
    let t = &app.theme;
    let popup = centered(area, 74, 7);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.warning))
        .title(Span::styled(
            " Rewind ",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let last = turns.last().copied().unwrap_or(0);
    let target = if turn == 0 {
        "the start of the session (before turn 1)".to_string()
    } else {
        format!("the end of turn {turn}")
    };
    let key = |a| keymap::keys_of(keymap::Context::Rewind, a);
    let lines = vec![
        Line::styled(
            format!("Rewind to turn {turn} of {last}? Files and conversation go back to"),
            t.fg(t.text),
        ),
        Line::styled(format!("{target}; later turns are dropped."), t.fg(t.text)),
        Line::styled(
            "The model's memory goes back with them; then type a new message.",
            t.dim(),
        ),
        Line::default(),
        Line::from(vec![
            Span::styled(key(keymap::Action::EarlierTurn), t.accent()),
            Span::styled(" earlier · ", t.dim()),
            Span::styled(key(keymap::Action::LaterTurn), t.accent()),
            Span::styled(" later · ", t.dim()),
            Span::styled(key(keymap::Action::Submit), t.accent()),
            Span::styled(" rewind · ", t.dim()),
            Span::styled(key(keymap::Action::Cancel), t.accent()),
            Span::styled(" cancel", t.dim()),
        ]),
    ];
    frame.render_widget(Paragraph::new(lines), inner);
}
