//! Syntax colours from syntect, by file type, as foreground colours on diff segments and on
//! code snippets (markdown code blocks, commands). The syntax and theme sets load once per
//! process (tens of milliseconds) on first use. Colouring a computed diff in order, from the
//! file's start, is [`super::paint`]'s; this module owns the sets, themes, per-line colours and
//! laying colours over a diff line's segments. Callers run this off the draw path.

use super::{DiffLine, Hunk, LineKind, Segment};
use std::ops::Range;
use std::sync::{Arc, OnceLock};
use syntect::highlighting::{
    HighlightIterator, HighlightState, Highlighter as Styler, Theme, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

/// A 24-bit colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// The syntax theme used when a named one is missing.
pub const DEFAULT_THEME: &str = "base16-ocean.dark";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

/// Load the syntax set and compile the first rules of common languages, so the first code
/// block or diff does not pay for it on the draw path. Takes tens of milliseconds: call it on a
/// background thread at start-up.
pub fn prewarm() {
    let hl = Highlighter::default();
    for ext in [
        "rs", "py", "ts", "js", "go", "c", "sh", "md", "toml", "json",
    ] {
        if let Some(syntax) = Highlighter::syntax_for_path(&format!("x.{ext}")) {
            drop(hl.colour_lines(syntax, &["let x = \"a\"; // b"]));
        }
    }
}

/// The names of the built-in syntax themes.
pub fn theme_names() -> Vec<String> {
    themes().themes.keys().cloned().collect()
}

/// Colours code with one syntax theme. Cheap to clone.
#[derive(Clone)]
pub struct Highlighter {
    theme: Arc<Theme>,
    /// Past this many lines a file's diff is drawn without syntax colours and word emphasis
    /// (`[interface] highlight_limit`).
    limit: usize,
}

impl std::fmt::Debug for Highlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Highlighter")
            .field("theme", &self.theme.name)
            .field("limit", &self.limit)
            .finish()
    }
}

impl Default for Highlighter {
    fn default() -> Self {
        Self::new(DEFAULT_THEME)
    }
}

/// Coloured byte ranges of one line.
pub type LineColours = Vec<(Rgb, Range<usize>)>;

impl Highlighter {
    /// A highlighter for the named syntect theme (the default theme if there is none such).
    pub fn new(theme: &str) -> Self {
        let set = themes();
        let theme = set
            .themes
            .get(theme)
            .or_else(|| set.themes.get(DEFAULT_THEME))
            .or_else(|| set.themes.values().next())
            .cloned()
            .unwrap_or_default();
        Self {
            theme: Arc::new(theme),
            limit: super::PLAIN_TEXT_LINES,
        }
    }

    /// The same highlighter, colouring files of at most `lines` lines (past them a diff is
    /// plain text).
    pub fn with_limit(mut self, lines: usize) -> Self {
        self.limit = lines;
        self
    }

    /// Lines past which a diff is plain text.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The syntax for a file path (by extension, then by name), if known.
    pub fn syntax_for_path(path: &str) -> Option<&'static SyntaxReference> {
        let set = syntaxes();
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or(name);
        set.find_syntax_by_extension(ext)
            .or_else(|| set.find_syntax_by_extension(name))
    }

    /// The syntax for a markdown fence tag or language name (`rust`, `py`, `sh`...).
    pub fn syntax_for_token(token: &str) -> Option<&'static SyntaxReference> {
        let set = syntaxes();
        if token.is_empty() {
            return None;
        }
        set.find_syntax_by_token(token)
    }

    /// The syntect theme.
    pub(super) fn theme(&self) -> Arc<Theme> {
        self.theme.clone()
    }

    /// Colours of each of `lines` (without terminators), highlighted in sequence.
    pub fn colour_lines(&self, syntax: &SyntaxReference, lines: &[&str]) -> Vec<LineColours> {
        let styler = Styler::new(&self.theme);
        let mut parse = ParseState::new(syntax);
        let mut style = HighlightState::new(&styler, ScopeStack::new());
        lines
            .iter()
            .map(|line| line_colours(&mut parse, &mut style, &styler, line))
            .collect()
    }

    /// A snippet as coloured pieces per line, for code blocks and commands. `None` when the
    /// syntax is unknown.
    pub fn snippet(&self, syntax: &SyntaxReference, code: &str) -> Vec<Vec<(Rgb, String)>> {
        let lines: Vec<&str> = code.lines().collect();
        self.colour_lines(syntax, &lines)
            .into_iter()
            .zip(&lines)
            .map(|(colours, line)| {
                colours
                    .into_iter()
                    .map(|(c, r)| (c, line[r].to_string()))
                    .collect()
            })
            .collect()
    }

    /// Colour hunks read from a patch: each side of each hunk highlighted on its own, since
    /// the rest of the file is not known.
    pub(super) fn colour_hunks(&self, path: &str, hunks: &mut [Hunk]) {
        let Some(syntax) = Self::syntax_for_path(path) else {
            return;
        };
        for hunk in hunks {
            for side in [LineKind::Removed, LineKind::Added] {
                let idx: Vec<usize> = (0..hunk.lines.len())
                    .filter(|&i| {
                        matches!(hunk.lines[i].kind, LineKind::Context)
                            || hunk.lines[i].kind == side
                    })
                    .collect();
                let texts: Vec<String> = idx.iter().map(|&i| hunk.lines[i].text()).collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let colours = self.colour_lines(syntax, &refs);
                for (&i, c) in idx.iter().zip(&colours) {
                    // Context lines take the new side's colours (the second pass).
                    overlay(&mut hunk.lines[i], c);
                }
            }
        }
    }
}

/// The plain-text syntax (no colours).
pub(super) fn plain_syntax() -> &'static SyntaxReference {
    syntaxes().find_syntax_plain_text()
}

/// Colours of one line (without its terminator), moving the parser and highlighter states past
/// it. A line the parser fails on stays plain (its state is left as it was).
pub(super) fn line_colours(
    parse: &mut ParseState,
    style: &mut HighlightState,
    styler: &Styler<'_>,
    line: &str,
) -> LineColours {
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    let Ok(ops) = parse.parse_line(&buf, syntaxes()) else {
        return Vec::new();
    };
    let mut colours = Vec::new();
    let mut pos = 0;
    for (s, piece) in HighlightIterator::new(style, &ops, &buf, styler) {
        let end = (pos + piece.len()).min(line.len());
        if pos < end {
            let c = s.foreground;
            colours.push((Rgb(c.r, c.g, c.b), pos..end));
        }
        pos += piece.len();
    }
    colours
}

/// Split a line's segments at the colour boundaries and give each piece its colour, keeping
/// emphasis.
pub(super) fn overlay(line: &mut DiffLine, colours: &[(Rgb, Range<usize>)]) {
    let mut out = Vec::new();
    let mut seg_start = 0;
    for seg in &line.segments {
        let seg_end = seg_start + seg.text.len();
        let mut pos = seg_start;
        for (c, r) in colours {
            let (s, e) = (r.start.max(pos), r.end.min(seg_end));
            if s >= e {
                continue;
            }
            if s > pos {
                out.push(piece(
                    &seg.text[pos - seg_start..s - seg_start],
                    None,
                    seg.emph,
                ));
            }
            out.push(piece(
                &seg.text[s - seg_start..e - seg_start],
                Some(*c),
                seg.emph,
            ));
            pos = e;
        }
        if pos < seg_end {
            out.push(piece(&seg.text[pos - seg_start..], None, seg.emph));
        }
        seg_start = seg_end;
    }
    if !out.is_empty() {
        line.segments = out;
    }
}

fn piece(text: &str, fg: Option<Rgb>, emph: bool) -> Segment {
    Segment {
        text: text.to_string(),
        fg,
        emph,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_gets_colours_and_keeps_text() {
        let hl = Highlighter::default();
        let d = crate::diff::FileDiff::compute_with(
            "m.py",
            Some("def f(x):\n    return x\n"),
            "def f(x):\n    return x + 1\n",
            &hl,
        );
        let added = d.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Added)
            .unwrap();
        assert_eq!(added.text(), "    return x + 1");
        assert!(added.segments.iter().any(|s| s.fg.is_some()));
        assert!(added.segments.iter().any(|s| s.emph));
    }

    #[test]
    fn unknown_types_stay_plain() {
        assert!(Highlighter::syntax_for_path("x.unknownext").is_none());
        assert!(Highlighter::syntax_for_path("src/main.rs").is_some());
        assert!(Highlighter::syntax_for_token("bash").is_some());
    }
}
