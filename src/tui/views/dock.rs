//! The layout of a review: the panel (a change's diff or a command) docks under the
//! conversation, as tall as its content up to [`PANEL_SHARE_PERCENT`] of the rows, and the
//! conversation keeps at least [`MIN_CONVERSATION_ROWS`]; so the turn that proposed the change
//! (its reasoning, its words, its tool call) stays on screen above it. A change may instead
//! fill the screen: the turn's last words are then pinned above it.
//!
//! Owns the sizes and the full-screen view's pinned words; the panels themselves are drawn by
//! `views::review`.

use crate::tui::app::{App, ChangeReview};
use crate::tui::transcript::CellKind;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Rows the conversation keeps above a docked panel.
pub(super) const MIN_CONVERSATION_ROWS: u16 = 8;

/// The share of the terminal's rows a docked panel may take, in percent.
pub(super) const PANEL_SHARE_PERCENT: u16 = 60;

/// Rows of the turn's last words pinned above a change shown full screen.
pub(super) const PINNED_ROWS: usize = 3;

/// The height of a panel that wants `wanted` rows, in a frame of `rows` rows of which
/// `other` go to the rows under the panel (queued messages, message line, status, hints).
pub(super) fn panel_height(wanted: u16, rows: u16, other: u16) -> u16 {
    let share = (u32::from(rows) * u32::from(PANEL_SHARE_PERCENT) / 100) as u16;
    let room = rows.saturating_sub(other.saturating_add(MIN_CONVERSATION_ROWS));
    wanted.min(share).min(room)
}

/// A change full screen in `area`: the last rows of the model's words in the turn that
/// proposed it on top, a rule, then the change.
pub(super) fn draw_full_screen(frame: &mut Frame<'_>, area: Rect, app: &App, c: &ChangeReview) {
    let t = &app.theme;
    let words = last_words(app, area.width as usize);
    let pinned = if words.is_empty() {
        0
    } else {
        words.len() as u16 + 1
    };
    let [top, rest] = Layout::vertical([
        Constraint::Length(pinned.min(area.height / 2)),
        Constraint::Min(3),
    ])
    .areas(area);
    if top.height > 0 {
        let mut lines = words;
        lines.push(Line::from(Span::styled(
            "─".repeat(top.width as usize),
            t.fg(t.border),
        )));
        let skip = lines.len().saturating_sub(top.height as usize);
        frame.render_widget(Paragraph::new(lines.split_off(skip)), top);
    }
    super::review::draw_change(frame, rest, app, c);
}

/// The last [`PINNED_ROWS`] rows of the model's last words, as the transcript draws them.
fn last_words(app: &App, width: usize) -> Vec<Line<'static>> {
    let ctx = app.render_ctx();
    let Some(cell) =
        app.transcript.cells().iter().rev().find(
            |c| matches!(&c.kind, CellKind::Assistant { text, .. } if !text.trim().is_empty()),
        )
    else {
        return Vec::new();
    };
    let mut lines: Vec<Line<'static>> = (*cell.lines(width, &ctx, false)).clone();
    while lines.last().is_some_and(|l| l.width() == 0) {
        lines.pop();
    }
    let skip = lines.len().saturating_sub(PINNED_ROWS);
    lines.split_off(skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panel_takes_its_content_up_to_the_share_and_leaves_the_conversation_eight_rows() {
        // 80x24: message line, status and hints below the panel.
        assert_eq!(panel_height(5, 24, 3), 5);
        assert_eq!(panel_height(100, 24, 3), 13, "24 - 3 - 8");
        assert_eq!(panel_height(100, 40, 3), 24, "60% of 40");
        assert_eq!(panel_height(100, 10, 3), 0, "no room at all");
    }
}
