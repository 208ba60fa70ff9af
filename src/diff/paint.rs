//! Syntax colours for a computed diff, painted in order and resumable, so a review can show
//! its first screen coloured long before the last hunk of a large file is.
//!
//! Owns: walking the new text from its first line (multi-line strings and comments colour
//! correctly wherever a hunk starts), colouring context and added lines from that walk, and
//! colouring each run of removed lines from a copy of the walk's state where the run sits.
//! The old text is never highlighted as a whole: a removed run starts from the state of the
//! new text at the same place, which differs from the old file's own state only when an
//! earlier removed line opened a construct that the new text does not (then a few removed
//! lines may take the new side's colours). That halves the work of highlighting both texts.
//!
//! Does not own: computing hunks or emphasis ([`super::hunks`], [`super::emphasis`]), the
//! syntect sets and themes ([`super::highlight`]), or when painting runs (callers run it off
//! the draw path; [`super::FileDiff::compute_in_stages`] paints the first screen, hands the
//! diff over, then paints the rest).

use super::highlight::{self, Highlighter, LineColours};
use super::hunks::{split_lines, strip_eol};
use super::{FileDiff, LineKind};
use std::ops::Range;
use std::sync::Arc;
use syntect::highlighting::{HighlightState, Highlighter as Styler, Theme};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference};

/// The parser and highlighter state after some line.
#[derive(Clone)]
struct State {
    parse: ParseState,
    style: HighlightState,
}

/// Paints one diff's lines in order; keep it with the diff to resume.
pub struct Painter {
    theme: Arc<Theme>,
    syntax: Option<&'static SyntaxReference>,
    /// The new text and its lines (without terminators) as byte ranges.
    new: String,
    lines: Vec<Range<usize>>,
    /// State before new-text line `next_new` (0-based).
    state: State,
    next_new: usize,
    /// State within a run of removed lines (`None` outside one).
    removed: Option<State>,
    /// Next diff line to paint: hunk index, line index within it.
    hunk: usize,
    line: usize,
}

impl std::fmt::Debug for Painter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Painter")
            .field("syntax", &self.syntax.map(|s| &s.name))
            .field("hunk", &self.hunk)
            .field("line", &self.line)
            .finish()
    }
}

impl Painter {
    /// A painter for the change to `after` at `path` (its extension picks the syntax; with none
    /// known, painting does nothing and finishes at once).
    pub fn new(hl: &Highlighter, path: &str, after: &str) -> Self {
        let theme = hl.theme();
        let syntax = Highlighter::syntax_for_path(path);
        let state = fresh_state(&theme, syntax);
        let lines = split_lines(after)
            .into_iter()
            .map(|l| {
                // `split_lines` hands out subslices of `after`: their offsets are positions.
                let start = l.as_ptr() as usize - after.as_ptr() as usize;
                start..start + strip_eol(l).len()
            })
            .collect();
        Self {
            theme,
            syntax,
            new: after.to_string(),
            lines,
            state,
            next_new: 0,
            removed: None,
            hunk: 0,
            line: 0,
        }
    }

    /// Whether every line of `diff` is painted.
    pub fn finished(&self, diff: &FileDiff) -> bool {
        self.syntax.is_none() || self.hunk >= diff.hunks.len()
    }

    /// Paint the next `budget` lines of `diff` (in hunk order); true when all are painted.
    /// `diff` must be the one this painter started on, as computed (not yet painted past
    /// where this painter stands).
    pub fn paint(&mut self, diff: &mut FileDiff, budget: usize) -> bool {
        if self.syntax.is_none() {
            return true;
        }
        let theme = self.theme.clone();
        let styler = Styler::new(&theme);
        let mut left = budget;
        while left > 0 && self.hunk < diff.hunks.len() {
            let hunk = &mut diff.hunks[self.hunk];
            let Some(line) = hunk.lines.get_mut(self.line) else {
                self.hunk += 1;
                self.line = 0;
                continue;
            };
            let colours = match (line.kind, line.new_no) {
                (LineKind::Removed, _) => {
                    let st = self.removed.get_or_insert_with(|| self.state.clone());
                    highlight_line(st, &styler, &line.text())
                }
                (_, Some(n)) => {
                    self.removed = None;
                    self.advance_to(n - 1, &styler);
                    let range = self.lines.get(n - 1).cloned().unwrap_or(0..0);
                    let colours = highlight_line(&mut self.state, &styler, &self.new[range]);
                    self.next_new = n;
                    colours
                }
                (_, None) => Vec::new(),
            };
            highlight::overlay(line, &colours);
            self.line += 1;
            left -= 1;
        }
        self.finished(diff)
    }

    /// Highlight (and drop the colours of) new-text lines up to, not including, `index`.
    fn advance_to(&mut self, index: usize, styler: &Styler<'_>) {
        while self.next_new < index {
            let range = self.lines.get(self.next_new).cloned().unwrap_or(0..0);
            highlight_line(&mut self.state, styler, &self.new[range]);
            self.next_new += 1;
        }
    }
}

fn fresh_state(theme: &Theme, syntax: Option<&SyntaxReference>) -> State {
    let styler = Styler::new(theme);
    let parse = match syntax {
        Some(s) => ParseState::new(s),
        // Never used: a painter without a syntax paints nothing.
        None => ParseState::new(highlight::plain_syntax()),
    };
    State {
        parse,
        style: HighlightState::new(&styler, ScopeStack::new()),
    }
}

/// Colours of one line (without its terminator), moving `st` past it.
fn highlight_line(st: &mut State, styler: &Styler<'_>, line: &str) -> LineColours {
    highlight::line_colours(&mut st.parse, &mut st.style, styler, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn painted(path: &str, before: &str, after: &str) -> FileDiff {
        FileDiff::compute_with(path, Some(before), after, &Highlighter::default())
    }

    #[test]
    fn a_hunk_inside_a_long_string_is_coloured_as_string() {
        // The hunk sits inside a triple-quoted string opened 20 lines earlier, outside the
        // hunk's context: only a walk from the file's start knows it is a string.
        let mut before = String::from("x = 1\ns = \"\"\"\n");
        for i in 0..20 {
            before.push_str(&format!("def not_code_{i}():\n"));
        }
        before.push_str("\"\"\"\ndef real():\n    pass\n");
        let after = before.replace("def not_code_15():", "def changed():");
        let inside = painted("m.py", &before, &after);
        let added = inside.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Added)
            .expect("an added line");
        // The same line as code, for comparison.
        let code = painted("m.py", "x = 1\n", "x = 1\ndef changed():\n");
        let code_line = code.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Added)
            .expect("an added line");
        let colours = |l: &crate::diff::DiffLine| -> Vec<Option<highlight::Rgb>> {
            l.segments.iter().map(|s| s.fg).collect()
        };
        assert_eq!(added.text(), code_line.text());
        assert_ne!(colours(added), colours(code_line));
        // Inside the string the whole line has one colour.
        let fgs: std::collections::HashSet<_> = added.segments.iter().map(|s| s.fg).collect();
        assert_eq!(fgs.len(), 1, "{:?}", added.segments);
    }

    #[test]
    fn painting_in_steps_equals_painting_at_once() {
        let before: String = (0..300)
            .map(|i| format!("let v{i} = \"s{i}\"; // c{i}\n"))
            .collect();
        let after = before
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i % 7 == 0 {
                    format!("let w{i} = {i} * 2;\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect::<String>();
        let hl = Highlighter::default();
        let whole = FileDiff::compute_with("a.rs", Some(&before), &after, &hl);
        let mut stepped = FileDiff::compute_plain("a.rs", Some(&before), &after, hl.limit());
        let mut p = Painter::new(&hl, "a.rs", &after);
        let mut rounds = 0;
        while !p.paint(&mut stepped, 13) {
            rounds += 1;
        }
        assert!(rounds > 10);
        assert_eq!(stepped, whole);
        assert!(whole
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .all(|l| l.segments.iter().any(|s| s.fg.is_some())));
    }

    #[test]
    fn removed_lines_get_their_own_colours() {
        let d = painted(
            "a.rs",
            "let a = 1;\n// gone\n",
            "let a = 1;\nfn kept() {}\n",
        );
        let removed = d.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Removed)
            .expect("a removed line");
        let added = d.hunks[0]
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Added)
            .expect("an added line");
        assert_eq!(removed.text(), "// gone");
        assert!(removed.segments.iter().all(|s| s.fg.is_some()));
        let rc: Vec<_> = removed.segments.iter().map(|s| s.fg).collect();
        let ac: Vec<_> = added.segments.iter().map(|s| s.fg).collect();
        assert_ne!(
            rc.first(),
            ac.first(),
            "a comment and a keyword share a colour"
        );
    }

    #[test]
    fn unknown_syntax_finishes_at_once_and_stays_plain() {
        let hl = Highlighter::default();
        let mut d = FileDiff::compute_plain("x.unknownext", Some("a\n"), "b\n", hl.limit());
        let mut p = Painter::new(&hl, "x.unknownext", "b\n");
        assert!(p.paint(&mut d, 1));
        assert!(d
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .all(|l| l.segments.iter().all(|s| s.fg.is_none())));
    }
}
