//! What a tool call shows while its arguments are generated: the arguments streamed so far
//! (`ToolItem::streamed`), the file path in the call's header as soon as it is there, and the
//! text being written (Write's `content`, Edit's `old_string`/`new_string`) growing under it,
//! coloured by the file's type once its path is complete. Does not own the call's other
//! lines (header, result, diff: `cell`).

use super::cell::ToolItem;
use super::RenderCtx;
use crate::diff::Highlighter;
use crate::protocol::ToolName;
use crate::tui::theme::rgb;
use crate::tui::wrap::wrap_all;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Lines of the text being written shown while the item is collapsed (the newest).
pub const STREAM_PREVIEW_LINES: usize = 12;

/// The streamed text of `parameter`, if any of it has arrived.
pub fn streamed<'a>(item: &'a ToolItem, parameter: &str) -> Option<&'a str> {
    item.streamed
        .iter()
        .find(|(p, _)| p == parameter)
        .map(|(_, t)| t.as_str())
}

/// Whether `parameter` is read to its end: a later parameter began, or the call is complete.
fn complete(item: &ToolItem, parameter: &str) -> bool {
    if item.call.is_some() {
        return true;
    }
    match item.streamed.iter().position(|(p, _)| p == parameter) {
        Some(i) => i + 1 < item.streamed.len(),
        None => false,
    }
}

/// Append a delta of `parameter`.
pub fn push(item: &mut ToolItem, parameter: &str, text: &str) {
    match item.streamed.iter_mut().find(|(p, _)| p == parameter) {
        Some((_, t)) => t.push_str(text),
        None => item
            .streamed
            .push((parameter.to_string(), text.to_string())),
    }
}

/// The header's summary of a call whose arguments are still arriving.
pub fn summary(item: &ToolItem) -> String {
    let tool = ToolName::parse(&item.name);
    let key = match tool {
        Some(ToolName::Read | ToolName::Write | ToolName::Edit) => "file_path",
        Some(ToolName::Bash) => "command",
        Some(ToolName::Glob) => "pattern",
        None => "",
    };
    let first = match key {
        "" => item.streamed.first().map(|(_, t)| t.as_str()),
        k => streamed(item, k),
    };
    match first {
        Some(v) if tool == Some(ToolName::Bash) => format!("$ {}", v.lines().next().unwrap_or("")),
        Some(v) => v.lines().next().unwrap_or("").to_string(),
        None => format!("{}…", item.name),
    }
}

/// The text being written, drawn under the header: while nothing decided the change yet
/// (no diff, no result). Collapsed, the newest [`STREAM_PREVIEW_LINES`] lines.
pub fn preview(
    item: &ToolItem,
    expanded: bool,
    width: usize,
    ctx: &RenderCtx<'_>,
) -> Vec<Line<'static>> {
    if item.diff.is_some() || item.result.is_some() {
        return Vec::new();
    }
    let parts: &[(&str, &str)] = match ToolName::parse(&item.name) {
        Some(ToolName::Write) => &[("content", "")],
        Some(ToolName::Edit) => &[("old_string", "- "), ("new_string", "+ ")],
        _ => &[],
    };
    let t = ctx.theme;
    let syntax = streamed(item, "file_path")
        .filter(|_| complete(item, "file_path"))
        .and_then(|p| Highlighter::syntax_for_path(p.trim()));
    let mut out = Vec::new();
    for (parameter, mark) in parts {
        let Some(text) = streamed(item, parameter) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let start = if expanded {
            0
        } else {
            lines.len().saturating_sub(STREAM_PREVIEW_LINES)
        };
        if start > 0 {
            out.push(Line::styled(format!("    … {start} lines above"), t.dim()));
        }
        let shown = &lines[start..];
        // Colours of the lines shown only (a long text is not coloured again per delta).
        let coloured = syntax.map(|s| ctx.hl.snippet(s, &shown.join("\n")));
        let mark_style = match *mark {
            "- " => t.fg(t.removed),
            "+ " => t.fg(t.added),
            _ => t.dim(),
        };
        let drawn: Vec<Line<'static>> = shown
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut spans = vec![
                    Span::styled("    ", t.dim()),
                    Span::styled(mark.to_string(), mark_style),
                ];
                match coloured.as_ref().and_then(|c| c.get(i)) {
                    Some(parts) => spans.extend(parts.iter().map(|(c, s)| {
                        Span::styled(
                            s.trim_end_matches('\n').to_string(),
                            Style::default().fg(rgb(*c)),
                        )
                    })),
                    None => spans.push(Span::styled(l.to_string(), t.fg(t.code))),
                }
                Line::from(spans)
            })
            .collect();
        out.extend(wrap_all(&drawn, width, &[Span::raw("      ")]));
    }
    out
}
