//! The review views: a file change as a highlighted diff with selectable hunks, a line cursor
//! and the person's line comments (the main area), and a command as a panel above the message
//! line.

use crate::diff::Highlighter;
use crate::tui::app::{App, ChangeReview, CommandReview};
use crate::tui::diff_lines::{self, HunkMarks};
use crate::tui::theme::rgb;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

pub(super) fn draw_change(frame: &mut Frame<'_>, area: Rect, app: &App, c: &ChangeReview) {
    let t = &app.theme;
    let verb = match crate::protocol::ToolName::parse(&c.req.call.name) {
        Some(crate::protocol::ToolName::Write) if c.before.is_none() => "create",
        Some(crate::protocol::ToolName::Write) => "rewrite",
        _ => "edit",
    };
    let question = if c.revision > 0 {
        format!(" Approve your version of this {verb}? ")
    } else {
        format!(" Approve this {verb}? ")
    };
    let mut title = vec![Span::styled(
        question,
        t.fg(t.warning).add_modifier(Modifier::BOLD),
    )];
    if let Some(d) = &c.diff {
        let sel = c.selected.iter().filter(|s| **s).count();
        let comments = match c.comments.len() {
            0 => String::new(),
            1 => " · 1 comment".into(),
            n => format!(" · {n} comments"),
        };
        title.push(Span::styled(
            format!(
                "hunk {}/{} · {sel} selected{comments} ",
                (c.focus + 1).min(d.hunks.len()),
                d.hunks.len()
            ),
            t.dim(),
        ));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.warning))
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let Some(diff) = &c.diff else {
        lines.push(Line::styled(
            format!("{}  computing the diff…", c.path),
            t.dim(),
        ));
        if let Some(note) = &c.note {
            lines.push(Line::styled(note.clone(), t.fg(t.accent)));
        }
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    };
    lines.push(diff_lines::header(diff, t));
    if let Some(note) = &c.note {
        lines.push(Line::styled(note.clone(), t.fg(t.accent)));
    }
    if c.binary_before {
        lines.push(Line::styled(
            "the file was binary: its old content is not shown",
            t.fg(t.warning),
        ));
    }
    let h = inner.height as usize;
    c.page.set(h.saturating_sub(2).max(1));
    // Only the visible rows of the diff are built; `before` rows (header, notes) come first.
    let before = lines.len();
    let after = usize::from(diff.hunks.is_empty());
    let marks = HunkMarks {
        selected: Some(&c.selected),
        focus: Some(c.focus),
        cursor: Some(c.line),
        comments: Some(&c.comments),
    };
    // One pass for the diff's size and hunk positions, then the window at the clamped scroll.
    let sized = diff_lines::render_window(diff, t, width, marks, 0, 0);
    *c.hunk_starts.borrow_mut() = sized.hunk_starts.iter().map(|s| s + before).collect();
    *c.line_starts.borrow_mut() = sized.line_starts.iter().map(|s| s + before).collect();
    let total = before + sized.total + after;
    let scroll = c.scroll.min(total.saturating_sub(h));
    let first = scroll.saturating_sub(before);
    let window = diff_lines::render_window(diff, t, width, marks, first, h);
    let mut visible: Vec<Line<'static>> = lines.into_iter().skip(scroll).collect();
    visible.extend(window.lines);
    if diff.hunks.is_empty() {
        visible.push(Line::styled(
            "no changes: the proposed text equals the current file",
            t.dim(),
        ));
    }
    for (i, line) in visible.iter().take(h).enumerate() {
        frame
            .buffer_mut()
            .set_line(inner.x, inner.y + i as u16, line, inner.width);
    }
    if total > h {
        let pos = format!(" {}-{} of {} ", scroll + 1, (scroll + h).min(total), total);
        let x = area.right().saturating_sub(pos.len() as u16 + 2);
        frame
            .buffer_mut()
            .set_string(x, area.bottom() - 1, pos, t.dim());
    }
}

/// Lines the command panel needs at `width`.
pub(super) fn command_height(c: &CommandReview, _width: u16) -> u16 {
    let lines = c.command.lines().count().clamp(1, 12)
        + 1
        + usize::from(c.description.is_some())
        + usize::from(c.is_edited())
        + usize::from(c.note.is_some())
        + usize::from(c.prefix.is_some());
    (lines + 2) as u16
}

pub(super) fn draw_command(frame: &mut Frame<'_>, area: Rect, app: &App, c: &CommandReview) {
    let t = &app.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.warning))
        .title(Span::styled(
            if c.is_edited() {
                " Run your edited command? "
            } else {
                " Run this command? "
            },
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let mut lines: Vec<Line<'static>> = Vec::new();
    let coloured = Highlighter::syntax_for_token("bash").map(|s| app.hl.snippet(s, &c.command));
    for (i, l) in c.command.lines().take(12).enumerate() {
        let lead = if i == 0 { "$ " } else { "  " };
        let mut spans = vec![Span::styled(lead, t.accent().add_modifier(Modifier::BOLD))];
        match coloured.as_ref().and_then(|c| c.get(i)) {
            Some(pieces) if !pieces.is_empty() => spans.extend(
                pieces
                    .iter()
                    .map(|(col, s)| Span::styled(s.clone(), Style::default().fg(rgb(*col)))),
            ),
            _ => spans.push(Span::styled(l.to_string(), t.fg(t.code))),
        }
        lines.push(Line::from(spans));
    }
    if c.is_edited() {
        lines.push(Line::styled(
            format!(
                "you edited it; the model proposed: {}",
                c.proposed.lines().next().unwrap_or("")
            ),
            t.fg(t.accent),
        ));
    }
    if let Some(d) = &c.description {
        lines.push(Line::styled(d.clone(), t.fg(t.text)));
    }
    if let Some(note) = &c.note {
        lines.push(Line::styled(note.clone(), t.fg(t.accent)));
    }
    if let Some(p) = &c.prefix {
        let n = p.n.min(p.words.len());
        lines.push(Line::from(vec![
            Span::styled("don't ask again for commands starting with “", t.fg(t.text)),
            Span::styled(p.prefix(), t.accent().add_modifier(Modifier::BOLD)),
            Span::styled("”", t.fg(t.text)),
            Span::styled(
                format!("  ({n} of {} words; ← → fewer or more)", p.words.len()),
                t.dim(),
            ),
        ]));
    }
    lines.push(Line::styled(
        format!(
            "runs in the {} · timeout {:.0}s",
            sandbox_name(app),
            c.timeout_seconds
        ),
        t.dim(),
    ));
    frame.render_widget(Paragraph::new(lines), inner);
}

fn sandbox_name(app: &App) -> String {
    if app.status.sandbox.is_empty() {
        "sandbox".into()
    } else {
        format!(
            "{} sandbox",
            app.status
                .sandbox
                .split_whitespace()
                .next()
                .unwrap_or("the")
        )
    }
}
