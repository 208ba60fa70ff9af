//! The status line: model, sandbox, step n/max, context used, tokens per second, elapsed
//! time, the approval policy, and the agent's state on the right.

use crate::protocol::ApprovalPolicy;
use crate::tui::app::{AgentState, App};
use crate::tui::wrap::truncate;
use crate::tui::ReasoningView;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use std::time::Instant;
use unicode_width::UnicodeWidthStr;

/// Most columns the thought's first line takes in the status line.
const MAX_THINKING_WIDTH: usize = 60;

/// Tokens as `950`, `12.3k`, `131k`.
pub(super) fn tokens(n: usize) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=99_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{}k", n / 1000),
    }
}

fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = &app.theme;
    let s = &app.status;
    let base = t.status();
    // The short forms: "script: demo", "host sandbox" (details are in the transcript).
    let model = match s.model.split(" (").next() {
        Some(m) if !m.is_empty() => m,
        _ => "no model yet",
    };
    let sandbox = s.sandbox.split(':').next().unwrap_or("");
    // (priority, text, style): the lowest priorities go first when the line is too narrow.
    let mut items: Vec<(u8, String, ratatui::style::Style)> = vec![
        (
            1,
            "lilypad".into(),
            base.fg(t.accent).add_modifier(Modifier::BOLD),
        ),
        (7, truncate(model, 32), base),
    ];
    if let Some(label) = &app.attempt_label {
        items.insert(1, (9, label.clone(), base.fg(t.accent)));
    }
    if !sandbox.is_empty() {
        items.push((3, truncate(sandbox, 20), base));
    }
    let max = if s.max_steps > 0 {
        s.max_steps.to_string()
    } else {
        "?".into()
    };
    items.push((8, format!("step {}/{max}", s.step), base));
    if s.context_limit > 0 {
        let pct = s.context_tokens as f64 * 100.0 / s.context_limit as f64;
        let style = if pct > 85.0 { base.fg(t.warning) } else { base };
        items.push((
            6,
            format!(
                "ctx {}/{} {pct:.0}%",
                tokens(s.context_tokens),
                tokens(s.context_limit as usize)
            ),
            style,
        ));
    }
    if let Some(r) = s.tokens_per_second {
        items.push((4, format!("{r:.0} tok/s"), base));
    }
    items.push((5, clock(s.elapsed(Instant::now())), base));
    if let Some(p) = &s.approval_policy {
        // Looser than the default (something runs without asking that would be asked about):
        // in the warning colour.
        let style = if p.looser_than(&ApprovalPolicy::default()) {
            base.fg(t.warning)
        } else {
            base
        };
        items.push((8, format!("approvals {}", p.short_spec()), style));
    }
    let state_style = match s.state {
        AgentState::WaitingForReview | AgentState::Paused => base.fg(t.warning),
        AgentState::Generating | AgentState::RunningTool => base.fg(t.accent),
        AgentState::Finished => base.fg(t.added),
        _ => base,
    };
    // While the model thinks, what it thinks about: the first line of the thought.
    let label = match app.transcript.thinking() {
        Some(line) if s.state == AgentState::Generating => {
            let room = (area.width as usize / 2).clamp(16, MAX_THINKING_WIDTH);
            format!("thinking: {}", truncate(line, room))
        }
        _ => s.state.label().to_string(),
    };
    let mut right = vec![Span::styled(
        format!("● {label} "),
        state_style.add_modifier(Modifier::BOLD),
    )];
    if app.reasoning == ReasoningView::Hidden {
        right.insert(0, Span::styled("[reasoning hidden] ", base.fg(t.dim)));
    }
    if s.step_mode {
        right.insert(0, Span::styled("[step mode] ", base.fg(t.warning)));
    }
    let rw: usize = right.iter().map(|s| s.content.width()).sum();
    let line_width = |items: &[(u8, String, ratatui::style::Style)]| {
        items
            .iter()
            .map(|(_, text, _)| text.width() + 3)
            .sum::<usize>()
    };
    while line_width(&items) + rw > area.width as usize && items.len() > 1 {
        let lowest = items
            .iter()
            .enumerate()
            .min_by_key(|(_, (p, _, _))| *p)
            .map(|(i, _)| i)
            .unwrap_or(0);
        items.remove(lowest);
    }
    let mut left = Vec::new();
    for (i, (_, text, style)) in items.into_iter().enumerate() {
        left.push(Span::styled(
            if i == 0 { " " } else { " │ " },
            base.fg(t.dim),
        ));
        left.push(Span::styled(text, style));
    }
    let lw: usize = left.iter().map(|s| s.content.width()).sum();
    let pad = (area.width as usize).saturating_sub(lw + rw);
    left.push(Span::styled(" ".repeat(pad), base));
    left.extend(right);
    frame.render_widget(Paragraph::new(Line::from(left)).style(base), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(131_072), "131k");
        assert_eq!(clock(std::time::Duration::from_secs(75)), "1:15");
        assert_eq!(clock(std::time::Duration::from_secs(3725)), "1:02:05");
    }
}
