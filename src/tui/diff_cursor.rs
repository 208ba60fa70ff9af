//! The cursor of a diff under review, one type for the change review, the session review and
//! the attempts board: the line under the cursor (an index among the diff's lines, every hunk
//! in order), the range selected from it (`v`), the first row in view, and what the last
//! drawing measured (each line's and hunk's first row, the rows in view, the rows in all).
//! A step of the cursor stays within the diff's lines, and the view follows the cursor,
//! scrolling only as far as it must to keep the cursor's first row in sight.
//!
//! Owns the arithmetic and the lines a comment is anchored to ([`DiffCursor::marked`]); does
//! not own the diff, the comments, nor what folding hides (each review says how many lines
//! the cursor may move among, and none while a file is folded to one row).

use crate::diff::DiffLine;
use std::cell::{Cell, RefCell};

/// Rows in view assumed before the first drawing.
const FIRST_PAGE: usize = 20;

/// See the module docs.
#[derive(Debug, Clone)]
pub struct DiffCursor {
    /// The line under the cursor.
    pub line: usize,
    /// Where a range selection started, while one is made.
    pub range_from: Option<usize>,
    /// The first row in view (the drawing clamps it to the diff's last page).
    pub scroll: usize,
    /// First row of each line in the last drawing.
    line_starts: RefCell<Vec<usize>>,
    /// First row of each hunk in the last drawing.
    hunk_starts: RefCell<Vec<usize>>,
    /// Rows a page move steps in the last drawing.
    page: Cell<usize>,
    /// Rows in view in the last drawing.
    view: Cell<usize>,
    /// Rows of the whole diff in the last drawing (scrolling goes no further).
    rows: Cell<usize>,
    /// Columns the last drawing decided the layout at (split or unified).
    width: Cell<u16>,
}

impl Default for DiffCursor {
    fn default() -> Self {
        Self::new(0)
    }
}

/// What a drawing of the diff measured, for the cursor's next moves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drawing {
    pub line_starts: Vec<usize>,
    pub hunk_starts: Vec<usize>,
    /// Rows a page move steps (the rows in view, or a little less to keep some in sight).
    pub page: usize,
    /// Rows in view.
    pub view: usize,
    /// Rows of the whole diff.
    pub rows: usize,
    /// Columns the layout (split or unified) was decided at.
    pub width: u16,
}

/// The lines a comment made now is on: the one under the cursor, or the selected range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked<'a> {
    Line(&'a DiffLine),
    Range(&'a DiffLine, &'a DiffLine),
}

impl DiffCursor {
    /// A cursor on `line`, the view at the top.
    pub fn new(line: usize) -> Self {
        Self {
            line,
            range_from: None,
            scroll: 0,
            line_starts: RefCell::default(),
            hunk_starts: RefCell::default(),
            page: Cell::new(FIRST_PAGE),
            view: Cell::new(FIRST_PAGE),
            rows: Cell::new(usize::MAX),
            width: Cell::new(0),
        }
    }

    /// Start over on `line` (another diff is shown): the view at the top, no selection, and
    /// nothing known of a drawing of it.
    pub fn reset(&mut self, line: usize) {
        *self = Self {
            page: Cell::new(self.page.get()),
            view: Cell::new(self.view.get()),
            width: Cell::new(self.width.get()),
            ..Self::new(line)
        };
    }

    /// Rows a page move steps, from the last drawing (at least one).
    pub fn page(&self) -> usize {
        self.page.get().max(1)
    }

    /// Keep what a drawing measured.
    pub fn drawn(&self, d: Drawing) {
        *self.line_starts.borrow_mut() = d.line_starts;
        *self.hunk_starts.borrow_mut() = d.hunk_starts;
        self.page.set(d.page);
        self.view.set(d.view);
        self.rows.set(d.rows);
        self.width.set(d.width);
    }

    /// Columns the last drawing decided the layout at (what `t` toggles from).
    pub fn width(&self) -> u16 {
        self.width.get()
    }

    /// The first row to draw of `total` rows in a view of `height`: the scroll, clamped so
    /// the last page is full.
    pub fn top(&self, total: usize, height: usize) -> usize {
        self.scroll.min(total.saturating_sub(height))
    }

    /// Move the cursor `delta` lines among `lines`, the view following it; `false` when
    /// there is no line to be on.
    pub fn step(&mut self, delta: isize, lines: usize) -> bool {
        let Some(line) = step(self.line, delta, lines) else {
            return false;
        };
        self.line = line;
        self.follow();
        true
    }

    /// A page of lines up (`delta` < 0) or down.
    pub fn page_by(&mut self, pages: isize, lines: usize) -> bool {
        self.step(pages * self.page() as isize, lines)
    }

    /// Bring the cursor's line into view, scrolling no further than needed.
    pub fn follow(&mut self) {
        self.scroll = follow(
            &self.line_starts.borrow(),
            self.line,
            self.scroll,
            self.page(),
        );
    }

    /// Put the cursor on `line`, the first of hunk `hunk`, and its hunk's first row (and the
    /// row above it) at the top of the view.
    pub fn jump(&mut self, line: usize, hunk: usize) {
        self.line = line;
        self.range_from = None;
        if let Some(start) = self.hunk_starts.borrow().get(hunk) {
            self.scroll = start.saturating_sub(1);
        }
    }

    /// Scroll the view `delta` rows without moving the cursor (the wheel), no further than
    /// the diff's last page.
    pub fn scroll_by(&mut self, delta: isize) {
        let last = self.rows.get().saturating_sub(self.view.get());
        self.scroll = ((self.scroll as isize + delta).max(0) as usize).min(last);
    }

    /// `v`: start selecting lines from the cursor's, or stop.
    pub fn toggle_range(&mut self) {
        self.range_from = match self.range_from {
            Some(_) => None,
            None => Some(self.line),
        };
    }

    /// The range selected (first and last line), while one is.
    pub fn selection(&self) -> Option<(usize, usize)> {
        self.range_from
            .map(|from| (from.min(self.line), from.max(self.line)))
    }

    /// The line under the cursor among `lines`.
    pub fn under<'a>(&self, mut lines: impl Iterator<Item = &'a DiffLine>) -> Option<&'a DiffLine> {
        lines.nth(self.line)
    }

    /// What a comment made now is on, among `lines`: the selected range when it spans more
    /// than one line, else the line under the cursor.
    pub fn marked<'a>(
        &self,
        lines: impl Iterator<Item = &'a DiffLine> + Clone,
    ) -> Option<Marked<'a>> {
        if let Some((a, b)) = self.selection().filter(|(a, b)| a != b) {
            let first = lines.clone().nth(a)?;
            let last = lines.clone().nth(b)?;
            return Some(Marked::Range(first, last));
        }
        self.under(lines).map(Marked::Line)
    }
}

/// The cursor's line after moving `delta` lines among `lines` (none: no line to be on).
pub fn step(line: usize, delta: isize, lines: usize) -> Option<usize> {
    if lines == 0 {
        return None;
    }
    Some((line as isize + delta).clamp(0, lines as isize - 1) as usize)
}

/// The first row in view once the view follows the cursor on `line`: unchanged while the
/// line's first row (`line_starts`, from the last drawing) is in the `page` rows from
/// `scroll`, else just enough to bring it in (unchanged too before the first drawing).
pub fn follow(line_starts: &[usize], line: usize, scroll: usize, page: usize) -> usize {
    let Some(&row) = line_starts.get(line) else {
        return scroll;
    };
    let page = page.max(1);
    if row < scroll {
        row
    } else if row >= scroll + page {
        row + 1 - page
    } else {
        scroll
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{FileDiff, LineKind};

    #[test]
    fn the_cursor_stays_in_the_diff_and_the_view_follows_it() {
        assert_eq!(step(0, -3, 10), Some(0));
        assert_eq!(step(4, 3, 10), Some(7));
        assert_eq!(step(8, 30, 10), Some(9));
        assert_eq!(step(0, 1, 0), None);
        // Lines start on rows 0, 2, 4, ... (each two rows); five rows in view.
        let starts: Vec<usize> = (0..20).map(|i| i * 2).collect();
        assert_eq!(follow(&starts, 1, 0, 5), 0);
        assert_eq!(follow(&starts, 3, 0, 5), 2);
        assert_eq!(follow(&starts, 0, 6, 5), 0);
        // Before the first drawing the view stays.
        assert_eq!(follow(&[], 3, 7, 5), 7);
    }

    /// Twenty lines of two rows each, five rows in view, two hunks starting at lines 0 and 10.
    fn drawn() -> DiffCursor {
        let c = DiffCursor::new(0);
        c.drawn(Drawing {
            line_starts: (0..20).map(|i| i * 2).collect(),
            hunk_starts: vec![0, 20],
            page: 5,
            view: 5,
            rows: 40,
            width: 120,
        });
        c
    }

    #[test]
    fn steps_and_pages_move_the_line_and_the_view_follows() {
        let mut c = drawn();
        assert!(c.step(3, 20));
        assert_eq!((c.line, c.scroll), (3, 2));
        assert!(c.page_by(1, 20));
        assert_eq!((c.line, c.scroll), (8, 12));
        assert!(c.page_by(-10, 20));
        assert_eq!((c.line, c.scroll), (0, 0));
        // No line to be on: nothing moves.
        assert!(!c.step(1, 0));
        assert_eq!(c.line, 0);
        // Following the cursor after the view changed size (full screen): back in view.
        c.scroll = 30;
        c.follow();
        assert_eq!(c.scroll, 0);
    }

    #[test]
    fn the_wheel_scrolls_no_further_than_the_last_page_and_a_jump_shows_the_hunk() {
        let mut c = drawn();
        c.scroll_by(100);
        assert_eq!(c.scroll, 35);
        c.scroll_by(-100);
        assert_eq!(c.scroll, 0);
        assert_eq!(c.top(40, 10), 0);
        c.scroll = 38;
        assert_eq!(c.top(40, 10), 30);
        c.jump(10, 1);
        assert_eq!((c.line, c.scroll), (10, 19));
        // A new diff: the drawing is forgotten, the view at the top.
        c.toggle_range();
        c.reset(2);
        assert_eq!((c.line, c.scroll, c.selection()), (2, 0, None));
        c.scroll_by(5);
        assert_eq!(c.scroll, 5, "before the first drawing the size is unknown");
    }

    #[test]
    fn a_comment_is_on_the_selected_range_or_the_line_under_the_cursor() {
        let d = FileDiff::compute("a.py", Some("x\ny\nz\n"), "x\nY\nz\n");
        let lines = || d.hunks.iter().flat_map(|h| h.lines.iter());
        let mut c = DiffCursor::new(1);
        match c.marked(lines()) {
            Some(Marked::Line(l)) => {
                assert_eq!((l.kind, l.text()), (LineKind::Removed, "y".into()))
            }
            other => panic!("{other:?}"),
        }
        c.toggle_range();
        // A selection of one line is that line.
        assert!(matches!(c.marked(lines()), Some(Marked::Line(_))));
        c.step(1, 4);
        assert_eq!(c.selection(), Some((1, 2)));
        match c.marked(lines()) {
            Some(Marked::Range(a, b)) => assert_eq!((a.text(), b.text()), ("y".into(), "Y".into())),
            other => panic!("{other:?}"),
        }
        c.toggle_range();
        assert_eq!(c.selection(), None);
    }
}
