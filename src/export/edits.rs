//! A Write or Edit call's change as a unified diff, from the call's own arguments: a Write's
//! content as a new text, an Edit's `old_string` replaced by its `new_string`. Line numbers
//! are those of the replaced text, not of the file: used where the log does not hold the
//! file (a change the policy applied without asking; `super::document` draws a reviewed
//! change from the file itself).
//!
//! Does not own: computing hunks (`crate::diff`).

use crate::diff::{FileDiff, LineKind};

/// The call's change as a [`FileDiff`], for drawing with colours.
pub(super) fn file_diff(
    name: &str,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<FileDiff> {
    let text = |k: &str| args.get(k).and_then(serde_json::Value::as_str);
    let path = text("file_path")?;
    match name {
        "Write" => Some(FileDiff::compute(path, None, text("content")?)),
        "Edit" => Some(FileDiff::compute(
            path,
            Some(text("old_string")?),
            text("new_string")?,
        )),
        _ => None,
    }
}

/// `--- a/PATH`, `+++ b/PATH`, then each hunk with its lines.
pub(super) fn unified(file: &FileDiff) -> String {
    let mut out = format!("--- a/{0}\n+++ b/{0}\n", file.path);
    for h in &file.hunks {
        out.push_str(&h.header());
        out.push('\n');
        for l in &h.lines {
            out.push(match l.kind {
                LineKind::Context => ' ',
                LineKind::Added => '+',
                LineKind::Removed => '-',
            });
            out.push_str(&l.text());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff_of(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
        file_diff(name, args).map(|f| unified(&f))
    }

    #[test]
    fn an_edit_is_its_replaced_text_and_a_write_its_new_text() {
        let args = |v: serde_json::Value| v.as_object().unwrap().clone();
        let edit = diff_of(
            "Edit",
            &args(serde_json::json!({"file_path": "a.py", "old_string": "x = 1\ny = 2\n", "new_string": "x = 1\ny = 3\n"})),
        )
        .unwrap();
        assert!(edit.starts_with("--- a/a.py\n+++ b/a.py\n@@"), "{edit}");
        assert!(
            edit.contains("\n-y = 2\n+y = 3\n") && edit.contains("\n x = 1\n"),
            "{edit}"
        );
        let write = diff_of(
            "Write",
            &args(serde_json::json!({"file_path": "b.py", "content": "z = 0\n"})),
        )
        .unwrap();
        assert!(write.contains("\n+z = 0\n"), "{write}");
        assert_eq!(
            diff_of("Bash", &args(serde_json::json!({"command": "ls"}))),
            None
        );
    }
}
