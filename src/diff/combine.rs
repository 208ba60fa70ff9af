//! One patch from pieces of several: the hunks a reviewer takes from different attempts at the
//! same task, all made against the same files, put together as one git patch, with the pieces
//! that cannot go together named.
//!
//! Owns: what a piece is (a hunk of a changed file, or a whole file when the change is not a
//! plain modification: added, deleted, renamed, binary), which pieces conflict, and writing
//! the combined patch text. Does not own: choosing pieces (the interface does), reading
//! patches ([`super::patch::parse`]) or applying them.
//!
//! Rules: pieces of one attempt never conflict (they come from one diff). Pieces of different
//! attempts conflict when they are in the same file and their old lines, context included,
//! overlap or an insertion point lies inside the other's lines: `git apply` matches context,
//! so a hunk whose context another hunk changed would not apply. A whole-file piece conflicts
//! with every piece of another attempt in that file. The combined patch keeps each hunk's old
//! position and recomputes its new start from the pieces taken before it in the file.
//! Binary changes have no text here: they can only be taken as their attempt's whole patch.

use super::{FileDiff, FileStatus, Hunk, LineKind};
use std::ops::Range;

/// One piece of one attempt's patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The attempt it comes from (an index the caller chooses).
    pub attempt: usize,
    /// The file, as parsed from that attempt's patch.
    pub file: usize,
    /// The hunk within the file; `None`: the whole file.
    pub hunk: Option<usize>,
    /// The file's path (the new path of a rename).
    pub path: String,
    /// Old lines the piece covers, 0-based, context included (empty: an insertion point).
    pub old: Range<usize>,
    /// A hash of the change itself (position and lines): two attempts that made the same
    /// change have equal pieces, which never conflict and are written once.
    pub change: u64,
}

/// Why pieces cannot be combined.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CombineError {
    #[error("{path}: the pieces of attempts {a} and {b} touch the same lines; take one of them")]
    Conflict { path: String, a: usize, b: usize },
    #[error("{path}: a binary change can only be taken with its attempt's whole patch")]
    Binary { path: String },
    #[error("no pieces were taken")]
    Nothing,
}

/// Every piece of one attempt's parsed patch, in order.
pub fn pieces(attempt: usize, files: &[FileDiff]) -> Vec<Piece> {
    let mut out = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        if f.status == FileStatus::Modified && !f.hunks.is_empty() {
            for (hi, h) in f.hunks.iter().enumerate() {
                out.push(Piece {
                    attempt,
                    file: fi,
                    hunk: Some(hi),
                    path: f.path.clone(),
                    old: h.old_lines.clone(),
                    change: hash_hunk(h),
                });
            }
        } else {
            out.push(Piece {
                attempt,
                file: fi,
                hunk: None,
                path: f.path.clone(),
                old: 0..usize::MAX,
                change: hash_file(f),
            });
        }
    }
    out
}

fn hash_hunk(h: &Hunk) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut s = std::collections::hash_map::DefaultHasher::new();
    (h.old_start, h.old_len, h.new_len).hash(&mut s);
    for l in &h.lines {
        (l.kind as u8, l.text(), l.no_newline).hash(&mut s);
    }
    s.finish()
}

fn hash_file(f: &FileDiff) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut s = std::collections::hash_map::DefaultHasher::new();
    f.unified().hash(&mut s);
    matches!(f.status, FileStatus::Binary).hash(&mut s);
    s.finish()
}

/// Whether two pieces are the same change (made by two attempts alike).
pub fn same(a: &Piece, b: &Piece) -> bool {
    a.path == b.path
        && a.old == b.old
        && a.change == b.change
        && a.hunk.is_some() == b.hunk.is_some()
}

/// Whether two pieces cannot both be taken.
pub fn conflict(a: &Piece, b: &Piece) -> bool {
    if a.attempt == b.attempt || a.path != b.path || same(a, b) {
        return false;
    }
    if a.hunk.is_none() || b.hunk.is_none() {
        return true;
    }
    overlaps(&a.old, &b.old)
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => a.start == b.start,
        (true, false) => b.start <= a.start && a.start <= b.end,
        (false, true) => a.start <= b.start && b.start <= a.end,
        (false, false) => a.start < b.end && b.start < a.end,
    }
}

/// The patch of the `taken` pieces; `files[attempt]` is that attempt's parsed patch.
pub fn combine(files: &[Vec<FileDiff>], taken: &[Piece]) -> Result<String, CombineError> {
    if taken.is_empty() {
        return Err(CombineError::Nothing);
    }
    for (i, a) in taken.iter().enumerate() {
        if let Some(b) = taken[i + 1..].iter().find(|b| conflict(a, b)) {
            return Err(CombineError::Conflict {
                path: a.path.clone(),
                a: a.attempt.min(b.attempt),
                b: a.attempt.max(b.attempt),
            });
        }
    }
    // Files in the order they are first taken; hunks of a file in old-line order.
    let mut paths: Vec<&str> = Vec::new();
    for p in taken {
        if !paths.contains(&p.path.as_str()) {
            paths.push(&p.path);
        }
    }
    let mut out = String::new();
    for path in paths {
        let mut mine: Vec<&Piece> = taken.iter().filter(|p| p.path == path).collect();
        mine.sort_by_key(|p| (p.old.start, p.old.end));
        // The same change taken from two attempts is written once.
        mine.dedup_by(|b, a| same(a, b));
        let Some(first) = mine.first() else { continue };
        let Some(file) = files.get(first.attempt).and_then(|f| f.get(first.file)) else {
            continue;
        };
        if file.status == FileStatus::Binary {
            return Err(CombineError::Binary { path: path.into() });
        }
        if first.hunk.is_none() {
            out.push_str(&git_header(file));
            out.push_str(&file.unified());
            continue;
        }
        out.push_str(&git_header(file));
        out.push_str(&format!("--- a/{path}\n+++ b/{path}\n"));
        let mut delta: isize = 0;
        for p in mine {
            let Some(f) = files.get(p.attempt).and_then(|f| f.get(p.file)) else {
                continue;
            };
            let Some(h) = p.hunk.and_then(|i| f.hunks.get(i).map(|h| (i, h))) else {
                continue;
            };
            let (index, hunk) = h;
            // The hunk's new start, less what earlier hunks of its own diff shifted it by,
            // plus what the hunks taken before it here shift it by.
            let own: isize = f.hunks[..index].iter().map(shift).sum();
            let start = hunk.new_start as isize - own + delta;
            write_hunk(&mut out, hunk, start.max(0) as usize);
            delta += shift(hunk);
        }
    }
    Ok(out)
}

fn shift(h: &Hunk) -> isize {
    h.new_len as isize - h.old_len as isize
}

fn git_header(f: &FileDiff) -> String {
    match &f.status {
        FileStatus::Added => format!("diff --git a/{p} b/{p}\nnew file mode 100644\n", p = f.path),
        FileStatus::Deleted => {
            format!(
                "diff --git a/{p} b/{p}\ndeleted file mode 100644\n",
                p = f.path
            )
        }
        FileStatus::Renamed { from } => format!(
            "diff --git a/{from} b/{p}\nrename from {from}\nrename to {p}\n",
            p = f.path
        ),
        FileStatus::Modified | FileStatus::Binary => {
            format!("diff --git a/{p} b/{p}\n", p = f.path)
        }
    }
}

fn write_hunk(out: &mut String, h: &Hunk, new_start: usize) {
    out.push_str(&format!(
        "@@ -{},{} +{},{} @@\n",
        h.old_start, h.old_len, new_start, h.new_len
    ));
    for l in &h.lines {
        out.push(match l.kind {
            LineKind::Context => ' ',
            LineKind::Added => '+',
            LineKind::Removed => '-',
        });
        out.push_str(&l.text());
        out.push('\n');
        if l.no_newline {
            out.push_str("\\ No newline at end of file\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{apply_hunks, patch, Highlighter};

    const BASE: &str =
        "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\nq\nr\ns\nt\nu\nv\nw\nx\ny\nz\n";

    fn attempt(after: &str) -> Vec<FileDiff> {
        let d = FileDiff::compute("f.txt", Some(BASE), after);
        let text = format!("diff --git a/f.txt b/f.txt\n{}", d.unified());
        patch::parse(&text, &Highlighter::default())
    }

    /// Apply a patch text to BASE by its hunks (old positions, checked context).
    fn apply(text: &str) -> String {
        let files = patch::parse(text, &Highlighter::default());
        assert_eq!(files.len(), 1, "{text}");
        let mut lines: Vec<String> = BASE.lines().map(String::from).collect();
        let mut delta: isize = 0;
        for h in &files[0].hunks {
            let at = (h.old_lines.start as isize + delta) as usize;
            let old: Vec<String> = h
                .lines
                .iter()
                .filter(|l| l.kind != LineKind::Added)
                .map(|l| l.text())
                .collect();
            assert_eq!(
                lines[at..at + old.len()],
                old[..],
                "context of {}",
                h.header()
            );
            assert_eq!(
                h.new_lines.start as isize,
                at as isize,
                "new start of {}",
                h.header()
            );
            let new: Vec<String> = h
                .lines
                .iter()
                .filter(|l| l.kind != LineKind::Removed)
                .map(|l| l.text())
                .collect();
            lines.splice(at..at + old.len(), new.iter().cloned());
            delta += new.len() as isize - old.len() as isize;
        }
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn hunks_of_two_attempts_make_one_patch() {
        // Attempt 0 changes b (top) and t (bottom); attempt 1 inserts two lines after j.
        let a0 = attempt(&BASE.replace("b\n", "B\n").replace("t\n", "T\n"));
        let a1 = attempt(&BASE.replace("j\n", "j\nj1\nj2\n"));
        assert_eq!(a0[0].hunks.len(), 2);
        let files = vec![a0.clone(), a1.clone()];
        let p0 = pieces(0, &a0);
        let p1 = pieces(1, &a1);
        // Top of attempt 0 with the middle of attempt 1: the inserted lines shift nothing above.
        let text = combine(&files, &[p0[0].clone(), p1[0].clone()]).unwrap();
        assert_eq!(
            apply(&text),
            BASE.replace("b\n", "B\n").replace("j\n", "j\nj1\nj2\n")
        );
        // The middle of attempt 1 with the bottom of attempt 0: the bottom moves down by two.
        let text = combine(&files, &[p0[1].clone(), p1[0].clone()]).unwrap();
        assert_eq!(
            apply(&text),
            BASE.replace("j\n", "j\nj1\nj2\n").replace("t\n", "T\n")
        );
        // Everything of attempt 0 alone is attempt 0's change.
        let whole = combine(&files, &p0).unwrap();
        assert_eq!(
            apply(&whole),
            BASE.replace("b\n", "B\n").replace("t\n", "T\n")
        );
    }

    #[test]
    fn overlapping_hunks_of_different_attempts_conflict() {
        let a0 = attempt(&BASE.replace("f\n", "F\n"));
        let a1 = attempt(&BASE.replace("g\n", "G\n"));
        let a2 = attempt(&BASE.replace("p\n", "P\n"));
        let (p0, p1, p2) = (pieces(0, &a0), pieces(1, &a1), pieces(2, &a2));
        assert!(conflict(&p0[0], &p1[0]), "f and g share context");
        assert!(!conflict(&p0[0], &p2[0]));
        assert!(
            !conflict(&p0[0], &p0[0]),
            "one attempt never conflicts with itself"
        );
        let files = vec![a0, a1, a2];
        assert_eq!(
            combine(&files, &[p0[0].clone(), p1[0].clone()]),
            Err(CombineError::Conflict {
                path: "f.txt".into(),
                a: 0,
                b: 1
            })
        );
        assert_eq!(combine(&files, &[]), Err(CombineError::Nothing));
        // The same change made by two attempts is no conflict, and is written once.
        let again = pieces(3, &files[0]);
        assert!(same(&p0[0], &again[0]) && !conflict(&p0[0], &again[0]));
        let mut files = files;
        files.push(files[0].clone());
        let text = combine(&files, &[p0[0].clone(), again[0].clone()]).unwrap();
        assert_eq!(text.matches("+F\n").count(), 1, "{text}");
    }

    #[test]
    fn whole_files_conflict_across_attempts_and_keep_their_headers() {
        let new_file = |attempt: usize, text: &str| {
            let d = FileDiff::compute("new.txt", None, text);
            let t = format!(
                "diff --git a/new.txt b/new.txt\nnew file mode 100644\n{}",
                d.unified()
            );
            (attempt, patch::parse(&t, &Highlighter::default()))
        };
        let (_, n0) = new_file(0, "x\n");
        let (_, n1) = new_file(1, "y\n");
        let (p0, p1) = (pieces(0, &n0), pieces(1, &n1));
        assert_eq!(p0[0].hunk, None);
        assert!(conflict(&p0[0], &p1[0]));
        let text = combine(&[n0, n1], &p0).unwrap();
        assert!(text.starts_with("diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+x\n"), "{text}");
    }

    #[test]
    fn the_combined_patch_is_what_the_kept_hunks_give() {
        // Cross-check with apply_hunks: taking some hunks of one attempt equals applying them.
        let after = BASE
            .replace("a\n", "A\n")
            .replace("k\n", "K\n")
            .replace("w\n", "");
        let d = FileDiff::compute("f.txt", Some(BASE), &after);
        let files = attempt(&after);
        let p = pieces(0, &files);
        assert_eq!(p.len(), d.hunks.len());
        let text = combine(std::slice::from_ref(&files), &[p[0].clone(), p[2].clone()]).unwrap();
        let expect = apply_hunks(BASE, &after, &d.hunks, &[true, false, true]);
        assert_eq!(apply(&text), expect);
    }
}
