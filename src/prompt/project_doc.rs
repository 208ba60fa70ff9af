//! Project instructions: the `AGENTS.md` files a session's first message starts with.
//!
//! Owns: which files are read (the person's own file in Lilypad's config directory, then one
//! file per directory from the repository's root down to the working directory), the names
//! looked for in each directory (`AGENTS.override.md` in place of `AGENTS.md`, then the
//! fallback names of `[prompt] project_doc_fallback_filenames`), joining them into one block
//! under a byte cap (saying so when the cap cuts it), and each file's SHA-256 for the session
//! header.
//!
//! Does not own: whether a session reads them (`crate::launch` decides from the options), where
//! the block goes in the conversation (the agent puts it at the head of the first user
//! message), or where the config directory is (`crate::config` knows; the caller passes it).

use super::PromptError;
use std::path::{Path, PathBuf};

/// The file that takes the place of `AGENTS.md` in its directory.
pub const OVERRIDE_NAME: &str = "AGENTS.override.md";
/// The file read in each directory when there is no override.
pub const DOC_NAME: &str = "AGENTS.md";
/// How many bytes of instructions a session reads by default (32 KiB).
pub const DEFAULT_MAX_BYTES: usize = 32 * 1024;

/// One instructions file that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// How the block names it: relative to the repository root, or `user:NAME` for the
    /// person's own file.
    pub label: String,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

/// The instructions a session reads: the files, and the block made of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectDocs {
    pub files: Vec<DocFile>,
    /// What goes at the head of the first user message, ending in a blank line.
    pub block: String,
    /// Bytes of the files' text that the cap left out (0 when nothing was cut).
    pub cut_bytes: usize,
}

/// Where to look, and how much to read.
#[derive(Debug, Clone)]
pub struct DocSearch<'a> {
    /// Lilypad's config directory (the person's own `AGENTS.md`), if there is one.
    pub user_dir: Option<&'a Path>,
    /// The directory the session works in.
    pub workdir: &'a Path,
    /// Names tried after `AGENTS.override.md` and `AGENTS.md`, in order.
    pub fallbacks: &'a [String],
    /// The cap on the files' text, in bytes.
    pub max_bytes: usize,
}

/// The repository root above `dir`: the nearest directory, `dir` included, holding `.git`;
/// `dir` itself when there is none.
pub fn repository_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// The directories from the repository root down to `workdir`, root first.
fn directories(workdir: &Path) -> Vec<PathBuf> {
    let root = repository_root(workdir);
    let mut dirs: Vec<PathBuf> = workdir
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The first of `names` that is a file in `dir`.
fn first_file(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

fn read(path: &Path) -> Result<String, PromptError> {
    std::fs::read_to_string(path).map_err(|source| PromptError::Read {
        what: "project instructions",
        path: path.to_path_buf(),
        source,
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Read the instructions `search` finds; `None` when no file has any text. A file that exists
/// but cannot be read is an error (a session must not start without instructions it was given).
pub fn gather(search: &DocSearch<'_>) -> Result<Option<ProjectDocs>, PromptError> {
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    if let Some(dir) = search.user_dir {
        if let Some(p) = first_file(dir, &[OVERRIDE_NAME, DOC_NAME]) {
            let label = format!("user:{}", file_name(&p));
            found.push((p, label));
        }
    }
    let root = repository_root(search.workdir);
    let mut names = vec![OVERRIDE_NAME, DOC_NAME];
    names.extend(search.fallbacks.iter().map(String::as_str));
    for dir in directories(search.workdir) {
        if let Some(p) = first_file(&dir, &names) {
            let label = p
                .strip_prefix(&root)
                .map(|r| r.display().to_string())
                .unwrap_or_else(|_| p.display().to_string());
            found.push((p, label));
        }
    }
    let mut files = Vec::new();
    let mut texts = Vec::new();
    for (path, label) in found {
        let text = read(&path)?;
        if text.trim().is_empty() {
            continue;
        }
        files.push(DocFile {
            sha256: sha256_hex(text.as_bytes()),
            path,
            label,
        });
        texts.push(text);
    }
    if files.is_empty() {
        return Ok(None);
    }
    let (block, cut_bytes) = join(&files, &texts, search.max_bytes);
    Ok(Some(ProjectDocs {
        files,
        block,
        cut_bytes,
    }))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The block: a heading per file over its text, at most `max_bytes` of the files' text (cut at
/// a character boundary), a line saying what was cut, and a rule before the message.
fn join(files: &[DocFile], texts: &[String], max_bytes: usize) -> (String, usize) {
    let mut out = String::from(
        "<project_instructions>\nInstructions for work in this repository, from its AGENTS.md files (the person's own first, then from the repository root down to the working directory; a later file is more specific).\n",
    );
    let mut left = max_bytes;
    let mut cut = 0;
    for (file, text) in files.iter().zip(texts) {
        let text = text.trim_end();
        let take = floor_boundary(text, left);
        cut += text.len() - take;
        left -= take;
        if take == 0 {
            continue;
        }
        out.push_str(&format!("\n## {}\n\n{}\n", file.label, &text[..take]));
    }
    if cut > 0 {
        out.push_str(&format!(
            "\n[The instructions were cut at {max_bytes} bytes: {cut} bytes were left out.]\n"
        ));
    }
    out.push_str("</project_instructions>\n\n");
    (out, cut)
}

/// The largest index `<= at` that is a character boundary of `s` (`s.len()` when `at` is past
/// the end).
fn floor_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn search<'a>(user: Option<&'a Path>, wd: &'a Path, fb: &'a [String]) -> DocSearch<'a> {
        DocSearch {
            user_dir: user,
            workdir: wd,
            fallbacks: fb,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    #[test]
    fn files_join_from_the_user_down_to_the_working_directory() {
        let t = tempfile::tempdir().unwrap();
        let (user, repo) = (t.path().join("cfg"), t.path().join("repo"));
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&user.join("AGENTS.md"), "be brief\n");
        write(&repo.join("AGENTS.md"), "use tabs\n");
        write(&repo.join("a/AGENTS.md"), "ignored: overridden\n");
        write(&repo.join("a/AGENTS.override.md"), "run make\n");
        write(&repo.join("a/b/CLAUDE.md"), "a fallback\n");
        write(&repo.join("other/AGENTS.md"), "not on the way\n");
        let fb = vec!["CLAUDE.md".to_string()];
        let wd = repo.join("a/b");
        let docs = gather(&search(Some(&user), &wd, &fb)).unwrap().unwrap();
        let labels: Vec<&str> = docs.files.iter().map(|f| f.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "user:AGENTS.md",
                "AGENTS.md",
                "a/AGENTS.override.md",
                "a/b/CLAUDE.md"
            ]
        );
        let at = |s: &str| docs.block.find(s).unwrap();
        assert!(at("be brief") < at("use tabs") && at("use tabs") < at("run make"));
        assert!(at("run make") < at("a fallback"));
        assert!(!docs.block.contains("overridden") && !docs.block.contains("not on the way"));
        assert_eq!(docs.cut_bytes, 0);
        assert_eq!(docs.files[1].sha256, sha256_hex(b"use tabs\n"));
        let none = gather(&search(None, &wd, &[])).unwrap().unwrap();
        assert_eq!(
            none.files.len(),
            2,
            "without fallbacks CLAUDE.md is not read"
        );
    }

    #[test]
    fn the_cap_cuts_and_says_so() {
        let t = tempfile::tempdir().unwrap();
        write(&t.path().join("AGENTS.md"), &"é".repeat(30));
        let mut s = search(None, t.path(), &[]);
        s.max_bytes = 15;
        let docs = gather(&s).unwrap().unwrap();
        assert!(docs.block.contains(&"é".repeat(7)));
        assert!(!docs.block.contains(&"é".repeat(8)));
        assert_eq!(docs.cut_bytes, 60 - 14);
        assert!(docs.block.contains("cut at 15 bytes"), "{}", docs.block);
    }

    #[test]
    fn no_files_or_empty_files_give_nothing() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(gather(&search(None, t.path(), &[])).unwrap(), None);
        write(&t.path().join("AGENTS.md"), "  \n");
        assert_eq!(gather(&search(None, t.path(), &[])).unwrap(), None);
    }
}
