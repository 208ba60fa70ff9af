//! The HTML page of an exported session: one self-contained file (inline CSS, no scripts, no
//! outside resources) with the same parts as the Markdown page; the model's text and final
//! answer drawn from their Markdown (`super::rich`), reasoning and results folded in
//! `<details>`, and diffs (each edit, and the final patch) drawn with the syntax colours and
//! word emphasis of `crate::diff`, as the interface shows them, numbered with the file's own
//! lines where the log holds the file. A change the person decided shows the decision and
//! their words as the model received them.
//!
//! Does not own: what the page holds (`super::document`), or highlighting (`crate::diff`).

use super::document::{Call, Document, Turn};
use super::rich::markdown_html;
use crate::diff::{FileDiff, FileStatus, Highlighter, LineKind};

const STYLE: &str = "
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1f2328; background: #ffffff; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; margin-top: 2rem; } h3 { font-size: 1rem; }
pre { background: #f6f8fa; padding: .6rem .8rem; overflow-x: auto; border-radius: 6px; font-size: .85rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
details { margin: .4rem 0; } summary { cursor: pointer; color: #59636e; }
.meta { color: #59636e; }
.text { margin: .6rem 0; } .text p { margin: .4rem 0; } .text pre code { font-size: inherit; }
.text table { border-collapse: collapse; } .text th, .text td { border: 1px solid #d0d7de; padding: .2rem .5rem; }
.decision { border-left: 4px solid #8c959f; padding: .1rem .8rem; margin: .6rem 0; }
.decision.yes { border-color: #1a7f37; } .decision.no { border-color: #cf222e; }
.decision pre { background: none; padding: 0; margin: .2rem 0; white-space: pre-wrap; }
.diff { background: #2b303b; color: #c0c5ce; border-radius: 6px; padding: 0 0 .3rem; margin: .6rem 0; overflow-x: auto; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; }
.diff .file { background: #343d46; color: #eff1f5; padding: .3rem .8rem; font-weight: 600; }
.diff .hunk { color: #8fa1b3; padding: 0 .8rem; }
.diff .line { padding: 0 .8rem; white-space: pre; }
.diff .add { background: #2d3f33; } .diff .del { background: #46303a; }
.diff .add .em { background: #3f6b4a; } .diff .del .em { background: #7a3b48; }
.diff .no { color: #65737e; display: inline-block; min-width: 2.5rem; user-select: none; }
";

/// `text` with `&`, `<`, `>` and quotes escaped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn pre(text: &str) -> String {
    format!("<pre>{}</pre>\n", esc(text))
}

/// The page. Diffs are drawn on the dark background of the syntax theme whose colours they
/// carry (`crate::diff`'s default).
pub(super) fn render(doc: &Document) -> String {
    let hl = Highlighter::default();
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Lilypad session {id}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Lilypad session {id}</h1>\n",
        id = esc(&doc.session_id)
    );
    out.push_str("<p class=\"meta\">");
    out.push_str(&format!(
        "Created {} · repository <code>{}</code> · engine <code>{}</code> · {} turns",
        esc(&doc.created),
        esc(&doc.repo),
        esc(&doc.engine),
        doc.turns.len()
    ));
    if let Some(f) = &doc.finish {
        out.push_str(&format!(" · {}", esc(super::finish_text(f))));
    }
    out.push_str("</p>\n<h2>Task</h2>\n");
    out.push_str(&pre(&doc.task));
    if let Some(m) = doc.messages.first().filter(|m| m.text != doc.task) {
        out.push_str("<details><summary>The first message as the model read it</summary>\n");
        out.push_str(&pre(&m.text));
        out.push_str("</details>\n");
    }
    for turn in &doc.turns {
        for m in doc
            .messages
            .iter()
            .skip(1)
            .filter(|m| m.after_turn + 1 == turn.number)
        {
            out.push_str("<h2>Message</h2>\n");
            out.push_str(&pre(&m.text));
        }
        out.push_str(&render_turn(turn));
    }
    if let Some(a) = super::separate_answer(doc) {
        out.push_str("<h2>Final answer</h2>\n");
        out.push_str(&format!(
            "<div class=\"text\">{}</div>\n",
            markdown_html(a.trim())
        ));
    }
    if !doc.review_comments.is_empty() {
        out.push_str("<h2>Review comments (recorded, not sent to the model)</h2>\n<ol>\n");
        for c in &doc.review_comments {
            out.push_str(&format!(
                "<li><code>{}</code>{}</li>\n",
                esc(&c.place),
                pre(&c.text)
            ));
        }
        out.push_str("</ol>\n");
    }
    out.push_str("<h2>Final patch</h2>\n");
    match doc.patch.as_deref() {
        Some(p) if !p.trim().is_empty() => {
            for file in crate::diff::patch::parse(p, &hl) {
                out.push_str(&diff_block(&file));
            }
        }
        Some(_) => out.push_str("<p>No changes.</p>\n"),
        None => out.push_str(&format!("<p>{}</p>\n", super::NO_PATCH)),
    }
    out.push_str("<h2>Provenance</h2>\n");
    out.push_str(&pre(&super::provenance_json(doc)));
    out.push_str("</body>\n</html>\n");
    out
}

fn render_turn(turn: &Turn) -> String {
    let mut out = format!("<h2>Turn {}</h2>\n", turn.number);
    if let Some(r) = &turn.reasoning {
        out.push_str("<details><summary>Reasoning</summary>\n");
        out.push_str(&pre(r.trim()));
        out.push_str("</details>\n");
    }
    if !turn.content.trim().is_empty() {
        out.push_str(&format!(
            "<div class=\"text\">{}</div>\n",
            markdown_html(turn.content.trim())
        ));
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
    let mut out = format!(
        "<h3>{} <code>{}</code>{}</h3>\n",
        esc(&call.name),
        esc(&call.id),
        esc(&how)
    );
    match call.file_diff() {
        Some(file) => out.push_str(&diff_block(&file)),
        None => out.push_str(&pre(&super::arguments_json(call))),
    }
    match &call.result {
        Some(r) if call.reviewed() => {
            let (mark, went_ahead) = super::decision_mark(call.resolution);
            let class = if went_ahead { "yes" } else { "no" };
            out.push_str(&format!(
                "<div class=\"decision {class}\"><strong>{mark}</strong>{}</div>\n",
                pre(r)
            ));
        }
        Some(r) => {
            out.push_str("<details><summary>Result</summary>\n");
            out.push_str(&pre(r));
            out.push_str("</details>\n");
        }
        None => out.push_str("<p>No result: the session stopped before the call ran.</p>\n"),
    }
    out
}

/// One file's diff: a heading, then each hunk's lines with their numbers, colours and
/// emphasis.
fn diff_block(file: &FileDiff) -> String {
    let what = match &file.status {
        FileStatus::Modified => String::new(),
        FileStatus::Added => " (new file)".into(),
        FileStatus::Deleted => " (deleted)".into(),
        FileStatus::Renamed { from } => format!(" (renamed from {from})"),
        FileStatus::Binary => " (binary)".into(),
    };
    let mut out = format!(
        "<div class=\"diff\"><div class=\"file\">{}{}</div>",
        esc(&file.path),
        esc(&what)
    );
    for h in &file.hunks {
        out.push_str(&format!("<div class=\"hunk\">{}</div>", esc(&h.header())));
        for l in &h.lines {
            let (class, sign) = match l.kind {
                LineKind::Context => ("line", ' '),
                LineKind::Added => ("line add", '+'),
                LineKind::Removed => ("line del", '-'),
            };
            let no = l
                .new_no
                .or(l.old_no)
                .map(|n| n.to_string())
                .unwrap_or_default();
            out.push_str(&format!(
                "<div class=\"{class}\"><span class=\"no\">{no}</span>{sign}"
            ));
            for s in &l.segments {
                let style =
                    s.fg.map(|c| format!(" style=\"color:#{:02x}{:02x}{:02x}\"", c.0, c.1, c.2))
                        .unwrap_or_default();
                let em = if s.emph { " class=\"em\"" } else { "" };
                out.push_str(&format!("<span{em}{style}>{}</span>", esc(&s.text)));
            }
            out.push_str("</div>");
        }
    }
    out.push_str("</div>\n");
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_is_escaped() {
        assert_eq!(
            super::esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
