//! The line cursor of a diff under review, one behaviour for the change review and the
//! session review: a step of the cursor stays within the diff's lines, and the view follows
//! the cursor, scrolling only as far as it must to keep the cursor's first row in sight.
//!
//! Owns the arithmetic; the reviews own their cursor's state (line, first row in view, the
//! rows of the last drawing) and what a line under the cursor means.

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
}
