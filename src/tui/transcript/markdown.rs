//! Assistant text as markdown: headings, emphasis, inline code, lists, quotes, rules and
//! fenced code blocks (syntax-coloured). Produces logical lines; the caller wraps them. While a
//! reply streams, only text up to its last newline is rendered as markdown (a half-written
//! `**bold` would otherwise flicker between styles); the rest shows as plain text.

use crate::diff::Highlighter;
use crate::tui::theme::{rgb, Theme};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Render markdown `text` to lines.
pub fn render(text: &str, theme: &Theme, hl: &Highlighter) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        hl,
        lines: Vec::new(),
        cur: Vec::new(),
        styles: vec![Style::default().fg(theme.text)],
        lists: Vec::new(),
        quote: 0,
        code: None,
        pending_prefix: None,
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

struct Renderer<'a> {
    theme: &'a Theme,
    hl: &'a Highlighter,
    lines: Vec<Line<'static>>,
    cur: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Open lists: the next number for ordered ones.
    lists: Vec<Option<u64>>,
    quote: usize,
    /// Inside a fenced block: (language, text so far).
    code: Option<(String, String)>,
    /// A list bullet waiting for the item's first text.
    pending_prefix: Option<String>,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl Fn(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn indent(&self) -> String {
        "  ".repeat(self.lists.len().saturating_sub(1))
    }

    fn start_line_prefix(&mut self) {
        if !self.cur.is_empty() {
            return;
        }
        if self.quote > 0 {
            self.cur
                .push(Span::styled("│ ".repeat(self.quote), self.theme.dim()));
        }
        if let Some(p) = self.pending_prefix.take() {
            self.cur.push(Span::styled(
                format!("{}{p}", self.indent()),
                self.theme.accent(),
            ));
        } else if !self.lists.is_empty() {
            self.cur.push(Span::raw(format!("{}  ", self.indent())));
        }
    }

    fn text(&mut self, t: &str) {
        self.start_line_prefix();
        let style = self.style();
        self.cur.push(Span::styled(t.to_string(), style));
    }

    fn flush(&mut self) {
        if !self.cur.is_empty() {
            self.lines.push(Line::from(std::mem::take(&mut self.cur)));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, ev: Event<'_>) {
        if let Some((_, buf)) = &mut self.code {
            match ev {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                self.start_line_prefix();
                self.cur.push(Span::styled(
                    t.to_string(),
                    Style::default().fg(self.theme.code),
                ));
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines
                    .push(Line::styled("─".repeat(24), self.theme.dim()));
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph if self.lists.is_empty() => self.blank(),
            Tag::Paragraph if self.pending_prefix.is_none() => self.flush(),
            Tag::Heading { level, .. } => {
                self.blank();
                let hashes = "#".repeat(level as usize);
                let style = Style::default()
                    .fg(self.theme.heading)
                    .add_modifier(Modifier::BOLD);
                self.cur.push(Span::styled(format!("{hashes} "), style));
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.blank();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.blank();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => {
                        l.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let s = format!("{n}. ");
                        *n += 1;
                        s
                    }
                    _ => "• ".to_string(),
                };
                self.pending_prefix = Some(bullet);
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => {
                let accent = self.theme.accent;
                self.push_style(|s| s.fg(accent).add_modifier(Modifier::UNDERLINED))
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => {
                self.pending_prefix = None;
                self.flush();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::TableRow | TagEnd::TableHead => self.flush(),
            TagEnd::TableCell => self.text("  "),
            _ => {}
        }
    }

    fn end_code(&mut self) {
        let Some((lang, code)) = self.code.take() else {
            return;
        };
        let pad = format!("{}  ", self.indent());
        let coloured = Highlighter::syntax_for_token(&lang).map(|s| self.hl.snippet(s, &code));
        for (i, line) in code.lines().enumerate() {
            let mut spans = vec![Span::raw(pad.clone())];
            match coloured.as_ref().and_then(|c| c.get(i)) {
                Some(pieces) if !pieces.is_empty() => spans.extend(
                    pieces
                        .iter()
                        .map(|(c, t)| Span::styled(t.clone(), Style::default().fg(rgb(*c)))),
                ),
                _ => spans.push(Span::styled(
                    line.to_string(),
                    Style::default().fg(self.theme.code),
                )),
            }
            self.lines.push(Line::from(spans));
        }
        self.lines.push(Line::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Vec<String> {
        render(text, &Theme::dark(), &Highlighter::default())
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn renders_blocks() {
        let out = plain("# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```python\nx = 1\n```\n");
        assert_eq!(
            out,
            vec![
                "# Title",
                "",
                "Some bold and code.",
                "",
                "• one",
                "• two",
                "",
                "1. first",
                "2. second",
                "",
                "  x = 1",
            ]
        );
    }

    #[test]
    fn styles_inline_code_and_bold() {
        let lines = render("a **b** `c`", &Theme::dark(), &Highlighter::default());
        let spans = &lines[0].spans;
        assert!(spans
            .iter()
            .any(|s| s.content == "b" && s.style.add_modifier.contains(Modifier::BOLD)));
        assert!(spans
            .iter()
            .any(|s| s.content == "c" && s.style.fg == Some(Theme::dark().code)));
    }
}
