//! One transcript item ([`HistoryCell`]) and how it draws itself for a width (`display_lines`), in
//! the manner of codex's history cells. Only the active cell (the one streaming) changes; every
//! cell caches its lines per width and view settings, so a long transcript costs nothing to
//! redraw but the visible slice and the cell that grew.

use super::markdown;
use crate::diff::{FileDiff, Highlighter};
use crate::protocol::{FinishReason, Resolution, ToolCall, ToolName};
use crate::tui::diff_lines;
use crate::tui::settings::ReasoningView;
use crate::tui::theme::Theme;
use crate::tui::wrap::{truncate, wrap, wrap_all};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Result lines shown while a tool item is collapsed.
pub const COLLAPSED_RESULT_LINES: usize = 4;
/// Reasoning lines shown while a thought streams and the reasoning is hidden.
const STREAMING_REASONING_LINES: usize = 3;
/// Live command output kept in memory (the tail; the full result arrives at the end).
const LIVE_OUTPUT_BYTES: usize = 64 * 1024;

/// How serious a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// A tool call's life in the transcript.
#[derive(Debug, Clone, Default)]
pub struct ToolItem {
    pub name: String,
    /// Known once the call is complete.
    pub call: Option<ToolCall>,
    /// Arguments as they are generated, (parameter, raw text so far), in the order they began.
    pub streamed: Vec<(String, String)>,
    /// Live output of a running command (tail).
    pub live: String,
    pub result: Option<ToolOutcome>,
    /// The change's diff, once computed (Write and Edit).
    pub diff: Option<Arc<FileDiff>>,
    pub waiting_approval: bool,
}

/// A finished tool call.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub content: String,
    pub is_error: bool,
    pub resolution: Resolution,
}

/// What an item is.
#[derive(Debug, Clone)]
pub enum CellKind {
    /// A message from the person (the task first).
    User(String),
    /// The project instructions the first message starts with (collapsed: the files).
    Instructions {
        files: Vec<String>,
        text: String,
    },
    TurnHeader(u32),
    Reasoning {
        text: String,
        done: bool,
    },
    Assistant {
        text: String,
        done: bool,
    },
    Tool(Box<ToolItem>),
    Notice {
        level: Level,
        text: String,
    },
    Finished {
        reason: FinishReason,
    },
}

/// Settings that change how every cell draws.
pub struct RenderCtx<'a> {
    pub theme: &'a Theme,
    pub hl: &'a Highlighter,
    /// How reasoning is shown (collapsed, in full, hidden).
    pub reasoning: ReasoningView,
    /// Bumped whenever the settings above change (part of the cache key).
    pub epoch: u64,
}

/// Lines drawn for (width, cell version, settings epoch, selected).
type CachedLines = (usize, u64, u64, bool, Rc<Vec<Line<'static>>>);

/// A transcript item with its draw cache.
#[derive(Debug)]
pub struct HistoryCell {
    pub kind: CellKind,
    /// Per-item override of the default collapsed/expanded state.
    pub expanded: Option<bool>,
    version: u64,
    cache: RefCell<Option<CachedLines>>,
}

impl HistoryCell {
    pub fn new(kind: CellKind) -> Self {
        Self {
            kind,
            expanded: None,
            version: 0,
            cache: RefCell::new(None),
        }
    }

    /// Mutable access; marks the cell for redrawing.
    pub fn edit(&mut self) -> &mut CellKind {
        self.version += 1;
        &mut self.kind
    }

    /// Whether Enter does something on this item.
    pub fn expandable(&self) -> bool {
        matches!(
            self.kind,
            CellKind::Reasoning { .. } | CellKind::Tool(_) | CellKind::Instructions { .. }
        )
    }

    /// Whether Tab stops on this item (to expand it or copy it): not on hidden reasoning.
    pub fn selectable(&self, ctx: &RenderCtx<'_>) -> bool {
        if self.hidden(ctx) {
            return false;
        }
        matches!(
            self.kind,
            CellKind::User(_)
                | CellKind::Instructions { .. }
                | CellKind::Reasoning { .. }
                | CellKind::Assistant { .. }
                | CellKind::Tool(_)
        )
    }

    /// The item as clean text, for copying: no markers, gutters or wrap breaks. A message is
    /// its text as written (markdown source), a change its unified diff, a command `$ cmd`
    /// and its output, another tool its result.
    pub fn plain_text(&self) -> Option<String> {
        match &self.kind {
            CellKind::User(t) => Some(t.clone()),
            CellKind::Instructions { text, .. } => Some(text.clone()),
            CellKind::Reasoning { text, .. } | CellKind::Assistant { text, .. } => {
                Some(text.trim().to_string())
            }
            CellKind::Tool(item) => Some(tool_text(item)),
            CellKind::Notice { text, .. } => Some(text.clone()),
            CellKind::TurnHeader(_) | CellKind::Finished { .. } => None,
        }
    }

    /// What the item is, in a few words ("the message", "the Bash result").
    pub fn what(&self) -> String {
        match &self.kind {
            CellKind::User(_) => "your message".into(),
            CellKind::Instructions { .. } => "the project instructions".into(),
            CellKind::Reasoning { .. } => "the reasoning".into(),
            CellKind::Assistant { .. } => "the answer".into(),
            CellKind::Tool(item) if item.diff.is_some() => format!("the {} diff", item.name),
            CellKind::Tool(item) => format!("the {} result", item.name),
            CellKind::Notice { .. } => "the notice".into(),
            CellKind::TurnHeader(_) | CellKind::Finished { .. } => "the item".into(),
        }
    }

    pub fn toggle(&mut self, ctx_default: bool) {
        let now = self.expanded.unwrap_or(ctx_default);
        self.expanded = Some(!now);
        self.version += 1;
    }

    /// Whether the item is expanded under `ctx`.
    pub fn is_expanded(&self, ctx: &RenderCtx<'_>) -> bool {
        self.expanded.unwrap_or(match self.kind {
            CellKind::Reasoning { .. } => ctx.reasoning == ReasoningView::Full,
            _ => false,
        })
    }

    /// Whether the item draws nothing under `ctx` (reasoning, when it is hidden).
    pub fn hidden(&self, ctx: &RenderCtx<'_>) -> bool {
        matches!(self.kind, CellKind::Reasoning { .. }) && ctx.reasoning == ReasoningView::Hidden
    }

    /// The item's lines for `width`, from the cache when nothing changed.
    pub fn lines(
        &self,
        width: usize,
        ctx: &RenderCtx<'_>,
        selected: bool,
    ) -> Rc<Vec<Line<'static>>> {
        if let Some((w, v, e, s, lines)) = &*self.cache.borrow() {
            if *w == width && *v == self.version && *e == ctx.epoch && *s == selected {
                return lines.clone();
            }
        }
        let mut lines = self.display_lines(width, ctx);
        if selected {
            for l in &mut lines {
                l.spans.insert(0, Span::styled("▌", ctx.theme.accent()));
            }
        }
        let lines = Rc::new(lines);
        *self.cache.borrow_mut() = Some((width, self.version, ctx.epoch, selected, lines.clone()));
        lines
    }

    fn display_lines(&self, width: usize, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        if self.hidden(ctx) {
            return Vec::new();
        }
        let t = ctx.theme;
        let width = width.saturating_sub(1).max(10);
        let mut out = match &self.kind {
            CellKind::User(text) => {
                let mut v = Vec::new();
                for (i, l) in text.lines().enumerate() {
                    let lead = if i == 0 { "› " } else { "  " };
                    let line = Line::from(vec![
                        Span::styled(lead, t.accent().add_modifier(Modifier::BOLD)),
                        Span::styled(l.to_string(), t.bold()),
                    ]);
                    v.extend(wrap(&line, width, &[Span::raw("  ")]));
                }
                v
            }
            CellKind::TurnHeader(step) => {
                let label = format!(" step {step} ");
                let side = width.saturating_sub(label.len() + 2) / 2;
                vec![Line::styled(
                    format!("{}{label}{}", "─".repeat(2), "─".repeat(side.min(40))),
                    t.dim(),
                )]
            }
            CellKind::Instructions { files, text } => {
                instructions(files, text, self.is_expanded(ctx), width, ctx)
            }
            CellKind::Reasoning { text, done } => self.reasoning(text, *done, width, ctx),
            CellKind::Assistant { text, done } => assistant(text, *done, width, ctx),
            CellKind::Tool(item) => tool_lines(item, self.is_expanded(ctx), width, ctx),
            CellKind::Notice { level, text } => {
                let style = match level {
                    Level::Info => t.dim(),
                    Level::Warning => t.fg(t.warning),
                    Level::Error => t.fg(t.error),
                };
                // Each of its lines (a command's output) on its own, the later ones indented.
                text.split('\n')
                    .enumerate()
                    .flat_map(|(i, l)| {
                        let l = if i == 0 {
                            l.to_string()
                        } else {
                            format!("  {l}")
                        };
                        wrap(&Line::styled(l, style), width, &[Span::raw("  ")])
                    })
                    .collect()
            }
            CellKind::Finished { reason } => {
                let (text, style) = match reason {
                    FinishReason::Answered => ("✔ task finished".to_string(), t.fg(t.added)),
                    FinishReason::Interrupted => ("■ interrupted".to_string(), t.fg(t.warning)),
                    other => (
                        format!("■ task stopped: {}", finish_text(*other)),
                        t.fg(t.warning),
                    ),
                };
                vec![Line::styled(text, style.add_modifier(Modifier::BOLD))]
            }
        };
        out.push(Line::default());
        out
    }

    fn reasoning(
        &self,
        text: &str,
        done: bool,
        width: usize,
        ctx: &RenderCtx<'_>,
    ) -> Vec<Line<'static>> {
        let t = ctx.theme;
        let style = t.dim().add_modifier(Modifier::ITALIC);
        let body: Vec<&str> = text.trim().lines().collect();
        let expanded = self.is_expanded(ctx);
        let head = if done {
            let n = body.len();
            format!("✻ Thought ({n} line{})", if n == 1 { "" } else { "s" })
        } else {
            "✻ Thinking…".to_string()
        };
        let marker = if expanded { "▾ " } else { "▸ " };
        let mut out = vec![Line::styled(format!("{marker}{head}"), t.dim())];
        let shown: &[&str] = if expanded {
            &body
        } else if !done {
            &body[body.len().saturating_sub(STREAMING_REASONING_LINES)..]
        } else {
            &[]
        };
        let indent = [Span::raw("  ")];
        for l in shown {
            out.extend(wrap(
                &Line::from(vec![Span::raw("  "), Span::styled(l.to_string(), style)]),
                width,
                &indent,
            ));
        }
        out
    }
}

/// The project instructions: one line naming the files, and their text when expanded.
fn instructions(
    files: &[String],
    text: &str,
    expanded: bool,
    width: usize,
    ctx: &RenderCtx<'_>,
) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let marker = if expanded { "▾ " } else { "▸ " };
    let n = text.lines().count();
    let head = format!(
        "{marker}Project instructions: {} ({n} line{})",
        files.join(", "),
        if n == 1 { "" } else { "s" }
    );
    let mut out = wrap(&Line::styled(head, t.dim()), width, &[Span::raw("  ")]);
    if expanded {
        for l in text.lines() {
            out.extend(wrap(
                &Line::from(vec![Span::raw("  "), Span::styled(l.to_string(), t.dim())]),
                width,
                &[Span::raw("  ")],
            ));
        }
    }
    out
}

fn finish_text(r: FinishReason) -> &'static str {
    match r {
        FinishReason::Answered => "answered",
        FinishReason::TokenCap => "a turn hit the token cap",
        FinishReason::StepLimit => "step limit reached",
        FinishReason::ContextLimit => "context limit reached",
        FinishReason::TimeLimit => "time limit reached",
        FinishReason::Interrupted => "interrupted",
        FinishReason::Error => "error",
    }
}

fn assistant(text: &str, done: bool, width: usize, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
    // Newline-gated: only complete lines are markdown while streaming.
    let (complete, tail) = if done {
        (text, "")
    } else {
        match text.rfind('\n') {
            Some(i) => (&text[..i + 1], &text[i + 1..]),
            None => ("", text),
        }
    };
    let mut logical = markdown::render(complete.trim(), ctx.theme, ctx.hl);
    if !tail.is_empty() {
        logical.push(Line::styled(
            tail.to_string(),
            Style::default().fg(ctx.theme.text),
        ));
    }
    let mut out = vec![];
    for (i, l) in logical.iter().enumerate() {
        let lead = if i == 0 { "• " } else { "  " };
        let mut spans = vec![Span::styled(lead, ctx.theme.fg(ctx.theme.text))];
        spans.extend(l.spans.iter().cloned());
        out.extend(wrap(&Line::from(spans), width, &[Span::raw("  ")]));
    }
    out
}

/// `Read(src/app.py)`, `Bash($ make test)`: the call's one-line summary.
pub fn call_summary(item: &ToolItem) -> String {
    let Some(call) = &item.call else {
        return super::streaming::summary(item);
    };
    let arg = |k: &str| call.arguments.get(k).map(json_text).unwrap_or_default();
    match ToolName::parse(&call.name) {
        Some(ToolName::Read) => {
            let mut s = arg("file_path");
            if let Some(o) = call.arguments.get("offset") {
                s.push_str(&format!(" from line {}", json_text(o)));
            }
            if let Some(l) = call.arguments.get("limit") {
                s.push_str(&format!(", {} lines", json_text(l)));
            }
            s
        }
        Some(ToolName::Write | ToolName::Edit) => arg("file_path"),
        Some(ToolName::Glob) => {
            let p = arg("path");
            if p.is_empty() {
                arg("pattern")
            } else {
                format!("{} in {p}", arg("pattern"))
            }
        }
        Some(ToolName::Bash) => format!("$ {}", arg("command").lines().next().unwrap_or("")),
        None => serde_json::Value::Object(call.arguments.clone()).to_string(),
    }
}

fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn tool_lines(
    item: &ToolItem,
    expanded: bool,
    width: usize,
    ctx: &RenderCtx<'_>,
) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let (dot, dot_style) = match (&item.result, item.waiting_approval) {
        (None, true) => ("◆", t.fg(t.warning)),
        (None, false) => ("○", t.accent()),
        (Some(r), _) if r.is_error => ("●", t.fg(t.error)),
        (Some(r), _) => match r.resolution {
            Resolution::Rejected | Resolution::Denied | Resolution::Skipped => {
                ("●", t.fg(t.warning))
            }
            _ => ("●", t.fg(t.added)),
        },
    };
    let mut head = vec![
        Span::styled(format!("{dot} "), dot_style),
        Span::styled(item.name.clone(), t.bold()),
        Span::styled(
            format!(
                "({})",
                truncate(
                    &call_summary(item),
                    width.saturating_sub(item.name.len() + 8)
                )
            ),
            t.fg(t.text),
        ),
    ];
    if let Some(d) = &item.diff {
        head.push(Span::styled(format!("  +{}", d.added()), t.fg(t.added)));
        head.push(Span::styled(format!(" -{}", d.removed()), t.fg(t.removed)));
    }
    let note = match (&item.result, item.waiting_approval) {
        (None, true) => Some(("  waiting for your review", t.fg(t.warning))),
        (Some(r), _) => match r.resolution {
            Resolution::Rejected => Some(("  rejected", t.fg(t.warning))),
            Resolution::Denied => Some(("  denied by policy", t.fg(t.warning))),
            Resolution::Edited => Some(("  approved with your edits", t.fg(t.accent))),
            Resolution::Skipped => Some(("  skipped", t.dim())),
            Resolution::Auto | Resolution::Approved => None,
        },
        _ => None,
    };
    if let Some((text, style)) = note {
        head.push(Span::styled(text, style));
    }
    let mut out = wrap(&Line::from(head), width, &[Span::raw("  ")]);
    // A multi-line command is shown whole under its header.
    if let Some(call) = item.call.as_ref().filter(|c| is_bash(c)) {
        let cmd = call
            .arguments
            .get("command")
            .map(json_text)
            .unwrap_or_default();
        for l in cmd.lines().skip(1) {
            out.push(Line::styled(format!("    {l}"), t.fg(t.code)));
        }
    }
    out.extend(super::streaming::preview(item, expanded, width, ctx));
    let body: Vec<String> = match &item.result {
        Some(r) => r.content.lines().map(str::to_string).collect(),
        None => item.live.lines().map(str::to_string).collect(),
    };
    let style = match &item.result {
        Some(r) if r.is_error => t.fg(t.error),
        _ => t.dim(),
    };
    if expanded {
        if let Some(d) = &item.diff {
            out.push(diff_lines::header(d, t));
            let rendered = diff_lines::render(d, t, width, Default::default());
            out.extend(rendered.lines);
        }
    }
    let limit = if expanded {
        usize::MAX
    } else {
        COLLAPSED_RESULT_LINES
    };
    let (shown, hidden) = if item.result.is_none() {
        // Live output: the newest lines.
        let start = body.len().saturating_sub(limit);
        (&body[start..], start)
    } else {
        let n = body.len().min(limit);
        (&body[..n], body.len() - n)
    };
    let body_lines: Vec<Line<'static>> = shown
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let lead = if i == 0 { "  ⎿ " } else { "    " };
            Line::from(vec![
                Span::styled(lead, t.dim()),
                Span::styled(l.clone(), style),
            ])
        })
        .collect();
    out.extend(wrap_all(&body_lines, width, &[Span::raw("    ")]));
    if hidden > 0 {
        let what = if item.result.is_none() {
            "earlier"
        } else {
            "more"
        };
        out.push(Line::styled(
            format!("    … {hidden} {what} lines (Tab to select, Enter to expand)"),
            t.dim(),
        ));
    }
    out
}

fn tool_text(item: &ToolItem) -> String {
    if let Some(d) = &item.diff {
        return d.unified();
    }
    let body = match &item.result {
        Some(r) => r.content.clone(),
        None => item.live.clone(),
    };
    match item.call.as_ref() {
        Some(call) if is_bash(call) => {
            let cmd = call
                .arguments
                .get("command")
                .map(json_text)
                .unwrap_or_default();
            if body.is_empty() {
                format!("$ {cmd}")
            } else {
                format!("$ {cmd}\n{body}")
            }
        }
        _ if body.is_empty() => call_summary(item),
        _ => body,
    }
}

/// Keep only the tail of live output.
pub fn push_live(item: &mut ToolItem, text: &str) {
    item.live.push_str(text);
    if item.live.len() > LIVE_OUTPUT_BYTES {
        let mut cut = item.live.len() - LIVE_OUTPUT_BYTES / 2;
        while !item.live.is_char_boundary(cut) {
            cut += 1;
        }
        item.live.drain(..cut);
    }
}

fn is_bash(call: &ToolCall) -> bool {
    ToolName::parse(&call.name) == Some(ToolName::Bash)
}
