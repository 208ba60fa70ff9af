//! The review panels: a file change as a highlighted diff (unified or split) with selectable
//! hunks, a line cursor and the person's line comments, and a command. Both dock under the
//! conversation (`views::dock` sizes them); a change may also fill the screen.

use crate::diff::Highlighter;
use crate::tui::app::{App, ChangeReview, CommandReview, Pane};
use crate::tui::diff_cursor::Drawing;
use crate::tui::diff_lines::{self, DiffWindow, HunkMarks};
use crate::tui::diff_split;
use crate::tui::keymap::{self, Action, Context};
use crate::tui::theme::{rgb, Theme};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// The rows drawn above a change's diff: the file's header, a note, a warning.
fn head_lines(c: &ChangeReview, t: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    match &c.diff {
        Some(diff) => lines.push(diff_lines::header(diff, t)),
        None => lines.push(Line::styled(
            format!("{}  computing the diff…", c.path),
            t.dim(),
        )),
    }
    if let Some(note) = &c.note {
        lines.push(Line::styled(note.clone(), t.fg(t.accent)));
    }
    if c.binary_before && c.diff.is_some() {
        lines.push(Line::styled(
            "the file was binary: its old content is not shown",
            t.fg(t.warning),
        ));
    }
    lines
}

/// The marks a change's review puts on its diff.
fn marks(c: &ChangeReview) -> HunkMarks<'_> {
    HunkMarks {
        selected: Some(&c.selected),
        focus: Some(c.focus),
        cursor: Some(c.cursor.line),
        comments: Some(&c.comments),
        selection: None,
        folded: c.folded(),
        gaps: Some(c.gap_marks()),
    }
}

/// The diff's rows `first..first + count` at `width`, split or unified as the person chose.
fn window(app: &App, c: &ChangeReview, width: usize, first: usize, count: usize) -> DiffWindow {
    let Some(diff) = &c.diff else {
        return DiffWindow {
            lines: Vec::new(),
            total: 0,
            hunk_starts: Vec::new(),
            line_starts: Vec::new(),
        };
    };
    let render = if app
        .diff_layout
        .is_split(c.dock.width.get(), diff.one_sided())
    {
        diff_split::render_window
    } else {
        diff_lines::render_window
    };
    render(diff, &app.theme, width, marks(c), first, count)
}

/// Rows the change's panel needs at `width` to show all of it (borders included).
pub(super) fn change_height(app: &App, c: &ChangeReview, width: u16) -> u16 {
    c.dock.width.set(width);
    let inner = width.saturating_sub(2) as usize;
    let empty = c.diff.as_ref().is_some_and(|d| d.hunks.is_empty());
    let rows =
        head_lines(c, &app.theme).len() + window(app, c, inner, 0, 0).total + usize::from(empty);
    (rows + 2).min(u16::MAX as usize) as u16
}

/// A change's review in `area`: docked under the conversation, or full screen.
pub(super) fn draw_change(frame: &mut Frame<'_>, area: Rect, app: &App, c: &ChangeReview) {
    let t = &app.theme;
    c.dock.width.set(frame.area().width);
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
    if c.dock.pane == Pane::Conversation {
        let tab = keymap::keys_of(Context::Diff, Action::SwitchPane);
        title.push(Span::styled(
            format!("· arrows scroll the conversation ({tab}: the diff) "),
            t.accent(),
        ));
    }
    let border = match c.dock.pane {
        Pane::Diff => t.fg(t.warning),
        Pane::Conversation => t.dim(),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    c.dock.panel.set(area);
    let width = inner.width as usize;
    let lines = head_lines(c, t);
    let Some(diff) = &c.diff else {
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    };
    let h = inner.height as usize;
    // Only the visible rows of the diff are built; `before` rows (header, notes) come first.
    let before = lines.len();
    let after = usize::from(diff.hunks.is_empty());
    // One pass for the diff's size and hunk positions, then the window at the clamped scroll.
    let sized = window(app, c, width, 0, 0);
    let total = before + sized.total + after;
    c.cursor.drawn(Drawing {
        hunk_starts: sized.hunk_starts.iter().map(|s| s + before).collect(),
        line_starts: sized.line_starts.iter().map(|s| s + before).collect(),
        page: h.saturating_sub(2).max(1),
        view: h,
        rows: total,
        width: c.dock.width.get(),
    });
    let scroll = c.cursor.top(total, h);
    let first = scroll.saturating_sub(before);
    let shown = window(app, c, width, first, h);
    let mut visible: Vec<Line<'static>> = lines.into_iter().skip(scroll).collect();
    visible.extend(shown.lines);
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
        let below = total - (scroll + h).min(total);
        let pos = if c.dock.full_screen || below == 0 {
            format!(" {}-{} of {} ", scroll + 1, (scroll + h).min(total), total)
        } else {
            let f = keymap::keys_of(Context::Diff, Action::FullScreen);
            format!(" [… {below} more lines] {f} full screen ")
        };
        let x = area.right().saturating_sub(pos.width() as u16 + 2);
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
