//! The session patch: every changed file as a highlighted diff, the same way each change was
//! reviewed (line cursor and line comments included), with apply / save / discard.

use crate::tui::app::{App, PatchReview};
use crate::tui::diff_lines;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear};
use ratatui::Frame;

pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, p: &PatchReview) {
    let t = &app.theme;
    let (added, removed) = p.totals();
    let n = p.files.len();
    let title = Line::from(vec![
        Span::styled(" Session patch ", t.accent().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!("{n} file{} ", if n == 1 { "" } else { "s" }),
            t.dim(),
        ),
        Span::styled(format!("+{added} "), t.fg(t.added)),
        Span::styled(format!("-{removed} "), t.fg(t.removed)),
    ]);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.accent))
        .title(title);
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line<'static>> = vec![Line::styled(
        "Nothing has touched your working tree yet. Apply it there, save it as a file, or discard it.",
        t.dim(),
    )];
    let mut starts = Vec::new();
    let mut line_starts = Vec::new();
    for (i, f) in p.files.iter().enumerate() {
        lines.push(Line::default());
        starts.push(lines.len());
        let mut head = diff_lines::header(f, t);
        let marker = if i == p.file_focus { "▶ " } else { "  " };
        head.spans.insert(0, Span::styled(marker, t.accent()));
        lines.push(head);
        // The cursor counts the lines of every file; each file is drawn with its own.
        let marks = diff_lines::HunkMarks {
            cursor: p.line.checked_sub(line_starts.len()),
            comments: Some(&p.comments),
            ..Default::default()
        };
        let rendered = diff_lines::render(f, t, width, marks);
        line_starts.extend(rendered.line_starts.iter().map(|r| r + lines.len()));
        lines.extend(rendered.lines);
    }
    *p.file_starts.borrow_mut() = starts;
    *p.line_starts.borrow_mut() = line_starts;
    let h = inner.height as usize;
    p.page.set(h.saturating_sub(2).max(1));
    let scroll = p.scroll.min(lines.len().saturating_sub(h));
    for (i, line) in lines.iter().skip(scroll).take(h).enumerate() {
        frame
            .buffer_mut()
            .set_line(inner.x, inner.y + i as u16, line, inner.width);
    }
}
