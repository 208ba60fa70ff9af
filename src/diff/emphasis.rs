//! Word-level emphasis: within a hunk, a run of removed lines followed by a run of added lines
//! is paired line by line (as delta does), and the words that differ in each pair are marked.
//! Pairs that share too little are left without emphasis: marking nearly every word of a
//! rewritten line says nothing.

use super::{DiffLine, Hunk, LineKind, Segment};
use similar::{capture_diff_slices, Algorithm, DiffOp};

/// Below this share of unchanged characters a pair gets no emphasis.
const MIN_SHARED: f64 = 0.4;

/// Mark the changed words of paired removed/added lines in every hunk (computed diffs and
/// patches read back from text alike).
pub(super) fn emphasize(hunks: &mut [Hunk]) {
    for hunk in hunks {
        let lines = &mut hunk.lines;
        let mut i = 0;
        while i < lines.len() {
            if lines[i].kind != LineKind::Removed {
                i += 1;
                continue;
            }
            let rem_start = i;
            while i < lines.len() && lines[i].kind == LineKind::Removed {
                i += 1;
            }
            let add_start = i;
            while i < lines.len() && lines[i].kind == LineKind::Added {
                i += 1;
            }
            let pairs = (add_start - rem_start).min(i - add_start);
            let (removed, added) = lines.split_at_mut(add_start);
            for k in 0..pairs {
                emphasize_pair(&mut removed[rem_start + k], &mut added[k]);
            }
        }
    }
}

/// Mark the words that differ between one removed and one added line.
fn emphasize_pair(old: &mut DiffLine, new: &mut DiffLine) {
    let (o_text, n_text) = (old.text(), new.text());
    if let Some((o, n)) = word_emphasis(&o_text, &n_text) {
        set_segments(old, &o_text, &o);
        set_segments(new, &n_text, &n);
    }
}

/// Changed byte ranges of one line.
type Ranges = Vec<std::ops::Range<usize>>;

/// Byte ranges that differ in `old` and in `new`, or `None` when the lines share too little.
fn word_emphasis(old: &str, new: &str) -> Option<(Ranges, Ranges)> {
    let (ot, nt) = (tokens(old), tokens(new));
    let ow: Vec<&str> = ot.iter().map(|r| &old[r.clone()]).collect();
    let nw: Vec<&str> = nt.iter().map(|r| &new[r.clone()]).collect();
    let mut shared = 0usize;
    let (mut o_emph, mut n_emph) = (Vec::new(), Vec::new());
    for op in capture_diff_slices(Algorithm::Myers, &ow, &nw) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                shared += ot[old_index..old_index + len]
                    .iter()
                    .map(|r| r.len())
                    .sum::<usize>();
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => o_emph.push(span(&ot, old_index, old_len)),
            DiffOp::Insert {
                new_index, new_len, ..
            } => n_emph.push(span(&nt, new_index, new_len)),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                o_emph.push(span(&ot, old_index, old_len));
                n_emph.push(span(&nt, new_index, new_len));
            }
        }
    }
    let longest = old.len().max(new.len()).max(1);
    if (shared as f64) / (longest as f64) < MIN_SHARED {
        return None;
    }
    Some((o_emph, n_emph))
}

fn span(tokens: &[std::ops::Range<usize>], index: usize, len: usize) -> std::ops::Range<usize> {
    match (tokens.get(index), tokens.get(index + len - 1)) {
        (Some(a), Some(b)) if len > 0 => a.start..b.end,
        _ => 0..0,
    }
}

/// Words (letters, digits, `_`), runs of whitespace, and single other characters.
fn tokens(s: &str) -> Vec<std::ops::Range<usize>> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Word,
        Space,
        Other,
    }
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            Class::Word
        } else if c.is_whitespace() {
            Class::Space
        } else {
            Class::Other
        }
    };
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    let mut prev: Option<Class> = None;
    for (i, c) in s.char_indices() {
        let k = class(c);
        match (prev, out.last_mut()) {
            (Some(p), Some(last)) if p == k && k != Class::Other => last.end = i + c.len_utf8(),
            _ => out.push(i..i + c.len_utf8()),
        }
        prev = Some(k);
    }
    out
}

/// Replace a line's segments by runs of `text` split at the emphasised ranges.
fn set_segments(line: &mut DiffLine, text: &str, emph: &[std::ops::Range<usize>]) {
    let mut segments = Vec::new();
    let mut pos = 0;
    for r in emph.iter().filter(|r| !r.is_empty()) {
        if r.start > pos {
            segments.push(seg(&text[pos..r.start], false));
        }
        segments.push(seg(&text[r.clone()], true));
        pos = r.end;
    }
    if pos < text.len() || segments.is_empty() {
        segments.push(seg(&text[pos..], false));
    }
    line.segments = segments;
}

fn seg(text: &str, emph: bool) -> Segment {
    Segment {
        text: text.to_string(),
        fg: None,
        emph,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_only_the_changed_word() {
        let (o, n) = word_emphasis("let total = price * qty;", "let total = price * quantity;")
            .expect("similar lines");
        assert_eq!(o, vec![20..23]);
        assert_eq!(n, vec![20..28]);
    }

    #[test]
    fn rewritten_lines_get_no_emphasis() {
        assert!(word_emphasis("fn alpha(x: u8)", "struct Beta;").is_none());
    }

    #[test]
    fn paired_lines_in_a_hunk_are_split() {
        let mut d = super::super::FileDiff::compute("x.txt", Some("a b c\n"), "a B c\n");
        let h = &mut d.hunks[0];
        let added = h.lines.iter().find(|l| l.kind == LineKind::Added).unwrap();
        let marked: Vec<_> = added.segments.iter().filter(|s| s.emph).collect();
        assert_eq!(marked.len(), 1);
        assert_eq!(marked[0].text, "B");
        emphasize(std::slice::from_mut(h));
    }
}
