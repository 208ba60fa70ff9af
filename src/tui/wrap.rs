//! Word wrapping of styled lines to a width, done here rather than by the paragraph widget so
//! the transcript knows each item's exact height (for scrolling and for drawing only the
//! visible slice). Widths are terminal cells (unicode-width); words longer than a line break
//! anywhere.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Wrap `line` to `width` cells; continuation lines start with `indent`.
pub fn wrap(line: &Line<'static>, width: usize, indent: &[Span<'static>]) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent_w: usize = indent.iter().map(|s| s.content.width()).sum();
    let total: usize = line.spans.iter().map(|s| s.content.width()).sum();
    if total <= width {
        return vec![line.clone()];
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut cur_w = 0usize;
    let start_line =
        |out: &mut Vec<Line<'static>>, cur: &mut Vec<Span<'static>>, cur_w: &mut usize| {
            if let Some(last) = cur.last_mut() {
                let trimmed = last.content.trim_end().to_string();
                last.content = trimmed.into();
            }
            out.push(Line::from(std::mem::take(cur)).style(line.style));
            cur.extend(indent.iter().cloned());
            *cur_w = indent_w;
        };
    for span in &line.spans {
        for piece in pieces(&span.content) {
            let pw = piece.width();
            let is_space = piece.chars().all(char::is_whitespace);
            if cur_w + pw <= width {
                push(&mut cur, piece, span.style);
                cur_w += pw;
            } else if is_space {
                start_line(&mut out, &mut cur, &mut cur_w);
            } else if pw <= width.saturating_sub(indent_w) && cur_w > indent_w {
                start_line(&mut out, &mut cur, &mut cur_w);
                push(&mut cur, piece, span.style);
                cur_w += pw;
            } else {
                // Longer than a line: break anywhere.
                for c in piece.chars() {
                    let cw = c.width().unwrap_or(0);
                    if cur_w + cw > width && cur_w > indent_w {
                        start_line(&mut out, &mut cur, &mut cur_w);
                    }
                    push(&mut cur, &c.to_string(), span.style);
                    cur_w += cw;
                }
            }
        }
    }
    out.push(Line::from(cur).style(line.style));
    out
}

/// Wrap several lines.
pub fn wrap_all(
    lines: &[Line<'static>],
    width: usize,
    indent: &[Span<'static>],
) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap(l, width, indent)).collect()
}

fn push(cur: &mut Vec<Span<'static>>, text: &str, style: Style) {
    match cur.last_mut() {
        Some(last) if last.style == style => {
            let mut s = last.content.to_string();
            s.push_str(text);
            last.content = s.into();
        }
        _ => cur.push(Span::styled(text.to_string(), style)),
    }
}

/// Runs of whitespace and runs of non-whitespace.
fn pieces(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<bool> = None;
    for (i, c) in s.char_indices() {
        let ws = c.is_whitespace();
        if prev.is_some_and(|p| p != ws) {
            out.push(&s[start..i]);
            start = i;
        }
        prev = Some(ws);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Cut a string to at most `width` cells, adding `…` when cut.
pub fn truncate(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Stylize;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn wraps_at_words_with_indent() {
        let l = Line::from("the quick brown fox jumps");
        let w = wrap(&l, 10, &[Span::raw("  ")]);
        assert_eq!(text(&w), vec!["the quick", "  brown", "  fox", "  jumps"]);
    }

    #[test]
    fn breaks_long_words_and_keeps_styles() {
        let l = Line::from(vec![Span::styled("abcdefghijkl", Style::new().bold())]);
        let w = wrap(&l, 5, &[]);
        assert_eq!(text(&w), vec!["abcde", "fghij", "kl"]);
        assert_eq!(w[1].spans[0].style, Style::new().bold());
    }

    #[test]
    fn truncates_with_ellipsis() {
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hi", 6), "hi");
    }
}
