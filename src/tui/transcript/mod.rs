//! The transcript: the session as a list of [`HistoryCell`]s built from agent events, a scroll
//! position that follows new output until the person scrolls away, and a selection for
//! expanding items. Drawing touches only the visible lines; each cell caches its own lines.
//!
//! Invariant: only the last streaming cell (reasoning or assistant text), tool cells named by
//! call id, and the current turn's cells when the agent revises or settles the turn change after
//! they are pushed. A tool cell without a call is tentative (shown by its name, then by its
//! arguments as they stream in): the call is decided when the turn ends, and a tentative cell
//! no settled call claims becomes a notice.

pub mod cell;
pub mod markdown;
pub mod search;
pub mod streaming;

pub use cell::{CellKind, HistoryCell, Level, RenderCtx, ToolItem, ToolOutcome};

use crate::protocol::Event;
use crate::tui::Direction;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use std::cell::Cell;
use std::collections::HashMap;

/// Which of the model's two streams a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Reasoning,
    Content,
}

/// Lines of a person's command's output shown in its notice (`!cmd`); the rest is counted.
const SHELL_LINES: usize = 12;

/// See the module docs.
#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<HistoryCell>,
    by_call: HashMap<String, usize>,
    /// First visible line when not following.
    top: usize,
    /// Stick to the end as output arrives.
    pub follow: bool,
    selected: Option<usize>,
    last_width: Cell<usize>,
    last_height: Cell<usize>,
    last_total: Cell<usize>,
    /// The search match to mark: (line, query).
    found: Option<(usize, String)>,
    /// Where each turn's cells end (turn, cell count after it), for cutting the transcript
    /// back on a rewind.
    turn_ends: Vec<(u32, usize)>,
}

impl Transcript {
    pub fn new() -> Self {
        Self {
            follow: true,
            ..Self::default()
        }
    }

    pub fn cells(&self) -> &[HistoryCell] {
        &self.cells
    }

    pub fn push(&mut self, kind: CellKind) -> usize {
        self.cells.push(HistoryCell::new(kind));
        self.cells.len() - 1
    }

    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.finish_streaming();
        self.push(CellKind::Notice {
            level,
            text: text.into(),
        });
    }

    /// The tool cell of a call id.
    pub fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolItem> {
        let i = *self.by_call.get(call_id)?;
        match self.cells.get_mut(i)?.edit() {
            CellKind::Tool(item) => Some(item),
            _ => None,
        }
    }

    /// Mark streaming reasoning and text as complete.
    pub fn finish_streaming(&mut self) {
        if let Some(last) = self.cells.last_mut() {
            match &last.kind {
                CellKind::Reasoning { done: false, .. }
                | CellKind::Assistant { done: false, .. } => match last.edit() {
                    CellKind::Reasoning { done, .. } | CellKind::Assistant { done, .. } => {
                        *done = true
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }

    /// Add an agent event to the transcript (events that only change status are ignored).
    pub fn apply(&mut self, ev: &Event) {
        match ev {
            Event::UserMessage { text } => {
                self.finish_streaming();
                self.push(CellKind::User(text.clone()));
            }
            Event::ProjectInstructions { files, text } => {
                self.finish_streaming();
                self.push(CellKind::Instructions {
                    files: files.clone(),
                    text: text.clone(),
                });
            }
            Event::TurnStarted { turn: step } => {
                self.finish_streaming();
                self.push(CellKind::TurnHeader(*step));
            }
            Event::ReasoningDelta { text } => self.append_stream(text, Stream::Reasoning),
            Event::ContentDelta { text } => self.append_stream(text, Stream::Content),
            Event::ToolCallStarted { name } => {
                self.finish_streaming();
                self.push(CellKind::Tool(Box::new(ToolItem {
                    name: name.clone(),
                    ..ToolItem::default()
                })));
            }
            Event::ToolCallArgumentDelta { parameter, text } => {
                let from = self.turn_start();
                let open = self.cells[from..]
                    .iter()
                    .rposition(|c| matches!(&c.kind, CellKind::Tool(t) if t.call.is_none()));
                if let Some(i) = open {
                    if let CellKind::Tool(t) = self.cells[from + i].edit() {
                        streaming::push(t, parameter, text);
                    }
                }
            }
            Event::TurnRevised { reasoning, content } => self.revise(reasoning, content),
            Event::ToolCallReady { call } => {
                self.finish_streaming();
                let from = self.turn_start();
                let open = self.cells[from..]
                    .iter()
                    .position(|c| {
                        matches!(&c.kind, CellKind::Tool(t) if t.call.is_none() && t.name == call.name)
                    })
                    .map(|i| from + i);
                let i = match open {
                    Some(i) => i,
                    None => self.push(CellKind::Tool(Box::new(ToolItem {
                        name: call.name.clone(),
                        ..ToolItem::default()
                    }))),
                };
                if let CellKind::Tool(t) = self.cells[i].edit() {
                    t.call = Some(call.clone());
                }
                self.by_call.insert(call.id.clone(), i);
            }
            Event::MalformedCall { message } => {
                self.notice(Level::Warning, format!("malformed tool call: {message}"))
            }
            Event::ApprovalRequested(req) => {
                if let Some(t) = self.tool_mut(&req.call.id) {
                    t.waiting_approval = true;
                }
            }
            Event::ToolOutputDelta { call_id, text } => {
                if let Some(t) = self.tool_mut(call_id) {
                    cell::push_live(t, text);
                }
            }
            Event::ToolResult {
                call_id,
                content,
                is_error,
                resolution,
                ..
            } => {
                if let Some(t) = self.tool_mut(call_id) {
                    t.waiting_approval = false;
                    t.live.clear();
                    t.result = Some(ToolOutcome {
                        content: content.clone(),
                        is_error: *is_error,
                        resolution: *resolution,
                    });
                }
            }
            Event::TurnFinished { turn: step, .. } => {
                self.finish_streaming();
                self.drop_tentative();
                self.turn_ends.retain(|(t, _)| t < step);
                self.turn_ends.push((*step, self.cells.len()));
            }
            Event::TurnRecorded { .. } => {}
            Event::ApprovalPolicyChanged { policy } => self.notice(
                Level::Info,
                format!(
                    "approvals: {} from now on (Shift-Tab: the next policy)",
                    policy.short_spec()
                ),
            ),
            Event::CommentsRecorded { comments } => self.notice(
                Level::Info,
                format!(
                    "review comments recorded (not sent to the model):\n{}",
                    crate::protocol::RecordedComment::numbered(comments)
                ),
            ),
            Event::Rewound {
                turn, from_turn, ..
            } => {
                self.cut_to_turn(*turn);
                let text = if *turn == 0 {
                    format!("⟲ rewound to the start (from turn {from_turn}): the files and the conversation are as they were before the first turn")
                } else {
                    format!("⟲ rewound to the end of turn {turn} (from turn {from_turn}): the files and the conversation are as they were then")
                };
                self.notice(Level::Info, text);
            }
            Event::Paused { turn: step } => self.notice(
                Level::Info,
                format!("⏸ paused after step {step}: n runs the next turn, s leaves step mode"),
            ),
            Event::TaskFinished { reason, .. } => {
                self.finish_streaming();
                self.push(CellKind::Finished { reason: *reason });
            }
            Event::CheckFinished {
                command,
                passed,
                output,
                ..
            } => {
                let (level, word) = if *passed {
                    (Level::Info, "passed")
                } else {
                    (Level::Warning, "failed")
                };
                let lines: Vec<&str> = output.lines().collect();
                let tail = lines[lines.len().saturating_sub(3)..].join("\n");
                self.notice(level, format!("check {word}: {command}\n{tail}"));
            }
            Event::ShellRan {
                command,
                output,
                attached,
            } => {
                let lines: Vec<&str> = output.lines().collect();
                let shown = SHELL_LINES.min(lines.len());
                let mut text = match attached {
                    true => format!("$ {command}  (goes with your next message)\n"),
                    false => format!("$ {command}\n"),
                };
                text.push_str(&lines[..shown].join("\n"));
                if lines.len() > shown {
                    text.push_str(&format!("\n… {} more lines", lines.len() - shown));
                }
                self.notice(Level::Info, text);
            }
            Event::Error { message } => self.notice(Level::Error, format!("error: {message}")),
            Event::ConversationRestarted { old_context_tokens } => self.notice(
                Level::Info,
                format!(
                    "↻ a fresh conversation starts here (the old one held {old_context_tokens} tokens): it carries the task and the patch so far"
                ),
            ),
            Event::ToolResultsDropped {
                dropped,
                context_tokens,
            } => self.notice(
                Level::Info,
                format!(
                    "✂ {} old tool result{} dropped from the conversation (about {context_tokens} tokens now)",
                    dropped.len(),
                    if dropped.len() == 1 { " was" } else { "s were" }
                ),
            ),
            Event::SessionStarted { .. } | Event::SessionEnded | Event::MessageQueued { .. } => {}
        }
    }

    /// Turns whose end is known, oldest first (the ones a rewind can go back to, with 0).
    pub fn turns(&self) -> Vec<u32> {
        self.turn_ends.iter().map(|(t, _)| *t).collect()
    }

    /// Drop every cell after the end of turn `turn` (0: before the first message or turn).
    fn cut_to_turn(&mut self, turn: u32) {
        self.finish_streaming();
        let end = if turn == 0 {
            self.cells
                .iter()
                .position(|c| matches!(c.kind, CellKind::User(_) | CellKind::TurnHeader(_)))
        } else {
            self.turn_ends
                .iter()
                .find(|(t, _)| *t == turn)
                .map(|(_, end)| *end)
        };
        let Some(end) = end else { return };
        self.cells.truncate(end);
        self.turn_ends.retain(|(t, _)| *t <= turn);
        self.by_call.retain(|_, i| *i < end);
        if self.selected.is_some_and(|i| i >= end) {
            self.selected = None;
        }
        self.found = None;
        self.follow = true;
    }

    /// Index of the first cell of the current turn (after its header).
    fn turn_start(&self) -> usize {
        self.cells
            .iter()
            .rposition(|c| matches!(c.kind, CellKind::TurnHeader(_)))
            .map_or(0, |i| i + 1)
    }

    /// The turn's text as settled replaces what its deltas showed.
    fn revise(&mut self, reasoning: &str, content: &str) {
        self.finish_streaming();
        let from = self.turn_start();
        let mut at = from;
        for (want, is_reasoning) in [(reasoning, true), (content, false)] {
            let found = self.cells[from..].iter().position(|c| match c.kind {
                CellKind::Reasoning { .. } => is_reasoning,
                CellKind::Assistant { .. } => !is_reasoning,
                _ => false,
            });
            match found.map(|i| from + i) {
                Some(i) => {
                    if let CellKind::Reasoning { text, .. } | CellKind::Assistant { text, .. } =
                        self.cells[i].edit()
                    {
                        *text = want.to_string();
                    }
                    at = i + 1;
                }
                None if !want.is_empty() => {
                    let text = want.to_string();
                    let kind = if is_reasoning {
                        CellKind::Reasoning { text, done: true }
                    } else {
                        CellKind::Assistant { text, done: true }
                    };
                    // Cells of this turn have no call ids yet (those come after the revision).
                    self.cells.insert(at, HistoryCell::new(kind));
                    at += 1;
                }
                None => {}
            }
        }
    }

    /// Tentative tool cells of the turn that no settled call claimed become notices.
    fn drop_tentative(&mut self) {
        let from = self.turn_start();
        for cell in &mut self.cells[from..] {
            let name = match &cell.kind {
                CellKind::Tool(t) if t.call.is_none() => t.name.clone(),
                _ => continue,
            };
            *cell.edit() = CellKind::Notice {
                level: Level::Info,
                text: format!(
                    "{name}… was not run: once the turn ended it was reasoning, ambiguous or \
                     incomplete, not a call"
                ),
            };
        }
    }

    fn append_stream(&mut self, delta: &str, stream: Stream) {
        let continues = matches!(
            (self.cells.last().map(|c| &c.kind), stream),
            (
                Some(CellKind::Reasoning { done: false, .. }),
                Stream::Reasoning
            ) | (
                Some(CellKind::Assistant { done: false, .. }),
                Stream::Content
            )
        );
        if !continues {
            self.finish_streaming();
            if delta.trim().is_empty() {
                // Whitespace between blocks does not open a new item.
                return;
            }
            let text = String::new();
            self.push(match stream {
                Stream::Reasoning => CellKind::Reasoning { text, done: false },
                Stream::Content => CellKind::Assistant { text, done: false },
            });
        }
        if let Some(last) = self.cells.last_mut() {
            match last.edit() {
                CellKind::Reasoning { text, .. } | CellKind::Assistant { text, .. } => {
                    text.push_str(delta)
                }
                _ => {}
            }
        }
    }

    // ---- scrolling and selection ----

    fn total_lines(&self, width: usize, ctx: &RenderCtx<'_>) -> Vec<usize> {
        self.cells
            .iter()
            .enumerate()
            .map(|(i, c)| c.lines(width, ctx, self.selected == Some(i)).len())
            .collect()
    }

    pub fn scroll_by(&mut self, delta: isize) {
        let max_top = self.last_total.get().saturating_sub(self.last_height.get());
        let cur = if self.follow {
            max_top
        } else {
            self.top.min(max_top)
        };
        let next = (cur as isize + delta).clamp(0, max_top as isize) as usize;
        self.top = next;
        self.follow = next >= max_top;
    }

    /// Scroll by a page (the view's height less two lines of overlap).
    pub fn page(&mut self, to: Direction) {
        let h = self.last_height.get().saturating_sub(2).max(1) as isize;
        self.scroll_by(match to {
            Direction::Forward => h,
            Direction::Back => -h,
        });
    }

    pub fn to_top(&mut self) {
        self.top = 0;
        self.follow = self.last_total.get() <= self.last_height.get();
    }

    pub fn to_bottom(&mut self) {
        self.follow = true;
    }

    pub fn selected(&self) -> Option<usize> {
        self.selected
    }

    /// Move the selection to the next (or previous) expandable item.
    pub fn select(&mut self, to: Direction, ctx: &RenderCtx<'_>) {
        let n = self.cells.len();
        let start = self.selected;
        let candidates: Box<dyn Iterator<Item = usize>> = match (to, start) {
            (Direction::Forward, Some(s)) => Box::new(s + 1..n),
            (Direction::Forward, None) => Box::new(0..n),
            (Direction::Back, Some(s)) => Box::new((0..s).rev()),
            (Direction::Back, None) => Box::new((0..n).rev()),
        };
        let next = candidates
            .into_iter()
            .find(|&i| self.cells[i].selectable(ctx));
        if let Some(i) = next {
            self.selected = Some(i);
            self.reveal(i, ctx);
        }
    }

    /// The first line of the thought streaming now, if the model is thinking.
    pub fn thinking(&self) -> Option<&str> {
        match &self.cells.last()?.kind {
            CellKind::Reasoning { text, done: false } => {
                text.lines().map(str::trim).find(|l| !l.is_empty())
            }
            _ => None,
        }
    }

    /// Drop the selection when its item is not drawn any more (reasoning just hidden).
    pub fn unselect_hidden(&mut self, ctx: &RenderCtx<'_>) {
        if let Some(i) = self.selected {
            if self.cells.get(i).is_none_or(|c| c.hidden(ctx)) {
                self.selected = None;
            }
        }
    }

    /// What `c` copies: the selected item, else the last answer. (What it is, its text.)
    pub fn copy_text(&self) -> Option<(String, String)> {
        let cell = match self.selected {
            Some(i) => self.cells.get(i)?,
            None => self
                .cells
                .iter()
                .rev()
                .find(|c| matches!(c.kind, CellKind::Assistant { .. }))?,
        };
        Some((cell.what(), cell.plain_text()?))
    }

    /// Expand or collapse the selected item.
    pub fn toggle_selected(&mut self, ctx: &RenderCtx<'_>) -> bool {
        let Some(i) = self.selected else {
            return false;
        };
        if !self.cells[i].expandable() {
            return false;
        }
        let default = self.cells[i].is_expanded(ctx);
        let cell = &mut self.cells[i];
        cell.expanded = Some(default);
        cell.toggle(default);
        self.reveal(i, ctx);
        true
    }

    fn reveal(&mut self, i: usize, ctx: &RenderCtx<'_>) {
        let width = self.last_width.get().max(1);
        let heights = self.total_lines(width, ctx);
        let start: usize = heights[..i].iter().sum();
        let h = self.last_height.get().max(1);
        let total: usize = heights.iter().sum();
        let cur = if self.follow {
            total.saturating_sub(h)
        } else {
            self.top
        };
        if start < cur || start >= cur + h {
            self.top = start.saturating_sub(1);
            self.follow = false;
        }
    }

    /// Draw the visible lines into `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer, ctx: &RenderCtx<'_>) {
        let width = area.width as usize;
        let height = area.height as usize;
        self.last_width.set(width);
        self.last_height.set(height);
        let heights = self.total_lines(width, ctx);
        let total: usize = heights.iter().sum();
        self.last_total.set(total);
        let max_top = total.saturating_sub(height);
        let top = if self.follow {
            max_top
        } else {
            self.top.min(max_top)
        };
        let mut line_no = 0usize;
        let mut y = 0usize;
        for (i, (cell, h)) in self.cells.iter().zip(&heights).enumerate() {
            if line_no + h <= top {
                line_no += h;
                continue;
            }
            let lines = cell.lines(width, ctx, self.selected == Some(i));
            let skip = top.saturating_sub(line_no);
            let y_start = y;
            for line in lines.iter().skip(skip) {
                if y >= height {
                    return;
                }
                buf.set_line(area.x, area.y + y as u16, line, area.width);
                self.mark_row(
                    line_no + skip + (y - y_start),
                    area,
                    area.y + y as u16,
                    buf,
                    ctx.theme.fg(ctx.theme.text).bg(ctx.theme.selection_bg),
                );
                y += 1;
            }
            line_no += h;
            if y >= height {
                return;
            }
        }
    }

    /// Where the view is: (first visible line, total lines, following).
    pub fn position(&self) -> (usize, usize, bool) {
        let total = self.last_total.get();
        let top = if self.follow {
            total.saturating_sub(self.last_height.get())
        } else {
            self.top
        };
        (top, total, self.follow)
    }
}
