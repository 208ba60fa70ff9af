//! Finding text in the transcript: which drawn lines contain a query (smart case: a query
//! with a capital letter matches case exactly), scrolling a match into view, and marking it
//! when drawn. Lines are the ones on screen (wrapped at the last width), so a match is a
//! line the person can see; text broken across a wrap is not found. Does not own the query
//! or which match is current (that is the App's).

use super::{RenderCtx, Transcript};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

/// Whether `hay` contains `query`, ignoring case unless the query has a capital letter.
pub fn contains(hay: &str, query: &str) -> bool {
    if query.chars().any(char::is_uppercase) {
        hay.contains(query)
    } else {
        hay.to_lowercase().contains(&query.to_lowercase())
    }
}

impl Transcript {
    /// The indices (over the whole transcript, as drawn at the last width) of the lines that
    /// contain `query`.
    pub fn matching_lines(&self, query: &str, ctx: &RenderCtx<'_>) -> Vec<usize> {
        if query.is_empty() {
            return Vec::new();
        }
        let width = self.last_width.get().max(1);
        let mut out = Vec::new();
        let mut at = 0usize;
        for (i, cell) in self.cells.iter().enumerate() {
            let lines = cell.lines(width, ctx, self.selected == Some(i));
            for (j, line) in lines.iter().enumerate() {
                let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                if contains(&text, query) {
                    out.push(at + j);
                }
            }
            at += lines.len();
        }
        out
    }

    /// The first visible line.
    pub fn view_top(&self) -> usize {
        self.position().0
    }

    /// Scroll so `line` shows with one line above it, and mark `query` in it.
    pub fn show_match(&mut self, line: usize, query: &str) {
        let h = self.last_height.get().max(1);
        let top = self.view_top();
        if line < top || line >= top + h {
            self.top = line.saturating_sub(1);
            let max_top = self.last_total.get().saturating_sub(h);
            self.follow = self.top >= max_top;
        }
        self.found = Some((line, query.to_string()));
    }

    /// No line is marked.
    pub fn clear_match(&mut self) {
        self.found = None;
    }

    /// The marked line, if any.
    pub fn marked(&self) -> Option<usize> {
        self.found.as_ref().map(|(l, _)| *l)
    }

    /// Mark the query on row `y` of `area` (the drawn form of line `line`), if it is the match.
    pub(super) fn mark_row(&self, line: usize, area: Rect, y: u16, buf: &mut Buffer, bg: Style) {
        let Some((want, query)) = &self.found else {
            return;
        };
        if *want != line {
            return;
        }
        let row = Rect {
            x: area.x,
            y,
            width: area.width,
            height: 1,
        };
        buf.set_style(row, bg);
        // The cells that spell the query, found in the row's symbols.
        let cells: Vec<(u16, String)> = (area.x..area.right())
            .map(|x| (x, buf[(x, y)].symbol().to_string()))
            .filter(|(_, s)| !s.is_empty())
            .collect();
        let n = query.chars().count();
        for start in 0..cells.len() {
            if start + n > cells.len() {
                break;
            }
            let window: String = cells[start..start + n]
                .iter()
                .map(|(_, s)| s.as_str())
                .collect();
            if contains(&window, query) && window.chars().count() == n {
                for (x, _) in &cells[start..start + n] {
                    buf[(*x, y)].set_style(Style::default().add_modifier(Modifier::REVERSED));
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::contains;

    #[test]
    fn smart_case() {
        assert!(contains("Return a + b", "return"));
        assert!(!contains("return a + b", "Return"));
        assert!(contains("Return a + b", "Return"));
    }
}
