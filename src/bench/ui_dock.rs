//! The docked review's frame cost: a change of `diff_lines` lines (one in ten changed) waits
//! below a transcript of `transcript_lines`, and each frame moves the line cursor one line and
//! draws the whole screen at 200x50, the diff split and then unified, against the 60 fps frame
//! budget. Drawn by the real `App` and views into ratatui's `TestBackend`.

use super::agent_turns::ratio;
use super::ui::{feed, history, new_app, source, FRAME_BUDGET};
use super::{percentile, Figure};
use crate::protocol::{ApprovalKind, ApprovalRequest, Event, ToolCall, ToolCategory};
use crate::tui::{views, DiffLayout};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::Instant;

const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;

/// Frame times of the docked review, split and unified.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub transcript_lines: usize,
    pub diff_lines: usize,
    pub split_p99: f64,
    pub unified_p99: f64,
}

pub fn run(transcript_lines: usize, diff_lines: usize, frames: usize) -> std::io::Result<Outcome> {
    Ok(Outcome {
        transcript_lines,
        diff_lines,
        split_p99: frames_p99(transcript_lines, diff_lines, frames, DiffLayout::Split)?,
        unified_p99: frames_p99(transcript_lines, diff_lines, frames, DiffLayout::Unified)?,
    })
}

/// p99 seconds of a frame (one line down, draw) of the docked review in `layout`.
fn frames_p99(
    transcript_lines: usize,
    diff_lines: usize,
    frames: usize,
    layout: DiffLayout,
) -> std::io::Result<f64> {
    let mut app = new_app();
    app.diff_layout = layout;
    history(&mut app, transcript_lines);
    let call = ToolCall {
        id: "call_1".into(),
        name: "Write".into(),
        arguments: serde_json::json!({"file_path": "src/big.rs"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    feed(
        &mut app,
        Event::ApprovalRequested(ApprovalRequest {
            id: 1,
            call,
            category: ToolCategory::Edits,
            kind: ApprovalKind::Change {
                path: "src/big.rs".into(),
                before: Some(source(diff_lines, false)),
                after: source(diff_lines, true),
                binary_before: false,
            },
        }),
    );
    let mut term = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    term.draw(|f| views::draw(f, &app))?;
    let mut times = Vec::with_capacity(frames);
    for _ in 0..frames {
        let t = Instant::now();
        app.on_key(KeyEvent::from(KeyCode::Char('j')));
        term.draw(|f| views::draw(f, &app))?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(percentile(&times, 99.0))
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        let ms = |s: f64| s * 1000.0;
        let row = |layout: &str, p99: f64| {
            Figure {
            bench: "ui".into(),
            name: format!(
                "frame p99, a {}-line change docked below a {}-line transcript, {layout} ({WIDTH}x{HEIGHT})",
                self.diff_lines, self.transcript_lines
            ),
            value: ms(p99),
            unit: "ms".into(),
            baseline: "60 fps frame budget".into(),
            baseline_value: ms(FRAME_BUDGET),
            ratio: ratio(FRAME_BUDGET, p99),
            better: "higher".into(),
            target: Some(1.0),
        }
        };
        vec![
            row("split", self.split_p99),
            row("unified", self.unified_p99),
        ]
    }
}
