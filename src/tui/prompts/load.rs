//! Reading the prompt directories: every `*.md` file in each (not below), parsed; a file of a
//! later directory replaces one of the same name from an earlier directory, so the
//! repository's `.lilypad/prompts/` overrides the person's own. A directory that does not
//! exist holds no prompts; a file or directory that cannot be read is reported and skipped.

use super::PromptFile;
use std::path::{Path, PathBuf};

/// A prompt file or directory that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reading the prompt file {path}: {source}")]
pub struct PromptError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The prompt files read, by name, and what could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub prompts: Vec<PromptFile>,
    pub problems: Vec<PromptError>,
}

/// Read every directory of `dirs`, later ones overriding earlier ones (see the module docs).
pub fn load(dirs: &[PathBuf]) -> Loaded {
    let mut loaded = Loaded::default();
    for dir in dirs {
        for file in read_dir(dir, &mut loaded.problems) {
            match loaded.prompts.iter_mut().find(|p| p.name == file.name) {
                Some(earlier) => *earlier = file,
                None => loaded.prompts.push(file),
            }
        }
    }
    loaded.prompts.sort_by(|a, b| a.name.cmp(&b.name));
    loaded
}

fn read_dir(dir: &Path, problems: &mut Vec<PromptError>) -> Vec<PromptFile> {
    let problem = |path: &Path, source| PromptError {
        path: path.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            problems.push(problem(dir, e));
            return Vec::new();
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problems.push(problem(dir, e));
                continue;
            }
        };
        let path = entry.path();
        let Some(name) = prompt_name(&path) else {
            continue;
        };
        // Through links too: a prompt may be a link to a file kept elsewhere.
        if !path.is_file() {
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => files.push(PromptFile::parse(name, &text)),
            Err(e) => problems.push(problem(&path, e)),
        }
    }
    files
}

/// The name a file is typed by (`fix` for `fix.md`), if it is a prompt file: a `.md` file
/// whose name is one word.
fn prompt_name(path: &Path) -> Option<&str> {
    if path.extension()? != "md" {
        return None;
    }
    let stem = path.file_stem()?.to_str()?;
    let one_word =
        !stem.is_empty() && !stem.starts_with('.') && !stem.contains(char::is_whitespace);
    one_word.then_some(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_directories_override_and_other_files_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let (user, repo) = (tmp.path().join("user"), tmp.path().join("repo"));
        std::fs::create_dir_all(user.join("sub")).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(user.join("fix.md"), "user fix").unwrap();
        std::fs::write(user.join("review.md"), "user review").unwrap();
        std::fs::write(user.join("notes.txt"), "not a prompt").unwrap();
        std::fs::write(user.join("two words.md"), "not typeable").unwrap();
        std::fs::write(user.join("sub/deep.md"), "not read").unwrap();
        std::fs::write(repo.join("fix.md"), "repo fix").unwrap();
        let loaded = load(&[user, repo, tmp.path().join("missing")]);
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let got: Vec<(&str, &str)> = loaded
            .prompts
            .iter()
            .map(|p| (p.name.as_str(), p.body.as_str()))
            .collect();
        assert_eq!(got, [("fix", "repo fix"), ("review", "user review")]);
    }

    #[test]
    fn a_file_that_is_not_text_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(tmp.path().join("ok.md"), "fine").unwrap();
        let loaded = load(&[tmp.path().to_path_buf()]);
        assert_eq!(loaded.prompts.len(), 1);
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.problems[0].to_string().contains("bin.md"));
    }
}
