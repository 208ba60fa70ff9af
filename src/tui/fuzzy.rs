//! Fuzzy matching for the message line's pickers (the command palette, the file picker): does
//! a query's every character appear in a candidate, in order and ignoring case, and how good
//! is that match. Owns the score and the ranking only; the lists and their drawing are the
//! pickers' (`crate::tui::app::pickers`, `crate::tui::views`).

/// The score of `candidate` for `query`, higher is better; `None` when the query's characters
/// do not all appear in the candidate in order (case ignored). An empty query matches
/// everything with 0.
///
/// A match counts more where it starts a word or a path segment, where it follows the
/// previous matched character, and within the last path segment; the candidate starting with
/// the query, or its last segment holding the query whole, counts most. Longer candidates
/// lose a little, so that of two equal matches the shorter path comes first.
pub fn score(query: &str, candidate: &str) -> Option<i64> {
    if query.is_empty() {
        return Some(0);
    }
    let query: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    let lower: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
    // Each place the first character could match starts a greedy match; the best counts.
    let best = (0..lower.len())
        .filter(|&i| lower[i] == query[0])
        .filter_map(|first| greedy(&query, &lower, first))
        .max()?;
    let whole: String = query.iter().collect();
    let lower: String = lower.into_iter().collect();
    let mut total = best;
    if lower.starts_with(&whole) {
        total += 30;
    }
    if lower[lower.rfind('/').map_or(0, |i| i + 1)..].contains(&whole) {
        total += 20;
    }
    Some(total - candidate.chars().count() as i64 / 8)
}

/// The score of matching `query` in `lower` with its first character at `first` and each
/// next one at its earliest place after the one before.
fn greedy(query: &[char], lower: &[char], first: usize) -> Option<i64> {
    let name_start = lower
        .iter()
        .rposition(|c| *c == '/')
        .map_or(0, |slash| slash + 1);
    let mut total = 0i64;
    let mut at = first;
    let mut previous: Option<usize> = None;
    for q in query {
        let found = lower[at..].iter().position(|c| c == q)? + at;
        let starts_word = found == 0 || matches!(lower[found - 1], '/' | '_' | '-' | '.' | ' ');
        total += 1;
        if starts_word {
            total += 8;
        }
        if previous.is_some_and(|p| p + 1 == found) {
            total += 5;
        }
        if found >= name_start {
            total += 2;
        }
        if let Some(p) = previous {
            total -= (found - p - 1).min(10) as i64 / 2;
        }
        previous = Some(found);
        at = found + 1;
    }
    Some(total)
}

/// The indices of the `candidates` that match `query`, best first (equal scores keep the
/// candidates' order), at most `limit` of them.
pub fn rank<'a>(
    query: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<usize> {
    let mut scored: Vec<(i64, usize)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| score(query, c).map(|s| (s, i)))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_must_appear_in_order() {
        assert!(score("clc", "calc.py").is_some());
        assert!(score("CALC", "src/calc.py").is_some());
        assert_eq!(score("lcc", "calc.py"), None);
        assert_eq!(score("x", "calc.py"), None);
        assert_eq!(score("", "anything"), Some(0));
    }

    #[test]
    fn file_names_and_word_starts_come_first() {
        let paths = [
            "docs/calculator-notes.md",
            "src/lib/calc.rs",
            "tests/test_calc.py",
            "calc.py",
        ];
        let order = rank("calc", paths, 10);
        assert_eq!(order[0], 3, "the path starting with the query: {order:?}");
        assert_eq!(order.len(), 4);
        let order = rank("tcalc", paths, 10);
        assert_eq!(order[0], 2, "{order:?}");
        // The best of the places a match may start counts (not the `c` of `src`).
        assert_eq!(
            rank("cal", ["tests/test_calc.py", "src/calc.py"], 10),
            [1, 0]
        );
        // A scattered match loses to a whole one.
        let order = rank("pat", ["src/parser/attr.rs", "patch"], 10);
        assert_eq!(order, vec![1, 0]);
    }

    #[test]
    fn ties_keep_their_order_and_the_limit_cuts() {
        assert_eq!(rank("", ["b", "a", "c"], 2), vec![0, 1]);
        assert_eq!(rank("q", ["quit", "b", "quit"], 10), vec![0, 2]);
    }
}
