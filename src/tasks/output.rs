//! What the miner writes: one SWE-bench instance per line ([`TaskLine`], the field names as
//! SWE-bench publishes them, `FAIL_TO_PASS` and `PASS_TO_PASS` as JSON-encoded strings, plus
//! `test_cmd`), one line per dropped candidate in the rejects file ([`RejectLine`]), and the
//! repository's name for both ([`RepoName`]: `owner/name` from the `origin` remote, else the
//! local path).
//!
//! Owns: the line formats and the repository's name. Does not own: deciding what is kept
//! (`super::validate`).

use super::git;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A mined task, as a line of a SWE-bench file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskLine {
    /// `owner__name-<short sha>`.
    pub instance_id: String,
    /// `owner/name`, else the repository's local path.
    pub repo: String,
    pub base_commit: String,
    /// The gold patch: the commit's changes outside the test files.
    pub patch: String,
    /// The commit's changes to test files.
    pub test_patch: String,
    pub problem_statement: String,
    /// A JSON list of test ids, encoded as a string (as SWE-bench publishes it).
    #[serde(rename = "FAIL_TO_PASS")]
    pub fail_to_pass: String,
    #[serde(rename = "PASS_TO_PASS")]
    pub pass_to_pass: String,
    /// The commit's date.
    pub created_at: String,
    /// The commit whose environment the tests ran in: the base commit.
    pub environment_setup_commit: String,
    /// The image the tests ran in.
    pub image_name: String,
    /// The pytest command the test ids are appended to.
    pub test_cmd: String,
}

impl TaskLine {
    /// The `FAIL_TO_PASS` ids.
    pub fn fail_to_pass(&self) -> Result<Vec<String>, serde_json::Error> {
        serde_json::from_str(&self.fail_to_pass)
    }

    /// The `PASS_TO_PASS` ids.
    pub fn pass_to_pass(&self) -> Result<Vec<String>, serde_json::Error> {
        serde_json::from_str(&self.pass_to_pass)
    }
}

/// A dropped candidate and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejectLine {
    /// The id the task would have had.
    pub instance_id: String,
    pub commit: String,
    pub base_commit: String,
    pub subject: String,
    /// One word: `tests_do_not_run`, `no_fail_to_pass`, `patch_does_not_apply`.
    pub reason: String,
    /// The reason in words (the run's last output lines, the tests concerned).
    pub detail: String,
}

/// How the repository is named in the tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoName {
    /// `owner/name`, or the absolute local path.
    pub repo: String,
    /// The prefix of instance ids: `owner__name`, or the folder's name.
    pub id_prefix: String,
}

impl RepoName {
    /// The name of the repository at `path`: from its `origin` remote when it has one.
    pub fn of(path: &Path) -> Self {
        let remote = git::text(path, &["remote", "get-url", "origin"]).ok();
        if let Some((owner, name)) = remote.as_deref().and_then(owner_name) {
            return Self {
                repo: format!("{owner}/{name}"),
                id_prefix: format!("{owner}__{name}"),
            };
        }
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let folder = abs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into());
        Self {
            repo: abs.display().to_string(),
            id_prefix: folder
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect(),
        }
    }

    /// The instance id of the task at commit `short`.
    pub fn instance_id(&self, short: &str) -> String {
        format!("{}-{short}", self.id_prefix)
    }
}

/// `owner` and `name` of a remote URL: `https://host/owner/name(.git)`,
/// `git@host:owner/name(.git)`, `ssh://git@host/owner/name`.
pub fn owner_name(url: &str) -> Option<(String, String)> {
    let url = url.trim().trim_end_matches('/');
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/')?.1,
        None => url.split_once(':')?.1,
    };
    let path = path.strip_suffix(".git").unwrap_or(path);
    let mut parts = path.rsplit('/');
    let name = parts.next().filter(|s| !s.is_empty())?;
    let owner = parts.next().filter(|s| !s.is_empty())?;
    Some((owner.to_string(), name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_name_owner_and_name() {
        for url in [
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets",
            "git@github.com:acme/widgets.git",
            "ssh://git@github.com/acme/widgets/",
        ] {
            assert_eq!(
                owner_name(url),
                Some(("acme".into(), "widgets".into())),
                "{url}"
            );
        }
        assert_eq!(owner_name("/srv/git/widgets"), None);
        assert_eq!(owner_name("https://host/widgets"), None);
    }

    #[test]
    fn a_line_has_swebench_field_names_and_string_lists() {
        let line = TaskLine {
            instance_id: "acme__widgets-abc1234".into(),
            repo: "acme/widgets".into(),
            base_commit: "b".into(),
            patch: "p".into(),
            test_patch: "t".into(),
            problem_statement: "s".into(),
            fail_to_pass: serde_json::to_string(&["tests/test_a.py::test_x"]).unwrap(),
            pass_to_pass: "[]".into(),
            created_at: "2026-01-01T00:00:00+00:00".into(),
            environment_setup_commit: "b".into(),
            image_name: "img".into(),
            test_cmd: "python3 -m pytest".into(),
        };
        let v: serde_json::Value = serde_json::to_value(&line).unwrap();
        assert_eq!(v["FAIL_TO_PASS"], "[\"tests/test_a.py::test_x\"]");
        assert_eq!(v["PASS_TO_PASS"], "[]");
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "instance_id",
                "repo",
                "base_commit",
                "patch",
                "test_patch",
                "problem_statement",
                "FAIL_TO_PASS",
                "PASS_TO_PASS",
                "created_at",
                "environment_setup_commit",
                "image_name",
                "test_cmd"
            ]
        );
        assert_eq!(line.fail_to_pass().unwrap(), ["tests/test_a.py::test_x"]);
    }
}
