//! The tasks of a JSONL file, one task per line, in Lilypad's own form (`instance_id`, `task`,
//! optionally `repo` as a local path and `image`) or as SWE-bench publishes it (`instance_id`,
//! `problem_statement`, `repo` "owner/name", `base_commit`, optionally `image`; other fields
//! are ignored): a line with both `repo` and `base_commit` is a SWE-bench instance
//! ([`super::kind::TaskKind::SweBench`]), and one that also has `test_cmd`, `test_patch`,
//! `FAIL_TO_PASS` and `PASS_TO_PASS` (as `lilypad tasks mine` writes them) a mined task
//! verified by its tests ([`super::kind::TaskKind::Mined`], its image `image_name` when it has
//! no `image`); any other a Lilypad line.
//!
//! Owns reading the file (instance ids must be unique and usable as folder names) and both
//! line kinds' preparation ([`prepare_line`]): the repository a local path as it is, or with
//! `--repos-dir` a clone found at `DIR/owner/name` or `DIR/owner__name`, checked out at
//! `base_commit` into a temporary folder that becomes the sandbox's repository, or, for a task
//! with an image and `--image-workdir`, the image's own checkout; and a task's image from
//! `--image-template` ([`image_for`]). The lines have no verifier of their own (the run's
//! `--check` judges them). Does not own running tasks (`super::batch`).

use super::kind::{BatchTask, Place, PrepareError, TaskKind};
use super::mined::MinedTask;
pub use super::task_checkout::checkout_at;
use crate::config::Settings;
use crate::tasks::score::TaskTests;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SourceError {
    #[error("{file} line {line}: {source}")]
    Line {
        file: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{file} line {line}: instance_id {id:?} is repeated (first on line {first}); every task needs an id of its own (attempts are asked for with --attempts)")]
    Duplicate {
        file: PathBuf,
        line: usize,
        first: usize,
        id: String,
    },
    #[error("{file} line {line}: instance_id {id:?} cannot name a results folder: {why}")]
    BadId {
        file: PathBuf,
        line: usize,
        id: String,
        why: &'static str,
    },
    #[error("task {id}: no clone of {repo} in {dir} (looked for {dir}/{repo} and {dir}/{flat})")]
    NoClone {
        id: String,
        repo: String,
        dir: PathBuf,
        flat: String,
    },
    #[error("task {id}: {repo} is no local repository; give --repos-dir DIR with its clone at DIR/{repo} or DIR/{flat}")]
    NotLocal {
        id: String,
        repo: String,
        flat: String,
    },
    #[error("Harbor task {dir}: {why}")]
    Harbor { dir: PathBuf, why: String },
    #[error("PatchEval dataset {file}: {why}")]
    PatchEval { file: PathBuf, why: String },
    #[error("PatchEval: Leaf's instruction: {0}")]
    LeafInstruction(#[source] super::patcheval::PatchEvalError),
    #[error("task {id}: checking out {commit} of {clone}: {why}")]
    Checkout {
        id: String,
        commit: String,
        clone: PathBuf,
        why: String,
    },
}

/// One line of a tasks file, as it is written.
#[derive(Debug, Deserialize)]
struct Line {
    instance_id: String,
    /// The task text (`problem_statement` is accepted too, as in SWE-bench files).
    #[serde(alias = "problem_statement")]
    task: String,
    #[serde(default)]
    repo: Option<String>,
    #[serde(default)]
    base_commit: Option<String>,
    #[serde(default)]
    image: Option<String>,
    /// The mined tasks' fields (`lilypad tasks mine`).
    #[serde(default)]
    image_name: Option<String>,
    #[serde(default)]
    test_cmd: Option<String>,
    #[serde(default)]
    test_patch: Option<String>,
    #[serde(default, rename = "FAIL_TO_PASS")]
    fail_to_pass: Option<String>,
    #[serde(default, rename = "PASS_TO_PASS")]
    pass_to_pass: Option<String>,
}

impl Line {
    fn into_task(self) -> Result<BatchTask, serde_json::Error> {
        let mined = match (
            self.test_cmd,
            self.test_patch,
            &self.fail_to_pass,
            &self.pass_to_pass,
        ) {
            (Some(test_cmd), Some(test_patch), Some(f2p), Some(p2p)) => Some(TaskTests {
                test_cmd,
                test_patch,
                fail_to_pass: serde_json::from_str(f2p)?,
                pass_to_pass: serde_json::from_str(p2p)?,
            }),
            _ => None,
        };
        let kind = match (self.repo, self.base_commit, mined) {
            (Some(repo), Some(base_commit), Some(tests)) => TaskKind::Mined(MinedTask {
                line: SweBenchLine {
                    repo,
                    base_commit,
                    image: self.image.or(self.image_name),
                },
                tests,
            }),
            (Some(repo), Some(base_commit), None) => TaskKind::SweBench(SweBenchLine {
                repo,
                base_commit,
                image: self.image,
            }),
            (repo, _, _) => TaskKind::Lilypad(LilypadLine {
                repo,
                image: self.image,
            }),
        };
        Ok(BatchTask {
            instance_id: self.instance_id,
            task: self.task,
            kind,
        })
    }
}

/// A line in Lilypad's form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LilypadLine {
    /// The repository: a local path (default: `--repo`), or "owner/name" found under
    /// `--repos-dir`.
    pub repo: Option<String>,
    /// The task's own sandbox image.
    pub image: Option<String>,
}

/// A SWE-bench instance.
#[derive(Debug, Clone, PartialEq)]
pub struct SweBenchLine {
    /// "owner/name", found under `--repos-dir` (without it, a local path).
    pub repo: String,
    /// The commit to check the clone out at.
    pub base_commit: String,
    /// The task's own sandbox image (else `--image-template`'s).
    pub image: Option<String>,
}

/// Read a tasks file's text (`file` names it in errors).
pub fn parse_tasks(text: &str, file: &Path) -> Result<Vec<BatchTask>, SourceError> {
    let mut tasks = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let t = serde_json::from_str::<Line>(line)
            .and_then(Line::into_task)
            .map_err(|source| SourceError::Line {
                file: file.to_path_buf(),
                line: n,
                source,
            })?;
        if let Some(why) = super::attempts::bad_instance_id(&t.instance_id) {
            return Err(SourceError::BadId {
                file: file.to_path_buf(),
                line: n,
                id: t.instance_id,
                why,
            });
        }
        if let Some(&first) = seen.get(&t.instance_id) {
            return Err(SourceError::Duplicate {
                file: file.to_path_buf(),
                line: n,
                first,
                id: t.instance_id,
            });
        }
        seen.insert(t.instance_id.clone(), n);
        tasks.push(t);
    }
    Ok(tasks)
}

/// The image of task `instance_id` from `template`: `{instance}` is replaced by the id as
/// SWE-bench's image names write it (lowercase, `__` written `_1776_`), `{instance_id}` by the
/// id as it is; e.g. `swebench/sweb.eval.x86_64.{instance}:latest`.
pub fn image_for(template: &str, instance_id: &str) -> String {
    let swebench = instance_id.replace("__", "_1776_").to_lowercase();
    template
        .replace("{instance_id}", instance_id)
        .replace("{instance}", &swebench)
}

/// A task's repository, ready for a sandbox; a checkout is removed when this is dropped.
#[derive(Debug)]
pub struct TaskRepo {
    pub path: PathBuf,
    _checkout: Option<tempfile::TempDir>,
}

impl TaskRepo {
    /// A repository at `path` inside `dir`, removed with it when this is dropped.
    pub fn in_temp(path: PathBuf, dir: tempfile::TempDir) -> Self {
        Self {
            path,
            _checkout: Some(dir),
        }
    }

    /// The repository at `path`, a folder inside this one's, removed with it.
    pub fn within(self, path: PathBuf) -> Self {
        Self { path, ..self }
    }
}

/// The local clone of `owner/name` under `dir`: `dir/owner/name`, else `dir/owner__name`.
pub fn find_clone(dir: &Path, repo: &str) -> Option<PathBuf> {
    [dir.join(repo), dir.join(repo.replace('/', "__"))]
        .into_iter()
        .find(|p| p.is_dir())
}

/// Prepare an attempt at a line (see the module docs): `image` is the task's image as the
/// sandbox runs it, if it names one; `settings` get it, and the image's checkout is worked on
/// as it is.
pub async fn prepare_line(
    id: &str,
    repo: Option<&str>,
    base_commit: Option<&str>,
    image: Option<&str>,
    place: &Place<'_>,
    settings: &mut Settings,
) -> Result<TaskRepo, PrepareError> {
    if let Some(named) = image {
        let s = &mut settings.sandbox;
        // Already the reference the sandbox runs (under `--image-registry`).
        s.image = Some(named.to_string());
        s.image_registry = None;
        s.dockerfile = None;
        s.devcontainer = false;
        if let Some(w) = place.image_workdir {
            s.workdir = Some(w.to_string());
        }
    }
    if let (Some(image), Some(workdir)) = (image, place.image_workdir) {
        let repo = super::kind::extract(image, workdir, "the image's repository").await?;
        settings.sandbox.repo_as_is = true;
        return Ok(repo);
    }
    let (id, repo, commit) = (
        id.to_string(),
        repo.map(str::to_string),
        base_commit.map(str::to_string),
    );
    let (default, dir) = (
        place.default_repo.to_path_buf(),
        place.repos_dir.map(Path::to_path_buf),
    );
    let repo = tokio::task::spawn_blocking(move || {
        line_repo(
            &id,
            repo.as_deref(),
            commit.as_deref(),
            &default,
            dir.as_deref(),
        )
    })
    .await??;
    Ok(repo)
}

/// Put a line's repository in place: with `repos_dir`, the clone of `repo` checked out at
/// `base_commit` (or its checked-out files when the task names no commit); otherwise `repo` as
/// a path, else `default`.
pub fn line_repo(
    id: &str,
    repo: Option<&str>,
    base_commit: Option<&str>,
    default: &Path,
    repos_dir: Option<&Path>,
) -> Result<TaskRepo, SourceError> {
    let plain = |p: PathBuf| TaskRepo {
        path: p,
        _checkout: None,
    };
    let (Some(dir), Some(repo)) = (repos_dir, repo) else {
        return Ok(plain(
            repo.map(PathBuf::from)
                .unwrap_or_else(|| default.to_path_buf()),
        ));
    };
    let clone = find_clone(dir, repo).ok_or_else(|| SourceError::NoClone {
        id: id.to_string(),
        repo: repo.to_string(),
        dir: dir.to_path_buf(),
        flat: repo.replace('/', "__"),
    })?;
    let Some(commit) = base_commit else {
        return Ok(plain(clone));
    };
    checkout_at(id, &clone, commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read_and_repeats_are_refused() {
        let text = "{\"instance_id\": \"a\", \"task\": \"t\"}\n\n{\"instance_id\": \"o__n-1\", \"problem_statement\": \"p\", \"repo\": \"o/n\", \"base_commit\": \"abc\", \"FAIL_TO_PASS\": \"[]\"}\n";
        let tasks = parse_tasks(text, Path::new("f")).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].kind, TaskKind::Lilypad(LilypadLine::default()));
        assert_eq!(
            tasks[1].kind,
            TaskKind::SweBench(SweBenchLine {
                repo: "o/n".into(),
                base_commit: "abc".into(),
                image: None
            })
        );
        let dup = "{\"instance_id\": \"a\", \"task\": \"t\"}\n{\"instance_id\": \"a\", \"task\": \"u\"}\n";
        let e = parse_tasks(dup, Path::new("f")).unwrap_err().to_string();
        assert!(
            e.contains("line 2") && e.contains("repeated") && e.contains("line 1"),
            "{e}"
        );
        let bad = "{\"instance_id\": \"a/b\", \"task\": \"t\"}\n";
        assert!(parse_tasks(bad, Path::new("f")).is_err());
    }

    #[test]
    fn a_mined_line_is_a_task_with_its_tests() {
        let line = serde_json::json!({
            "instance_id": "acme__calc-abc1234", "repo": "/src/calc", "base_commit": "b0",
            "patch": "p", "test_patch": "diff --git a/tests/test_a.py b/tests/test_a.py\n",
            "problem_statement": "Fix sub", "FAIL_TO_PASS": "[\"tests/test_a.py::test_sub\"]",
            "PASS_TO_PASS": "[]", "created_at": "2026-01-01T00:00:00+00:00",
            "environment_setup_commit": "b0", "image_name": "py:1", "test_cmd": "python3 -m pytest"
        });
        let tasks = parse_tasks(&line.to_string(), Path::new("f")).unwrap();
        assert_eq!(tasks[0].task, "Fix sub");
        let TaskKind::Mined(m) = &tasks[0].kind else {
            panic!("not a mined task: {:?}", tasks[0].kind)
        };
        assert_eq!(m.line.image.as_deref(), Some("py:1"));
        assert_eq!(m.line.base_commit, "b0");
        assert_eq!(m.tests.fail_to_pass, ["tests/test_a.py::test_sub"]);
        assert!(m.tests.pass_to_pass.is_empty());
        assert_eq!(m.tests.test_cmd, "python3 -m pytest");
        // Lists that are not JSON make the line an error, not a task without tests.
        let bad = line.to_string().replace("[\\\"tests", "[tests");
        assert!(parse_tasks(&bad, Path::new("f")).is_err(), "{bad}");
    }

    #[test]
    fn image_templates_write_ids_as_swebench_does() {
        assert_eq!(
            image_for(
                "swebench/sweb.eval.x86_64.{instance}:latest",
                "django__django-11099"
            ),
            "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
        );
        assert_eq!(
            image_for("r/{instance}:{instance_id}", "Astropy__X"),
            "r/astropy_1776_x:Astropy__X"
        );
        assert_eq!(image_for("plain:1", "a__b"), "plain:1");
    }

    #[test]
    fn clones_are_found_in_either_layout() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("o__n")).unwrap();
        assert_eq!(find_clone(dir.path(), "o/n"), Some(dir.path().join("o__n")));
        std::fs::create_dir_all(dir.path().join("o/n")).unwrap();
        assert_eq!(find_clone(dir.path(), "o/n"), Some(dir.path().join("o/n")));
        assert_eq!(find_clone(dir.path(), "x/y"), None);
    }
}
