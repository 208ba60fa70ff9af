//! The layering check: every top-level module has a layer in the table of
//! `docs/architecture.md` ("## Layers"), and no module uses one of its own or a higher layer
//! (read from the `crate::` paths in its files, comments left out). clap appears only in the
//! command line. A test over the source tree, so that the document and the code cannot drift
//! apart; it owns no runtime code.

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

/// The file's code without comments (whole comment lines, and from ` // ` on).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let t = line.trim_start();
        if t.starts_with("//") {
            return None;
        }
        Some((i + 1, line.split(" // ").next().unwrap_or(line)))
    })
}

/// The top-level modules a line names through `crate::`.
fn crate_paths(line: &str) -> Vec<&str> {
    line.match_indices("crate::")
        .filter(|(at, _)| {
            // `lilypad::crate::` does not exist; `$crate::` in macros is the crate too.
            let before = line[..*at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
        .map(|(at, _)| {
            let rest = &line[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
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
        for (n, line) in code_lines(&text) {
            for used in crate_paths(line) {
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
        for (n, line) in code_lines(&text) {
            if line.contains("clap::") || line.contains("#[arg(") || line.contains("#[command(") {
                problems.push(format!("{}:{n}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_what_it_checks() {
    assert_eq!(
        crate_paths("use crate::engine::{EngineError}; let x = crate::tui::f();"),
        vec!["engine", "tui"]
    );
    assert_eq!(crate_paths("use lilypad_crate::x;"), Vec::<&str>::new());
    let lines: Vec<_> = code_lines("//! crate::tui\nuse crate::agent; // crate::cli\n").collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(crate_paths(lines[0].1), vec!["agent"]);
    let layers = layers();
    assert!(layers["protocol"] < layers["engine"] && layers["engine"] < layers["cli"]);
}
