//! Hunks from two texts (similar's line diff, grouped with context) and the partial
//! application of a change: the text with only the chosen hunks applied.

use super::{DiffLine, Hunk, LineKind, Segment, CONTEXT_LINES};
use similar::{Algorithm, TextDiff};

/// The hunks of the change from `old` to `new`, unstyled.
pub(super) fn compute(old: &str, new: &str) -> Vec<Hunk> {
    let (old_lines, new_lines) = (split_lines(old), split_lines(new));
    // No deadline: the same inputs must always give the same hunks, because a partial
    // approval is applied by these ranges.
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_slices(&old_lines, &new_lines);
    // Walk the ops with running positions rather than trusting each op's own indices: similar
    // reported out-of-order `new_index` values on inputs with lone carriage returns (found by
    // the property test below); the lengths are consistent.
    let mut flat: Vec<(LineKind, Option<usize>, Option<usize>)> = Vec::new();
    let (mut oi, mut ni) = (0usize, 0usize);
    for op in diff.ops() {
        let (tag, ol, nl) = op.as_tag_tuple();
        let (ol, nl) = (ol.len(), nl.len());
        match tag {
            similar::DiffTag::Equal => {
                for k in 0..ol.min(nl) {
                    flat.push((LineKind::Context, Some(oi + k), Some(ni + k)));
                }
            }
            _ => {
                flat.extend((0..ol).map(|k| (LineKind::Removed, Some(oi + k), None)));
                flat.extend((0..nl).map(|k| (LineKind::Added, None, Some(ni + k))));
            }
        }
        oi += ol;
        ni += nl;
    }
    let changed: Vec<usize> = (0..flat.len())
        .filter(|&i| flat[i].0 != LineKind::Context)
        .collect();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &i in &changed {
        let lo = i.saturating_sub(CONTEXT_LINES);
        let hi = (i + CONTEXT_LINES + 1).min(flat.len());
        match groups.last_mut() {
            Some((_, end)) if lo <= *end => *end = hi,
            _ => groups.push((lo, hi)),
        }
    }
    let mut hunks = Vec::new();
    for (lo, hi) in groups {
        let items = &flat[lo..hi];
        // The ranges start where this stretch starts in each text.
        let old_start = position(&flat[..lo], |e| e.1).unwrap_or(0);
        let new_start = position(&flat[..lo], |e| e.2).unwrap_or(0);
        let old_len = items.iter().filter(|e| e.1.is_some()).count();
        let new_len = items.iter().filter(|e| e.2.is_some()).count();
        let lines = items
            .iter()
            .map(|&(kind, o, n)| {
                let raw = match kind {
                    LineKind::Added => n.map(|i| new_lines[i]),
                    _ => o.map(|i| old_lines[i]),
                }
                .unwrap_or("");
                DiffLine {
                    kind,
                    old_no: o.map(|i| i + 1),
                    new_no: n.map(|i| i + 1),
                    segments: vec![Segment {
                        text: strip_eol(raw).to_string(),
                        fg: None,
                        emph: false,
                    }],
                    no_newline: !raw.ends_with('\n') && !raw.ends_with('\r'),
                }
            })
            .collect();
        let old_lines_r = old_start..old_start + old_len;
        let new_lines_r = new_start..new_start + new_len;
        hunks.push(Hunk {
            old_start: unified_start(&old_lines_r),
            old_len,
            new_start: unified_start(&new_lines_r),
            new_len,
            old_lines: old_lines_r,
            new_lines: new_lines_r,
            lines,
        });
    }
    hunks
}

/// The index just past the last line before this point on one side.
fn position(
    before: &[(LineKind, Option<usize>, Option<usize>)],
    side: impl Fn(&(LineKind, Option<usize>, Option<usize>)) -> Option<usize>,
) -> Option<usize> {
    before.iter().rev().find_map(&side).map(|i| i + 1)
}

/// A line without its terminator (`\n` or `\r\n`).
pub(super) fn strip_eol(line: &str) -> &str {
    let l = line.strip_suffix('\n').unwrap_or(line);
    l.strip_suffix('\r').unwrap_or(l)
}

/// Lines with their terminators, split exactly as similar's line diff splits them (`\n`,
/// `\r\n`, or a lone `\r`), so hunk ranges index the same lines.
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' if bytes.get(i + 1) != Some(&b'\n') => {
                lines.push(&text[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

fn unified_start(r: &std::ops::Range<usize>) -> usize {
    if r.is_empty() {
        r.start
    } else {
        r.start + 1
    }
}

/// The text of `before` with only the hunks whose `accept` flag is true taken from `after`.
/// `hunks` must be the hunks computed for exactly this `before` and `after`; a missing flag
/// counts as not accepted.
pub fn apply_hunks(before: &str, after: &str, hunks: &[Hunk], accept: &[bool]) -> String {
    let old = split_lines(before);
    let new = split_lines(after);
    let mut out = String::with_capacity(after.len().max(before.len()));
    let mut cursor = 0;
    for (i, h) in hunks.iter().enumerate() {
        let start = h.old_lines.start.min(old.len());
        let end = h.old_lines.end.min(old.len());
        if start < cursor {
            // Overlapping hunks cannot come from one computation; keep what is done.
            continue;
        }
        old[cursor..start].iter().for_each(|l| out.push_str(l));
        if accept.get(i).copied().unwrap_or(false) {
            let ns = h.new_lines.start.min(new.len());
            let ne = h.new_lines.end.min(new.len());
            new[ns..ne].iter().for_each(|l| out.push_str(l));
        } else {
            old[start..end].iter().for_each(|l| out.push_str(l));
        }
        cursor = end;
    }
    old[cursor.min(old.len())..]
        .iter()
        .for_each(|l| out.push_str(l));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(n: usize, changed: &[usize]) -> String {
        (0..n)
            .map(|i| {
                if changed.contains(&i) {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect()
    }

    #[test]
    fn separate_changes_make_separate_hunks() {
        let before = text(40, &[]);
        let after = text(40, &[2, 30]);
        let hunks = compute(&before, &after);
        assert_eq!(hunks.len(), 2);
        assert_eq!(apply_hunks(&before, &after, &hunks, &[true, true]), after);
        assert_eq!(
            apply_hunks(&before, &after, &hunks, &[false, false]),
            before
        );
        let first_only = apply_hunks(&before, &after, &hunks, &[true, false]);
        assert!(first_only.contains("changed 2\n") && !first_only.contains("changed 30"));
    }

    #[test]
    fn missing_final_newline_is_kept() {
        let hunks = compute("a\nb", "a\nc");
        let last = hunks[0].lines.last().unwrap();
        assert!(last.no_newline);
        assert_eq!(apply_hunks("a\nb", "a\nc", &hunks, &[true]), "a\nc");
        assert_eq!(apply_hunks("a\nb", "a\nc", &hunks, &[false]), "a\nb");
    }

    #[test]
    fn carriage_returns_split_like_similar() {
        let (before, after) = ("\raa\nb\n\r\n\r", "\r\n\r\raa\nb\n\r\n\r");
        let hunks = compute(before, after);
        assert_eq!(
            split_lines(after),
            vec!["\r\n", "\r", "\r", "aa\n", "b\n", "\r\n", "\r"]
        );
        assert_eq!(
            apply_hunks(before, after, &hunks, &[true]),
            after,
            "{hunks:?}"
        );
    }

    proptest! {
        #[test]
        fn all_or_nothing_round_trips(
            a in proptest::collection::vec("[abc]{0,3}\r?\n?", 0..30),
            b in proptest::collection::vec("[abc]{0,3}\r?\n?", 0..30),
        ) {
            let (before, after) = (a.concat(), b.concat());
            let hunks = compute(&before, &after);
            let all = vec![true; hunks.len()];
            prop_assert_eq!(apply_hunks(&before, &after, &hunks, &all), after.clone());
            prop_assert_eq!(apply_hunks(&before, &after, &hunks, &[]), before.clone());
        }
    }
}
