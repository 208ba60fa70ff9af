//! A GBNF grammar (llama.cpp's grammar format) that makes every tool call well formed, for a
//! lazy grammar sampler triggered by the `<tool_call>` token.
//!
//! Owns: the grammar text built from the tool schemas: after `<tool_call>` come a known tool's
//! name, any of that tool's parameter names (in any order), values that end at `</parameter>`
//! and hold none of the tags that would cut them, then `</function>` and the `</tool_call>`
//! token, each in the layout the model was trained on. Outside calls any token but
//! `<tool_call>` may follow, so reasoning, `</think>` and content after a call stay free: the
//! grammar only ever constrains the inside of calls. Does not own: building the sampler
//! (`crate::engine`), or whether the grammar is on (`SamplingParams::tool_grammar`).

use super::tools::ToolSpec;
use serde_json::Value;

/// The tags that end a value early (see the parser): a value must not contain them.
const CUTTING: [&str; 4] = ["</parameter>", "<parameter=", "</function>", "</tool_call>"];

/// The grammar for calls to `tools`; `None` when there are no tools (nothing to constrain).
/// `<tool_call>` and `</tool_call>` are written as token references, so the model's vocabulary
/// must have them as single tokens (the sampler reports an error otherwise).
pub fn tool_call_grammar(tools: &[ToolSpec]) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut g = String::new();
    g.push_str("root ::= call ( other | call )*\n");
    g.push_str("other ::= !<tool_call>\n");
    let functions: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{} f{i}", literal(&format!("{}>\n", t.name))))
        .collect();
    g.push_str(&format!(
        "call ::= <tool_call> \"\\n<function=\" ( {} ) \"</function>\\n\" </tool_call>\n",
        functions.join(" | ")
    ));
    for (i, t) in tools.iter().enumerate() {
        let names = param_names(&t.parameters);
        if names.is_empty() {
            g.push_str(&format!("f{i} ::= \"\"\n"));
            continue;
        }
        let alts: Vec<String> = names.iter().map(|n| literal(n)).collect();
        g.push_str(&format!("f{i} ::= p{i}*\n"));
        g.push_str(&format!(
            "p{i} ::= \"<parameter=\" ( {} ) \">\" v \"\\n\"\n",
            alts.join(" | ")
        ));
    }
    value_rules(&mut g);
    Some(g)
}

/// The parameter names a schema declares, in order.
fn param_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `v`: text that contains none of [`CUTTING`], then `</parameter>`. One rule per proper prefix
/// of a cutting tag (all of them start with `<`, which appears nowhere else in them), tracking
/// how much of a tag the text has spelled so far.
fn value_rules(g: &mut String) {
    let mut prefixes: Vec<String> = Vec::new();
    for tag in CUTTING {
        for end in 1..tag.len() {
            let p = &tag[..end];
            if !prefixes.iter().any(|q| q == p) {
                prefixes.push(p.to_string());
            }
        }
    }
    let rule = |p: &str| -> String {
        match prefixes.iter().position(|q| q == p) {
            Some(i) => format!("v{i}"),
            None => "v".to_string(),
        }
    };
    let exit = literal(CUTTING[0]);
    g.push_str(&format!("v ::= [^<] v | \"<\" {} | {exit}\n", rule("<")));
    for p in &prefixes {
        // Characters that spell more of some tag from here.
        let mut next: Vec<char> = Vec::new();
        for tag in CUTTING {
            if let Some(rest) = tag.strip_prefix(p.as_str()) {
                if let Some(c) = rest.chars().next() {
                    if !next.contains(&c) {
                        next.push(c);
                    }
                }
            }
        }
        let mut alts = Vec::new();
        for c in &next {
            let longer = format!("{p}{c}");
            // A whole tag is never part of a value.
            if prefixes.contains(&longer) {
                alts.push(format!("{} {}", literal(&c.to_string()), rule(&longer)));
            }
        }
        alts.push(format!("\"<\" {}", rule("<")));
        let class: String = next.iter().map(|c| class_char(*c)).collect();
        alts.push(format!("[^<{class}] v"));
        alts.push(exit.clone());
        g.push_str(&format!("{} ::= {}\n", rule(p), alts.join(" | ")));
    }
}

/// A GBNF string literal.
fn literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One character inside a GBNF character class.
fn class_char(c: char) -> String {
    match c {
        ']' | '\\' | '^' | '-' | '[' => format!("\\{c}"),
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::builtin_tools;

    #[test]
    fn grammar_names_every_tool_and_parameter() {
        let g = tool_call_grammar(&builtin_tools()).unwrap();
        for name in ["Read>\\n", "Write>\\n", "Edit>\\n", "Glob>\\n", "Bash>\\n"] {
            assert!(g.contains(name), "{name} in\n{g}");
        }
        for p in [
            "file_path",
            "old_string",
            "replace_all",
            "timeout",
            "pattern",
        ] {
            assert!(g.contains(&format!("\"{p}\"")), "{p}");
        }
        assert!(g.starts_with("root ::= call ( other | call )*\n"));
        assert!(tool_call_grammar(&[]).is_none());
    }

    #[test]
    fn every_rule_used_is_defined() {
        let g = tool_call_grammar(&builtin_tools()).unwrap();
        let defined: Vec<&str> = g
            .lines()
            .filter_map(|l| l.split_once(" ::= ").map(|(n, _)| n))
            .collect();
        for line in g.lines() {
            let (_, body) = line.split_once(" ::= ").unwrap();
            // Rule references are the bare words outside literals and classes.
            let mut in_lit = false;
            let mut in_class = false;
            let mut word = String::new();
            let mut prev = ' ';
            for c in body.chars().chain([' ']) {
                if in_lit {
                    if c == '"' && prev != '\\' {
                        in_lit = false;
                    }
                } else if in_class {
                    if c == ']' && prev != '\\' {
                        in_class = false;
                    }
                } else if c == '"' {
                    in_lit = true;
                } else if c == '[' {
                    in_class = true;
                } else if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    word.push(c);
                } else {
                    // `<tool_call>` and `</tool_call>` are token references, not rules.
                    if !word.is_empty() && word != "tool_call" {
                        assert!(defined.contains(&word.as_str()), "{word} in {line}");
                    }
                    word.clear();
                }
                prev = c;
            }
        }
    }
}
