//! The messages sent from the message line, per repository, across sessions: one JSONL file
//! in the state directory (`{"repo": ..., "text": ...}` a line, every repository in one
//! file), read when the interface starts and appended to as messages are sent.
//! [`History`] is the pure part the App keeps (the entries and where Up and Down have got
//! to); [`HistoryFile`] is the I/O the runner does.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most entries read back for one repository (the newest).
pub const MAX_ENTRIES: usize = 1000;

/// The messages of one repository, oldest first, and the one Up and Down have reached.
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: Vec<String>,
    /// The entry shown (`None`: the person's own draft).
    at: Option<usize>,
    /// What was typed before Up first went back, given back after the newest entry.
    draft: String,
}

impl History {
    pub fn new(entries: Vec<String>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// A message sent: the newest entry (not twice in a row), and browsing starts again from
    /// the draft.
    pub fn push(&mut self, text: &str) {
        if self.entries.last().map(String::as_str) != Some(text) {
            self.entries.push(text.to_string());
        }
        self.at = None;
        self.draft.clear();
    }

    /// The entry before the one shown (`current` is the line's text, kept as the draft when
    /// browsing starts); `None` at the oldest.
    pub fn back(&mut self, current: &str) -> Option<&str> {
        let next = match self.at {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_string();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.at = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// The entry after the one shown, or the draft after the newest; `None` when not
    /// browsing.
    pub fn forward(&mut self) -> Option<String> {
        let i = self.at?;
        if i + 1 < self.entries.len() {
            self.at = Some(i + 1);
            self.entries.get(i + 1).cloned()
        } else {
            self.at = None;
            Some(std::mem::take(&mut self.draft))
        }
    }
}

/// A search of the messages sent (Ctrl-R): what is typed, the message found, and the message
/// line as it was, given back on Esc.
#[derive(Debug, Clone, Default)]
pub struct Recall {
    pub query: crate::tui::text_input::TextInput,
    /// The entry found (an index into the history's entries).
    pub found: Option<usize>,
    pub draft: String,
}

impl History {
    /// The newest entry before `before` (all: `entries().len()`) that holds `query`; a query
    /// without capitals matches either case, as the transcript's search does.
    pub fn find(&self, query: &str, before: usize) -> Option<usize> {
        let exact = query.chars().any(char::is_uppercase);
        let query_lc = query.to_lowercase();
        self.entries[..before.min(self.entries.len())]
            .iter()
            .rposition(|e| {
                if exact {
                    e.contains(query)
                } else {
                    e.to_lowercase().contains(&query_lc)
                }
            })
    }
}

/// One line of the history file.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    repo: String,
    text: String,
}

/// The history file and the repository whose lines are read and written.
#[derive(Debug, Clone)]
pub struct HistoryFile {
    pub path: PathBuf,
    repo: String,
}

impl HistoryFile {
    /// `path` is the file; `repo` the repository (its canonical path is the key, so a
    /// repository reached through another path or a link shares its history).
    pub fn new(path: PathBuf, repo: &Path) -> Self {
        let repo = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
        Self {
            path,
            repo: repo.to_string_lossy().into_owned(),
        }
    }

    /// The repository's messages, oldest first (the newest [`MAX_ENTRIES`]); a missing or
    /// unreadable file is an empty history, and a damaged line is skipped.
    pub fn load(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return Vec::new();
        };
        let mut out: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Record>(l).ok())
            .filter(|r| r.repo == self.repo)
            .map(|r| r.text)
            .collect();
        if out.len() > MAX_ENTRIES {
            out.drain(..out.len() - MAX_ENTRIES);
        }
        out
    }

    /// Append one message (one line, written at once, so sessions side by side do not
    /// interleave within a line).
    pub fn append(&self, text: &str) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let record = Record {
            repo: self.repo.clone(),
            text: text.to_string(),
        };
        let mut line = serde_json::to_string(&record).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        f.write_all(line.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_and_down_walk_the_entries_and_give_the_draft_back() {
        let mut h = History::new(vec!["one".into(), "two".into()]);
        assert_eq!(h.forward(), None, "not browsing yet");
        assert_eq!(h.back("draft"), Some("two"));
        assert_eq!(h.back("two"), Some("one"));
        assert_eq!(h.back("one"), None, "the oldest");
        assert_eq!(h.forward().as_deref(), Some("two"));
        assert_eq!(h.forward().as_deref(), Some("draft"));
        assert_eq!(h.forward(), None);
        h.push("three");
        h.push("three");
        assert_eq!(h.entries(), ["one", "two", "three"]);
        assert_eq!(h.find("t", 3), Some(2));
        assert_eq!(h.find("t", 2), Some(1));
        assert_eq!(h.find("T", 3), None, "a capital matches exactly");
        assert_eq!(h.find("", 3), Some(2));
    }

    #[test]
    fn the_file_keeps_each_repository_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/history.jsonl");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let fa = HistoryFile::new(path.clone(), &a);
        let fb = HistoryFile::new(path.clone(), &b);
        fa.append("first\nline two").unwrap();
        fb.append("elsewhere").unwrap();
        fa.append("second").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"not json\n")
            .unwrap();
        assert_eq!(fa.load(), ["first\nline two", "second"]);
        assert_eq!(HistoryFile::new(path, &a.join(".")).load().len(), 2);
        assert_eq!(fb.load(), ["elsewhere"]);
    }
}
