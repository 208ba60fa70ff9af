//! Reading a unified git patch (the session patch, `git diff --binary` output) back into
//! [`FileDiff`]s, so the final patch is shown the same way as each change was: hunks, line
//! numbers, word emphasis and syntax colours (each hunk highlighted on its own).
//!
//! Tolerant by design: lines it does not understand are skipped, never an error; a binary
//! file becomes a [`FileStatus::Binary`] entry without hunks.

use super::{emphasis, DiffLine, FileDiff, FileStatus, Highlighter, Hunk, LineKind, Segment};

/// The files of a patch, in order, styled with `hl` unless the patch is over its limit
/// ([`Highlighter::limit`]) lines.
pub fn parse(patch: &str, hl: &Highlighter) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut lines = patch.lines().peekable();
    let styled = patch.lines().count() <= hl.limit();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.push(FileDiff {
                path: git_path(rest),
                status: FileStatus::Modified,
                hunks: Vec::new(),
                styled,
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("new file mode") {
            file.status = FileStatus::Added;
        } else if line.starts_with("deleted file mode") {
            file.status = FileStatus::Deleted;
        } else if let Some(from) = line.strip_prefix("rename from ") {
            file.status = FileStatus::Renamed {
                from: from.to_string(),
            };
        } else if let Some(to) = line.strip_prefix("rename to ") {
            file.path = to.to_string();
        } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
            file.status = FileStatus::Binary;
            // Skip the base85 payload up to the next file.
            while lines.peek().is_some_and(|l| !l.starts_with("diff --git ")) {
                lines.next();
            }
        } else if let Some(to) = line.strip_prefix("+++ ") {
            if let Some(p) = to.strip_prefix("b/") {
                file.path = p.to_string();
            }
        } else if line.starts_with("@@ ") {
            if let Some(h) = parse_header(line) {
                file.hunks.push(h);
            }
        } else if let Some(hunk) = file.hunks.last_mut() {
            push_line(hunk, line);
        }
    }
    for f in &mut files {
        if styled {
            emphasis::emphasize(&mut f.hunks);
            hl.colour_hunks(&f.path.clone(), &mut f.hunks);
        }
    }
    files
}

/// `a/x b/x` to `x` (paths with spaces: the halves are equal, so split in the middle).
fn git_path(rest: &str) -> String {
    let rest = rest.trim();
    let half = rest.len() / 2;
    if rest.len() % 2 == 1 && rest.as_bytes().get(half) == Some(&b' ') {
        let (a, b) = (&rest[..half], &rest[half + 1..]);
        if let (Some(a), Some(b)) = (a.strip_prefix("a/"), b.strip_prefix("b/")) {
            if a == b {
                return b.to_string();
            }
        }
    }
    rest.split(" b/").last().unwrap_or(rest).to_string()
}

fn parse_header(line: &str) -> Option<Hunk> {
    // @@ -a[,b] +c[,d] @@ optional section
    let body = line.strip_prefix("@@ ")?;
    let end = body.find(" @@")?;
    let mut parts = body[..end].split(' ');
    let range = |s: &str| -> Option<(usize, usize)> {
        let (start, len) = match s.split_once(',') {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => (s.parse().ok()?, 1),
        };
        Some((start, len))
    };
    let (os, ol) = range(parts.next()?.strip_prefix('-')?)?;
    let (ns, nl) = range(parts.next()?.strip_prefix('+')?)?;
    let zero = |start: usize, len: usize| if len == 0 { start } else { start - 1 };
    Some(Hunk {
        old_start: os,
        old_len: ol,
        new_start: ns,
        new_len: nl,
        old_lines: zero(os, ol)..zero(os, ol) + ol,
        new_lines: zero(ns, nl)..zero(ns, nl) + nl,
        lines: Vec::new(),
    })
}

fn push_line(hunk: &mut Hunk, line: &str) {
    if line.starts_with('\\') {
        if let Some(last) = hunk.lines.last_mut() {
            last.no_newline = true;
        }
        return;
    }
    let (kind, text) = match line.split_at_checked(1) {
        Some(("+", t)) => (LineKind::Added, t),
        Some(("-", t)) => (LineKind::Removed, t),
        Some((" ", t)) => (LineKind::Context, t),
        _ if line.is_empty() => (LineKind::Context, ""),
        _ => return,
    };
    let old_seen = hunk
        .lines
        .iter()
        .filter(|l| l.kind != LineKind::Added)
        .count();
    let new_seen = hunk
        .lines
        .iter()
        .filter(|l| l.kind != LineKind::Removed)
        .count();
    let old_no = (kind != LineKind::Added).then(|| hunk.old_lines.start + old_seen + 1);
    let new_no = (kind != LineKind::Removed).then(|| hunk.new_lines.start + new_seen + 1);
    hunk.lines.push(DiffLine {
        kind,
        old_no,
        new_no,
        segments: vec![Segment {
            text: text.to_string(),
            fg: None,
            emph: false,
        }],
        no_newline: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
 
diff --git a/NOTES.md b/NOTES.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1,2 @@
+# Notes
+done
\\ No newline at end of file
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..4444444
GIT binary patch
literal 3
KcmZ?wbhG~s1H=Fz

literal 0
HcmV?d00001

";

    #[test]
    fn reads_files_hunks_and_numbers() {
        let files = parse(PATCH, &Highlighter::default());
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].path, "calc.py");
        assert_eq!((files[0].added(), files[0].removed()), (1, 1));
        let l = &files[0].hunks[0].lines;
        assert_eq!((l[1].old_no, l[1].new_no), (Some(2), None));
        assert_eq!((l[2].old_no, l[2].new_no), (None, Some(2)));
        assert!(l[2].segments.iter().any(|s| s.emph && s.text == "+"));
        assert_eq!(files[1].status, FileStatus::Added);
        assert!(files[1].hunks[0].lines[1].no_newline);
        assert_eq!(files[2].status, FileStatus::Binary);
        assert!(files[2].hunks.is_empty());
    }

    #[test]
    fn round_trips_a_computed_diff() {
        let before = "a\nb\nc\nd\n";
        let after = "a\nB\nc\nd\ne\n";
        let computed = FileDiff::compute("t.txt", Some(before), after);
        let mut text = String::from("diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n");
        for h in &computed.hunks {
            text.push_str(&h.header());
            text.push('\n');
            for l in &h.lines {
                let sign = match l.kind {
                    LineKind::Added => '+',
                    LineKind::Removed => '-',
                    LineKind::Context => ' ',
                };
                text.push(sign);
                text.push_str(&l.text());
                text.push('\n');
            }
        }
        let parsed = parse(&text, &Highlighter::default());
        let strip = |f: &FileDiff| -> Vec<(LineKind, Option<usize>, Option<usize>, String)> {
            f.hunks
                .iter()
                .flat_map(|h| &h.lines)
                .map(|l| (l.kind, l.old_no, l.new_no, l.text()))
                .collect()
        };
        assert_eq!(strip(&parsed[0]), strip(&computed));
    }
}
