//! Drawing: the whole frame from the [`App`]'s state. Views only read state (the few
//! positions they record, like where each hunk starts, go into `Cell`s for the key handlers);
//! nothing here blocks or computes diffs.

mod dock;
mod overlays;
mod pickers;
mod pr_review;
mod review;
mod status;

use crate::tui::app::{App, Mode, Overlay, Review};
use crate::tui::keymap;
use crate::tui::wrap::truncate;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Gauge, Paragraph};
use ratatui::Frame;

/// Draw everything.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    let queued_h = app.queued_messages.len().min(3) as u16;
    let input_h = message_rows(app) as u16;
    // A review docks its panel under the conversation (a change may fill the screen instead).
    let wanted = match &app.mode {
        Mode::Review(Review::Command(c)) => review::command_height(c, area.width),
        Mode::Review(Review::Change(c)) if !c.dock.full_screen => {
            review::change_height(app, c, area.width)
        }
        _ => 0,
    };
    let panel_h = dock::panel_height(wanted, area.height, queued_h + input_h + 2);
    let [main, queued, panel, input, status_area, hints] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(queued_h),
        Constraint::Length(panel_h),
        Constraint::Length(input_h),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);

    match &app.mode {
        Mode::Review(Review::Change(c)) if c.dock.full_screen => {
            dock::draw_full_screen(frame, main, app, c)
        }
        Mode::Transcript | Mode::Review(_) => {
            if let Some((label, fraction)) = &app.progress {
                draw_progress(frame, main, app, label, *fraction);
            } else {
                app.transcript
                    .render(main, frame.buffer_mut(), &app.render_ctx());
            }
        }
        Mode::Patch(p) => pr_review::draw(frame, main, app, p),
    }
    match &app.mode {
        Mode::Review(Review::Command(c)) => review::draw_command(frame, panel, app, c),
        Mode::Review(Review::Change(c)) if !c.dock.full_screen => {
            review::draw_change(frame, panel, app, c)
        }
        _ => {}
    }
    draw_queued(frame, queued, app);
    draw_input(frame, input, app);
    pickers::draw(frame, main, app);
    status::draw(frame, status_area, app);
    draw_hints(frame, hints, app);
    match &app.overlay {
        Some(Overlay::Help) => overlays::help(frame, area, app),
        Some(Overlay::ConfirmQuit(q)) => overlays::confirm(frame, area, app, q),
        Some(Overlay::ContextFull(text)) => overlays::context_full(frame, area, app, text),
        Some(Overlay::Rewind { turn, turns }) => overlays::rewind(frame, area, app, *turn, turns),
        None => {}
    }
}

fn draw_progress(frame: &mut Frame<'_>, area: Rect, app: &App, label: &str, fraction: Option<f64>) {
    let t = &app.theme;
    let w = area.width.clamp(20, 60);
    let box_area = Rect {
        x: area.x + (area.width.saturating_sub(w)) / 2,
        y: area.y + area.height.saturating_sub(5) / 2,
        width: w,
        height: 5.min(area.height),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.border))
        .title(Span::styled(" Starting ", t.accent()));
    let inner = block.inner(box_area);
    frame.render_widget(block, box_area);
    let [text, bar] = Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(inner);
    frame.render_widget(
        Paragraph::new(Line::styled(
            truncate(label, inner.width as usize),
            t.fg(t.text),
        )),
        text,
    );
    let gauge = match fraction {
        Some(f) => Gauge::default().ratio(f.clamp(0.0, 1.0)),
        None => Gauge::default().ratio(0.0).label("…"),
    };
    frame.render_widget(gauge.gauge_style(t.accent()), bar);
}

/// Messages waiting for the next turn boundary, newest last (at most the last three).
fn draw_queued(frame: &mut Frame<'_>, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let skip = app
        .queued_messages
        .len()
        .saturating_sub(area.height as usize);
    let lines: Vec<Line<'_>> = app.queued_messages[skip..]
        .iter()
        .map(|m| {
            let first = m.lines().next().unwrap_or_default();
            Line::from(vec![
                Span::styled("queued › ", t.accent()),
                Span::styled(
                    truncate(first, (area.width as usize).saturating_sub(9)),
                    t.dim(),
                ),
            ])
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines), area);
}

/// The message line, or the field being typed in (feedback, file name).
fn draw_input(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = &app.theme;
    let (label, field, active) = match &app.mode {
        Mode::Review(r) => {
            let (f, label) = match r {
                Review::Change(c) => (
                    c.feedback.as_ref(),
                    match c.feedback_for {
                        crate::tui::app::review::FeedbackFor::Rejection => {
                            "why? (tell the model) › "
                        }
                        crate::tui::app::review::FeedbackFor::DroppedHunks => {
                            "why drop the other hunks? (tell the model; Enter applies the selected) › "
                        }
                        crate::tui::app::review::FeedbackFor::Comment => "comment on this line › ",
                    },
                ),
                Review::Command(c) => (c.feedback.as_ref(), "why? (tell the model) › "),
            };
            match f {
                Some(f) => (label, Some(f), true),
                None => ("", None, false),
            }
        }
        Mode::Patch(p) => match (&p.field, p.field_label()) {
            (Some((_, f)), Some(label)) => (label, Some(f), true),
            _ => ("", None, false),
        },
        Mode::Transcript => match app.search.as_ref().and_then(|s| s.field.as_ref()) {
            Some(f) => ("search / ", Some(f), true),
            None => ("› ", Some(&app.composer.input), app.message_line_open()),
        },
    };
    // A search of the messages sent: what is typed in the label, the message found after it.
    let recall = match (&app.mode, &app.composer.recall) {
        (Mode::Transcript, Some(r)) if app.message_line_open() => Some(r),
        _ => None,
    };
    let recall_label;
    let label = match recall {
        Some(r) => {
            let found = if r.found.is_some() || r.query.text().is_empty() {
                ""
            } else {
                " (none)"
            };
            recall_label = format!("sent before: {}{found} › ", r.query.text());
            recall_label.as_str()
        }
        None => label,
    };
    frame.render_widget(Clear, area);
    let Some(f) = field.filter(|f| active || !f.text().is_empty()) else {
        let line = Line::styled(placeholder(app), t.dim());
        frame.render_widget(Paragraph::new(line), area);
        return;
    };
    let (label_style, text_style) = if active {
        (t.accent().add_modifier(Modifier::BOLD), t.fg(t.text))
    } else {
        (t.dim(), t.dim())
    };
    // The rows shown: the cursor's line and those just before it, at most the area's height.
    let rows = area.height.max(1) as usize;
    let (cursor_line, _) = f.cursor_line();
    let top = match recall {
        Some(_) => 0,
        None => (cursor_line + 1).saturating_sub(rows),
    };
    let indent = " ".repeat(label.chars().count());
    let lines: Vec<Line<'_>> = f
        .text()
        .split('\n')
        .enumerate()
        .skip(top)
        .take(rows)
        .map(|(i, l)| {
            let lead = if i == 0 {
                Span::styled(label, label_style)
            } else {
                Span::styled(indent.clone(), label_style)
            };
            Line::from(vec![
                lead,
                Span::styled(l.replace('\t', "    "), text_style),
            ])
        })
        .collect();
    if let (Some(r), true) = (recall, active) {
        let col = "sent before: ".chars().count() + r.query.cursor_col();
        let col = area.x + col as u16;
        frame.set_cursor_position((col.min(area.right().saturating_sub(1)), area.y));
    } else if active {
        let before = f.before_cursor();
        let line_before = before.rsplit('\n').next().unwrap_or(before);
        let width =
            unicode_width::UnicodeWidthStr::width(line_before.replace('\t', "    ").as_str());
        let col = area.x + (label.chars().count() + width) as u16;
        let row = area.y + (cursor_line - top) as u16;
        frame.set_cursor_position((col.min(area.right().saturating_sub(1)), row));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// Most rows the message line grows to; longer messages scroll within them.
pub const MESSAGE_ROWS: usize = 6;

/// Rows of the message line: one per line of the message (at most [`MESSAGE_ROWS`]).
fn message_rows(app: &App) -> usize {
    let typing_elsewhere = app.search.as_ref().is_some_and(|s| s.field.is_some());
    if !matches!(app.mode, Mode::Transcript)
        || typing_elsewhere
        || app.composer.input.text().is_empty()
    {
        return 1;
    }
    app.composer.input.cursor_line().1.clamp(1, MESSAGE_ROWS)
}

fn placeholder(app: &App) -> String {
    use crate::tui::app::AgentState as S;
    if let (Some(line), Mode::Transcript) = (app.search_line(), &app.mode) {
        return line;
    }
    if app.replay.is_some() {
        return "replay: n next turn · b back · e to the end".into();
    }
    let chat = app.keys == crate::tui::KeyScheme::Chat;
    match (&app.mode, app.status.state) {
        (Mode::Review(_), _) => "review the proposal above".into(),
        (Mode::Patch(_), _) => "decide what to do with the session patch".into(),
        // With the chat keys the message line is in front again once the overlay closes.
        (_, S::WaitingForTask) | (_, S::Finished) if chat => String::new(),
        (_, S::WaitingForTask) | (_, S::Finished) => "press i to type a message".into(),
        (_, S::Paused) if chat => "paused: Alt-N runs the next turn".into(),
        (_, S::Paused) => "paused: n runs the next turn".into(),
        (_, s) if s.is_busy() => "the agent is working · Esc interrupts".into(),
        _ => String::new(),
    }
}

fn draw_hints(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = &app.theme;
    let mut spans = Vec::new();
    let mut contexts = app.contexts();
    if contexts.contains(&keymap::Context::Replay) {
        contexts.retain(|c| *c != keymap::Context::Transcript);
    }
    for (i, (key, hint)) in keymap::hints(&contexts).into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", t.dim()));
        }
        spans.push(Span::styled(key, t.accent()));
        spans.push(Span::styled(format!(" {hint}"), t.dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
