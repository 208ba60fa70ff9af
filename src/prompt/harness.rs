//! Harness profiles: the system prompt and tool descriptions the model reads, as data. The
//! built-in profile is `assets/harness/lilypad.toml` (Lilypad's own words); a profile imported
//! from the user's copy of Leaf (`lilypad harness import PATH`) gives the model the exact text it
//! was trained with, without that text ever being part of Lilypad.
//!
//! Owns: the profile file format (TOML: `name`, `system_prompt`, `tools` as a JSON list), the
//! profile's identity (name and SHA-1 of the file's bytes, shown by `lilypad doctor` and in
//! session headers), and reading Leaf's `frognano/harness/leaf/tools.py`: its `SYSTEM_PROMPT`
//! and `OPENAI_TOOLS` assignments are read as Python literals, never executed. Does not own:
//! where profiles live (the config layer) or overrides of single parts (`PromptSettings`).

use super::pyliteral::literal_prefix;
use super::tools::{parse_tools, ToolSpec};
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The built-in profile's file.
pub const BUILTIN_PROFILE: &str = include_str!("../../assets/harness/lilypad.toml");

/// Errors reading a profile or importing one.
#[derive(Debug, Error)]
pub enum HarnessError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a harness profile: {source}")]
    Toml {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("the tools of harness profile {path} are not valid: {message}")]
    Tools { path: PathBuf, message: String },
    #[error("no Leaf tools.py under {0} (looked for frognano/harness/leaf/tools.py)")]
    NoLeaf(PathBuf),
    #[error("{path} has no `{name} = ...` assignment that reads as a Python literal")]
    Missing { path: PathBuf, name: &'static str },
    #[error("{path}: {what}")]
    Shape { path: PathBuf, what: String },
}

/// Where a profile came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessSource {
    Builtin,
    File(PathBuf),
}

/// A loaded profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Harness {
    pub name: String,
    pub system_prompt: String,
    pub tools: Vec<ToolSpec>,
    /// SHA-1 of the profile file's bytes, hex (`sha1sum FILE` gives the same).
    pub sha1: String,
    pub source: HarnessSource,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    system_prompt: String,
    /// A JSON list of tools.
    tools: String,
}

impl Harness {
    /// The built-in profile (parsed once).
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::OnceLock<Harness> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                // The asset is part of the binary and checked by the tests below; an empty
                // profile rather than a panic if it ever did not parse.
                Self::parse(BUILTIN_PROFILE, HarnessSource::Builtin).unwrap_or_else(|_| Self {
                    name: "lilypad".into(),
                    system_prompt: String::new(),
                    tools: Vec::new(),
                    sha1: sha1_hex(BUILTIN_PROFILE.as_bytes()),
                    source: HarnessSource::Builtin,
                })
            })
            .clone()
    }

    /// A profile file.
    pub fn load(path: &Path) -> Result<Self, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(|source| HarnessError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, HarnessSource::File(path.to_path_buf()))
    }

    fn parse(text: &str, source: HarnessSource) -> Result<Self, HarnessError> {
        let path = match &source {
            HarnessSource::Builtin => PathBuf::from("assets/harness/lilypad.toml"),
            HarnessSource::File(p) => p.clone(),
        };
        let file: ProfileFile = toml::from_str(text).map_err(|source| HarnessError::Toml {
            path: path.clone(),
            source,
        })?;
        let tools = parse_tools(&file.tools).map_err(|e| HarnessError::Tools {
            path,
            message: e.to_string(),
        })?;
        Ok(Self {
            name: file.name,
            system_prompt: file.system_prompt,
            tools,
            sha1: sha1_hex(text.as_bytes()),
            source,
        })
    }

    /// `NAME (sha1 0123456789ab)`: how doctor and session headers name the profile.
    pub fn label(&self) -> String {
        format!(
            "{} (sha1 {})",
            self.name,
            &self.sha1[..12.min(self.sha1.len())]
        )
    }
}

fn sha1_hex(bytes: &[u8]) -> String {
    Sha1::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Leaf's `tools.py` under `path`: the file itself, or a checkout or installed package that
/// holds `frognano/harness/leaf/tools.py` (or `harness/leaf/tools.py`, `leaf/tools.py`).
pub fn find_leaf_tools(path: &Path) -> Result<PathBuf, HarnessError> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    ["frognano/harness/leaf", "harness/leaf", "leaf", "."]
        .iter()
        .map(|sub| path.join(sub).join("tools.py"))
        .find(|p| p.is_file())
        .ok_or_else(|| HarnessError::NoLeaf(path.to_path_buf()))
}

/// A profile file (TOML text) named `name` from Leaf's `tools.py` at `tools_py`: its
/// `SYSTEM_PROMPT` string and `OPENAI_TOOLS` list, read as Python literals.
pub fn import_leaf(tools_py: &Path, name: &str) -> Result<String, HarnessError> {
    let text = std::fs::read_to_string(tools_py).map_err(|source| HarnessError::Read {
        path: tools_py.to_path_buf(),
        source,
    })?;
    let shape = |what: &str| HarnessError::Shape {
        path: tools_py.to_path_buf(),
        what: what.to_string(),
    };
    let prompt = assignment(&text, "SYSTEM_PROMPT").ok_or(HarnessError::Missing {
        path: tools_py.to_path_buf(),
        name: "SYSTEM_PROMPT",
    })?;
    let prompt = prompt
        .as_str()
        .ok_or_else(|| shape("SYSTEM_PROMPT is not a string"))?
        .to_string();
    let tools = assignment(&text, "OPENAI_TOOLS").ok_or(HarnessError::Missing {
        path: tools_py.to_path_buf(),
        name: "OPENAI_TOOLS",
    })?;
    if !tools.is_array() {
        return Err(shape("OPENAI_TOOLS is not a list"));
    }
    let tools_json = serde_json::to_string_pretty(&tools).map_err(|e| shape(&e.to_string()))?;
    // Check it reads back as tools before writing anything.
    parse_tools(&tools_json).map_err(|e| shape(&e.to_string()))?;
    let file = ProfileFile {
        name: name.to_string(),
        system_prompt: prompt,
        tools: tools_json,
    };
    let body = toml::to_string(&file).map_err(|e| shape(&e.to_string()))?;
    Ok(format!(
        "# Harness profile imported by `lilypad harness import` from {}.\n# It holds that file's text: keep it private to your machine.\n{body}",
        tools_py.display()
    ))
}

/// The value of a top-level `NAME = <literal>` assignment (an annotation `NAME: T = ...` too).
fn assignment(source: &str, name: &str) -> Option<serde_json::Value> {
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let rest_trim = rest.trim_start_matches([' ', '\t']);
        let after = if let Some(r) = rest_trim.strip_prefix(':') {
            // An annotation: skip to its `=`.
            let eq = r.find('=')?;
            &r[eq..]
        } else {
            rest_trim
        };
        let Some(value) = after.strip_prefix('=').filter(|v| !v.starts_with('=')) else {
            continue;
        };
        let at = start + (line.len() - value.len());
        if let Some((v, _)) = literal_prefix(&source[at..]) {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_profile_parses_and_has_the_five_tools() {
        let h = Harness::builtin();
        assert_eq!(h.name, "lilypad");
        let names: Vec<&str> = h.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Read", "Write", "Edit", "Glob", "Bash"]);
        assert!(h.system_prompt.starts_with("You are"));
        assert!(!h.system_prompt.ends_with('\n'));
        assert_eq!(h.sha1.len(), 40);
        assert!(Harness::parse(BUILTIN_PROFILE, HarnessSource::Builtin).is_ok());
    }

    #[test]
    fn assignments_are_read_as_literals() {
        let src = "X = 1\nSYSTEM_PROMPT = (\n    \"a\\n\"  # first\n    'b'\n)\nOPENAI_TOOLS: list = [{'k': True}]\nSYSTEM_PROMPT_2 = 'no'\n";
        assert_eq!(
            assignment(src, "SYSTEM_PROMPT"),
            Some(serde_json::json!("a\nb"))
        );
        assert_eq!(
            assignment(src, "OPENAI_TOOLS"),
            Some(serde_json::json!([{"k": true}]))
        );
        assert_eq!(assignment(src, "MISSING"), None);
        assert_eq!(assignment("A == 1\n", "A"), None);
    }

    /// A stand-in for Leaf's file, of the same shape (never Leaf's text).
    const STAND_IN: &str = r#""""Stand-in harness text for tests."""

from __future__ import annotations

SYSTEM_PROMPT = (
    "Line one of a test prompt.\n"
    "Line two, with a 'quote'.\n"
    "Line three."
)

OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Test words for reading.",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {
                        "type": "string",
                        "description": "Test words.",
                    },
                    "offset": {"type": "integer", "description": "More test words."},
                },
                "required": ["file_path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": (
                "Test words"
                " joined."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Test."},
                    "timeout": {"type": "number", "description": "Test."},
                },
                "required": ["command"],
            },
        },
    },
]
"#;

    #[test]
    fn importing_a_leaf_shaped_tools_py_gives_its_text_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let leaf = dir.path().join("frognano/harness/leaf");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(leaf.join("tools.py"), STAND_IN).unwrap();
        let found = find_leaf_tools(dir.path()).unwrap();
        assert_eq!(found, leaf.join("tools.py"));
        let profile = import_leaf(&found, "leaf").unwrap();
        let out = dir.path().join("leaf.toml");
        std::fs::write(&out, &profile).unwrap();
        let h = Harness::load(&out).unwrap();
        assert_eq!(h.name, "leaf");
        assert_eq!(
            h.system_prompt,
            "Line one of a test prompt.\nLine two, with a 'quote'.\nLine three."
        );
        let names: Vec<&str> = h.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Read", "Bash"]);
        assert_eq!(h.tools[1].description, "Test words joined.");
        let keys: Vec<&String> = h.tools[0].parameters["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["file_path", "offset"], "key order is kept");
        assert_eq!(h.sha1, sha1_hex(profile.as_bytes()));
        assert!(h.label().starts_with("leaf (sha1 "));
        // A file without the constants says which one is missing.
        std::fs::write(leaf.join("tools.py"), "X = 1\n").unwrap();
        let err = import_leaf(&leaf.join("tools.py"), "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("SYSTEM_PROMPT"), "{err}");
        assert!(find_leaf_tools(&dir.path().join("nowhere")).is_err());
    }
}
