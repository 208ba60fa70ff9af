//! The layering check: every top-level module has a layer in the table of
//! `docs/architecture.md` ("## Layers"), and no module uses one of its own or a higher layer
//! (read from the `crate::` paths in its files, grouped imports member by member, comments left
//! out). clap appears only in the command line. A test over the source tree, so that the
//! document and the code cannot drift apart; it owns no runtime code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Module name -> layer, from the document's table.
fn layers() -> BTreeMap<String, u32> {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let section = doc
        .split("## Layers")
        .nth(1)
        .expect("a \"## Layers\" section in docs/architecture.md");
    let mut out = BTreeMap::new();
    for line in section.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else {
            continue;
        };
        for name in cells[2].split(',') {
            out.insert(name.trim().trim_matches('`').to_string(), layer);
        }
    }
    assert!(out.len() > 5, "the layer table was not found: {out:?}");
    out
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code without comments (whole comment lines, and from ` // ` on), line for line,
/// so that a position in it is on the same line as in the file.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("//") {
                ""
            } else {
                line.split(" // ").next().unwrap_or(line)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules the code names through `crate::`, each with its 1-based line. A
/// grouped import names every module of its group, nested groups and groups over several lines
/// included: `use crate::{agent::X, tui::{a, b}}` names `agent` and `tui`.
fn crate_paths(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // `lilypad_crate::` is another name; `$crate::` in macros is the crate too.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        group_heads(code, at + "crate::".len(), &mut out);
    }
    out.into_iter()
        .map(|at| (code[..at].matches('\n').count() + 1, ident_at(code, at)))
        .filter(|(_, name)| !name.is_empty() && *name != "self")
        .collect()
}

/// The identifier that starts at byte `at`.
fn ident_at(code: &str, at: usize) -> &str {
    let rest = &code[at..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The starts of the first segments of the path that begins at byte `at`: the path's own, or,
/// for a group `{a::x, b, {c, d}}`, each member's (a nested group at the top counts as members).
fn group_heads(code: &str, at: usize, out: &mut Vec<usize>) {
    let start = at + (code[at..].len() - code[at..].trim_start().len());
    if !code[start..].starts_with('{') {
        out.push(start);
        return;
    }
    let mut depth = 0usize;
    let mut member = start + 1;
    for (i, c) in code[start..].char_indices() {
        let i = start + i;
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                group_heads(code, member, out);
                if c == '}' {
                    return;
                }
                member = i + 1;
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
}

/// The top-level module a file belongs to (`src/engine/llama/mod.rs` -> `engine`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let first = rel.components().next().expect("a path component");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// Every source file under `src/`, with its top-level module and its text.
fn sources() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(ROOT).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            (module_of(&src, &file), file, text)
        })
        .collect()
}

#[test]
fn no_module_uses_its_own_or_a_higher_layer() {
    let layers = layers();
    let mut problems = Vec::new();
    for (module, file, text) in sources() {
        if matches!(module.as_str(), "lib" | "main" | "layering") {
            continue;
        }
        let Some(&mine) = layers.get(&module) else {
            problems.push(format!(
                "module `{module}` has no layer in docs/architecture.md"
            ));
            continue;
        };
        for (n, used) in crate_paths(&code(&text)) {
            if used == module || !layers.contains_key(used) {
                continue;
            }
            let theirs = layers[used];
            if theirs >= mine {
                problems.push(format!(
                    "{}:{n}: `{module}` (layer {mine}) uses `{used}` (layer {theirs})",
                    file.strip_prefix(ROOT).unwrap_or(&file).display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn clap_is_only_in_the_command_line() {
    let mut problems = Vec::new();
    for (module, file, text) in sources() {
        if matches!(module.as_str(), "cli" | "main" | "layering") {
            continue;
        }
        for (n, line) in code(&text).lines().enumerate().map(|(i, l)| (i + 1, l)) {
            if line.contains("clap::") || line.contains("#[arg(") || line.contains("#[command(") {
                problems.push(format!("{}:{n}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_what_it_checks() {
    let names = |code: &str| -> Vec<String> {
        crate_paths(code)
            .into_iter()
            .map(|(_, m)| m.to_string())
            .collect()
    };
    assert_eq!(
        names("use crate::engine::{EngineError}; let x = crate::tui::f();"),
        ["engine", "tui"]
    );
    assert_eq!(names("use lilypad_crate::x;"), Vec::<String>::new());
    let text = code("//! crate::tui\nuse crate::agent; // crate::cli\n");
    assert_eq!(crate_paths(&text), vec![(2, "agent")]);
    // Grouped and nested imports, over several lines: the old checker cut the path at the
    // first `{` and saw none of these modules.
    assert_eq!(
        names("use crate::{agent::X, tui::{a, b}};"),
        ["agent", "tui"]
    );
    let grouped = code(
        "use crate::{\n    self as lib,\n    // crate::cli\n    protocol::Op,\n    {engine, tools::{Read, Write}},\n};\n",
    );
    assert_eq!(
        crate_paths(&grouped),
        vec![(4, "protocol"), (5, "engine"), (5, "tools")]
    );
    let layers = layers();
    assert!(layers["protocol"] < layers["engine"] && layers["engine"] < layers["cli"]);
}
