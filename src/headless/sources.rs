//! Where a batch's tasks come from: a JSONL file, one task per line, in Lilypad's own form
//! (`instance_id`, `task`, optionally `repo` as a local path) or as SWE-bench publishes it
//! (`instance_id`, `problem_statement`, `repo` "owner/name", `base_commit`, optionally
//! `image`; other fields are ignored). Owns reading the file (instance ids must be unique and
//! usable as folder names) and putting a task's repository in place: a local path as it is, or
//! with `--repos-dir` a clone found at `DIR/owner/name` or `DIR/owner__name`, checked out at
//! `base_commit` into a temporary folder that becomes the sandbox's repository; and a task's
//! image from `--image-template` ([`image_for`]). Does not own running tasks (`super::batch`).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
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

/// One line of a tasks file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchTask {
    pub instance_id: String,
    /// The task text (`problem_statement` is accepted too, as in SWE-bench files).
    #[serde(alias = "problem_statement")]
    pub task: String,
    /// The repository: a local path (default: `--repo`), or "owner/name" found under
    /// `--repos-dir`.
    #[serde(default)]
    pub repo: Option<String>,
    /// The commit to check the repository out at (SWE-bench); needs `--repos-dir`.
    #[serde(default)]
    pub base_commit: Option<String>,
    /// The task's own sandbox image (SWE-bench files may name one).
    #[serde(default)]
    pub image: Option<String>,
    /// A Harbor task's folder and limits (tasks read from a folder of Harbor tasks).
    #[serde(skip)]
    pub harbor: Option<super::harbor::HarborTask>,
    /// A PatchEval task's repository name and instruction source (tasks read from PatchEval's
    /// dataset file).
    #[serde(skip)]
    pub patcheval: Option<super::patcheval::PatchEvalTask>,
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
        let t: BatchTask = serde_json::from_str(line).map_err(|source| SourceError::Line {
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
}

/// The local clone of `owner/name` under `dir`: `dir/owner/name`, else `dir/owner__name`.
pub fn find_clone(dir: &Path, repo: &str) -> Option<PathBuf> {
    [dir.join(repo), dir.join(repo.replace('/', "__"))]
        .into_iter()
        .find(|p| p.is_dir())
}

/// Put `task`'s repository in place: with `repos_dir`, its clone checked out at
/// `base_commit` (or its checked-out files when the task names no commit); otherwise its
/// `repo` path, else `default`.
pub fn task_repo(
    task: &BatchTask,
    default: &Path,
    repos_dir: Option<&Path>,
) -> Result<TaskRepo, SourceError> {
    let plain = |p: PathBuf| TaskRepo {
        path: p,
        _checkout: None,
    };
    let (Some(dir), Some(repo)) = (repos_dir, &task.repo) else {
        return Ok(plain(
            task.repo
                .as_ref()
                .map(PathBuf::from)
                .unwrap_or_else(|| default.to_path_buf()),
        ));
    };
    let clone = find_clone(dir, repo).ok_or_else(|| SourceError::NoClone {
        id: task.instance_id.clone(),
        repo: repo.clone(),
        dir: dir.to_path_buf(),
        flat: repo.replace('/', "__"),
    })?;
    let Some(commit) = &task.base_commit else {
        return Ok(plain(clone));
    };
    let fail = |why: String| SourceError::Checkout {
        id: task.instance_id.clone(),
        commit: commit.clone(),
        clone: clone.clone(),
        why,
    };
    let tmp = tempfile::Builder::new()
        .prefix("lilypad-task-")
        .tempdir()
        .map_err(|e| fail(e.to_string()))?;
    let target = tmp.path().join("repo");
    // A shared clone borrows the objects of the local one: nothing is copied but the files of
    // the commit, and the user's clone is only read.
    let git = |args: &[&str], cwd: Option<&Path>| -> Result<(), SourceError> {
        let mut c = Command::new("git");
        c.args(["-c", "advice.detachedHead=false"]).args(args);
        if let Some(d) = cwd {
            c.current_dir(d);
        }
        let out = c.output().map_err(|e| fail(format!("running git: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(fail(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ))
        }
    };
    let (clone_s, target_s) = (clone.to_string_lossy(), target.to_string_lossy());
    git(
        &[
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            &clone_s,
            &target_s,
        ],
        None,
    )?;
    git(&["checkout", "-q", "--detach", commit], Some(&target))?;
    Ok(TaskRepo {
        path: target,
        _checkout: Some(tmp),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read_and_repeats_are_refused() {
        let text = "{\"instance_id\": \"a\", \"task\": \"t\"}\n\n{\"instance_id\": \"o__n-1\", \"problem_statement\": \"p\", \"repo\": \"o/n\", \"base_commit\": \"abc\", \"FAIL_TO_PASS\": \"[]\"}\n";
        let tasks = parse_tasks(text, Path::new("f")).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[1].repo.as_deref(), Some("o/n"));
        assert_eq!(tasks[1].base_commit.as_deref(), Some("abc"));
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
