//! `.devcontainer/devcontainer.json`: the image a repository says it is developed in.
//!
//! Owns: reading the file (JSON with comments and trailing commas, as the devcontainer spec
//! allows) and the two fields Lilypad uses: `image`, or `build.dockerfile` with
//! `build.context`, both resolved relative to the folder that holds devcontainer.json (the
//! context defaults to that folder). Everything else in the file (features, mounts, scripts)
//! is ignored. Does not own: building the image (`super::build`).

use super::ImageError;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Where Lilypad looks for a devcontainer definition, relative to the repository.
pub const DEVCONTAINER_FILES: &[&str] = &[".devcontainer/devcontainer.json", ".devcontainer.json"];

/// What a devcontainer.json asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devcontainer {
    /// A ready image (`image`).
    Image(String),
    /// A Dockerfile to build, with its context (absolute paths).
    Build {
        dockerfile: PathBuf,
        context: PathBuf,
    },
}

/// Why a devcontainer.json names no image Lilypad can use (the source of
/// [`ImageError::Devcontainer`]).
#[derive(Debug, Error)]
pub enum DevcontainerError {
    /// Not JSON (after comments and trailing commas are taken out), or not the spec's shape.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("it names neither `image` nor `build.dockerfile`")]
    NoImage,
}

#[derive(Debug, Deserialize)]
struct File {
    image: Option<String>,
    build: Option<Build>,
    #[serde(rename = "dockerFile")]
    docker_file: Option<String>,
    context: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Build {
    dockerfile: Option<String>,
    context: Option<String>,
}

/// The first devcontainer definition of `repo`, if it has one.
pub fn find(repo: &Path) -> Option<PathBuf> {
    DEVCONTAINER_FILES
        .iter()
        .map(|f| repo.join(f))
        .find(|p| p.is_file())
}

/// Read and interpret one devcontainer.json.
pub fn load(path: &Path) -> Result<Devcontainer, ImageError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse(&text, dir).map_err(|source| ImageError::Devcontainer {
        path: path.to_path_buf(),
        source,
    })
}

/// Interpret the text of a devcontainer.json that lives in `dir`.
pub fn parse(text: &str, dir: &Path) -> Result<Devcontainer, DevcontainerError> {
    let file: File = serde_json::from_str(&strip_jsonc(text))?;
    // The older top-level `dockerFile` / `context` keys mean the same as `build.*`.
    let (dockerfile, context) = match file.build {
        Some(b) => (b.dockerfile, b.context),
        None => (file.docker_file, file.context),
    };
    match (dockerfile, file.image) {
        (Some(df), _) => {
            let dockerfile = dir.join(df);
            let context = context.map_or_else(|| dir.to_path_buf(), |c| dir.join(c));
            Ok(Devcontainer::Build {
                dockerfile: normalise(&dockerfile),
                context: normalise(&context),
            })
        }
        (None, Some(image)) if !image.trim().is_empty() => Ok(Devcontainer::Image(image)),
        _ => Err(DevcontainerError::NoImage),
    }
}

/// `a/b/../c` as `a/c` (lexically; the paths need not exist yet).
fn normalise(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// JSON with comments (`//`, `/* */`) and trailing commas, made plain JSON: comments become
/// spaces (so error positions stay right) and a comma followed only by blanks before `}` or
/// `]` is dropped.
pub fn strip_jsonc(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                out.push(c);
                i += 1;
                while i < chars.len() {
                    out.push(chars[i]);
                    match chars[i] {
                        '\\' if i + 1 < chars.len() => {
                            out.push(chars[i + 1]);
                            i += 2;
                            continue;
                        }
                        '"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                out.push_str("  ");
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
                out.push_str("  ");
                i += 2;
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    drop_trailing_commas(&out)
}

fn drop_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            out.push(if matches!(next, Some('}') | Some(']')) {
                ' '
            } else {
                ','
            });
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_with_comments_and_trailing_commas() {
        let text = r#"{
            // the team's image
            "name": "proj", /* a block
               comment */
            "image": "ghcr.io/org/dev:1 // not a comment",
            "features": { "x": {}, },
        }"#;
        assert_eq!(
            parse(text, Path::new("/r/.devcontainer")).unwrap(),
            Devcontainer::Image("ghcr.io/org/dev:1 // not a comment".into())
        );
    }

    #[test]
    fn build_paths_are_relative_to_the_devcontainer_folder() {
        let text = r#"{ "build": { "dockerfile": "Dockerfile", "context": ".." } }"#;
        assert_eq!(
            parse(text, Path::new("/r/.devcontainer")).unwrap(),
            Devcontainer::Build {
                dockerfile: "/r/.devcontainer/Dockerfile".into(),
                context: "/r".into(),
            }
        );
        let text = r#"{ "build": { "dockerfile": "../docker/dev.Dockerfile" } }"#;
        assert_eq!(
            parse(text, Path::new("/r/.devcontainer")).unwrap(),
            Devcontainer::Build {
                dockerfile: "/r/docker/dev.Dockerfile".into(),
                context: "/r/.devcontainer".into(),
            },
            "the context defaults to the devcontainer.json's folder"
        );
        let old = r#"{ "dockerFile": "Dockerfile", "context": "..", "image": "ignored" }"#;
        assert!(matches!(
            parse(old, Path::new("/r/.devcontainer")).unwrap(),
            Devcontainer::Build { .. }
        ));
    }

    #[test]
    fn neither_image_nor_build_is_an_error() {
        let err = parse(r#"{ "name": "x" }"#, Path::new("/r")).unwrap_err();
        assert!(err.to_string().contains("image"), "{err}");
        assert!(parse("{ not json", Path::new("/r")).is_err());
    }

    #[test]
    fn a_bad_file_s_error_reaches_serde_s() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("devcontainer.json");
        std::fs::write(&path, "{ not json").unwrap();
        let err = load(&path).unwrap_err();
        assert!(
            err.to_string().starts_with(&path.display().to_string()),
            "{err}"
        );
        let source = err.source().expect("the devcontainer error");
        assert!(source.is::<DevcontainerError>(), "{source:?}");
        let json = source.source().expect("serde's error");
        assert!(json.is::<serde_json::Error>(), "{json:?}");
    }

    #[test]
    fn strings_keep_slashes_and_escapes() {
        let s = strip_jsonc(r#"{"a": "x\"//y", "b": "/*z*/"} // end"#);
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["a"], "x\"//y");
        assert_eq!(v["b"], "/*z*/");
    }
}
