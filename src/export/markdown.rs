//! The Markdown page of an exported session: the task, each turn (reasoning folded in a
//! `<details>` block, the text, each call with its arguments, result and, for an edit, a
//! `diff` block), the final patch and the provenance.
//!
//! Does not own: what the page holds (`super::document`).

use super::document::{Call, Document, Turn};

/// A fenced block of `text` whose fence is longer than any run of backticks in it.
pub(super) fn fence(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let f = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{f}{lang}\n{body}\n{f}\n")
}

/// The page.
pub(super) fn render(doc: &Document) -> String {
    let mut out = format!("# Lilypad session {}\n\n", doc.session_id);
    out.push_str(&format!("- Created: {}\n", doc.created));
    out.push_str(&format!("- Repository: `{}`\n", doc.repo));
    out.push_str(&format!("- Engine: `{}`\n", doc.engine));
    out.push_str(&format!("- Turns: {}\n", doc.turns.len()));
    if let Some(f) = &doc.finish {
        out.push_str(&format!("- Finished: {}\n", super::finish_text(f)));
    }
    out.push_str("\n## Task\n\n");
    out.push_str(&fence("text", &doc.task));
    let first = doc.messages.first();
    if let Some(m) = first.filter(|m| m.text != doc.task) {
        out.push_str("\n<details><summary>The first message as the model read it</summary>\n\n");
        out.push_str(&fence("text", &m.text));
        out.push_str("\n</details>\n");
    }
    for turn in &doc.turns {
        for m in doc
            .messages
            .iter()
            .skip(1)
            .filter(|m| m.after_turn + 1 == turn.number)
        {
            out.push_str("\n## Message\n\n");
            out.push_str(&fence("text", &m.text));
        }
        out.push_str(&render_turn(turn));
    }
    if let Some(a) = super::separate_answer(doc) {
        out.push_str("\n## Final answer\n\n");
        out.push_str(a.trim());
        out.push('\n');
    }
    if !doc.review_comments.is_empty() {
        out.push_str("\n## Review comments (recorded, not sent to the model)\n\n");
        for c in &doc.review_comments {
            out.push_str(&format!("1. `{}`\n\n", c.place.replace('`', "'")));
            out.push_str(&indent(&fence("text", &c.text), "   "));
        }
    }
    out.push_str("\n## Final patch\n\n");
    match doc.patch.as_deref() {
        Some(p) if !p.trim().is_empty() => out.push_str(&fence("diff", p)),
        Some(_) => out.push_str("No changes.\n"),
        None => {
            out.push_str(super::NO_PATCH);
            out.push('\n');
        }
    }
    out.push_str("\n## Provenance\n\n");
    out.push_str(&fence("json", &super::provenance_json(doc)));
    out
}

/// `text` with `prefix` before each non-empty line (a block inside a list item).
fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| match l.is_empty() {
            true => "\n".to_string(),
            false => format!("{prefix}{l}\n"),
        })
        .collect()
}

fn render_turn(turn: &Turn) -> String {
    let mut out = format!("\n## Turn {}\n\n", turn.number);
    if let Some(r) = &turn.reasoning {
        out.push_str("<details><summary>Reasoning</summary>\n\n");
        out.push_str(&fence("text", r.trim()));
        out.push_str("\n</details>\n\n");
    }
    if !turn.content.trim().is_empty() {
        out.push_str(turn.content.trim());
        out.push_str("\n\n");
    }
    for call in &turn.calls {
        out.push_str(&render_call(call));
    }
    out
}

fn render_call(call: &Call) -> String {
    let how = call
        .resolution
        .map(|r| format!(", {}", super::resolution_text(r)))
        .unwrap_or_default();
    let mut out = format!("### {} `{}`{how}\n\n", call.name, call.id);
    match &call.diff {
        Some(d) => out.push_str(&fence("diff", d)),
        None => out.push_str(&fence("json", &super::arguments_json(call))),
    }
    out.push('\n');
    match &call.result {
        Some(r) if call.reviewed() => {
            let (mark, _) = super::decision_mark(call.resolution);
            out.push_str(&format!("**{mark}**, as the model was told:\n\n"));
            out.push_str(&fence("text", r));
            out.push('\n');
        }
        Some(r) => {
            out.push_str("<details><summary>Result</summary>\n\n");
            out.push_str(&fence("text", r));
            out.push_str("\n</details>\n\n");
        }
        None => out.push_str("No result: the session stopped before the call ran.\n\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fence_outgrows_the_backticks_inside() {
        assert_eq!(
            super::fence("text", "a ``` b\n"),
            "````text\na ``` b\n````\n"
        );
        assert_eq!(super::fence("", "plain"), "```\nplain\n```\n");
    }
}
