//! The repository side of mutation: its files at the base commit (the Python modules to
//! mutate, the pytest modules to run), and a kept mutant written as a commit of the
//! repository ([`commit_mutant`]) that a task's `base_commit` names, with its gold patch (the
//! diff from the mutant back to the base).
//!
//! A mutant's commit has the base's tree with the one module changed and no parent, so an
//! agent checked out at it finds no diff to the fixed code in its history; it is kept from
//! git's garbage collection by the ref `refs/lilypad/mutants/<instance id>`. It is made with
//! git's plumbing and a scratch index: the repository's branches, index and files are not
//! touched.
//!
//! Owns: those git commands. Does not own: what a mutant is (`super::parse`).

use crate::tasks::files::{self, FileRole};
use crate::tasks::git::{self, GitError};
use std::path::Path;

/// Where kept mutants' refs live.
pub const REF_PREFIX: &str = "refs/lilypad/mutants/";

/// The full sha of `rev` in `repo`.
pub fn resolve(repo: &Path, rev: &str) -> Result<String, GitError> {
    let spec = format!("{rev}^{{commit}}");
    Ok(
        git::text(repo, &["rev-parse", "--verify", "--quiet", &spec])?
            .trim()
            .to_string(),
    )
}

/// The files of `commit`, `/`-separated.
pub fn files(repo: &Path, commit: &str) -> Result<Vec<String>, GitError> {
    let out = git::run(repo, &["ls-tree", "-r", "-z", "--name-only", commit], None)?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The modules to mutate among `files`: Python code, not tests, not documentation, not
/// `setup.py`.
pub fn sources(files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.ends_with(".py") && files::role(f) == FileRole::Code)
        .filter(|f| f.rsplit('/').next() != Some("setup.py"))
        .cloned()
        .collect()
}

/// The pytest modules among `files`.
pub fn test_modules(files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| files::is_test_module(f))
        .cloned()
        .collect()
}

/// The text of `path` at `commit`, `None` when it is not UTF-8.
pub fn read(repo: &Path, commit: &str, path: &str) -> Result<Option<String>, GitError> {
    let spec = format!("{commit}:{path}");
    let bytes = git::run(repo, &["cat-file", "blob", &spec], None)?;
    Ok(String::from_utf8(bytes).ok())
}

/// The committer date of `commit` (ISO 8601, as a task's `created_at`).
pub fn date(repo: &Path, commit: &str) -> Result<String, GitError> {
    Ok(git::text(repo, &["log", "-1", "--format=%cI", commit])?
        .trim()
        .to_string())
}

/// Write the mutant: `base`'s tree with `path` holding `text`, as a commit without a parent
/// dated as `base`, under the ref `REF_PREFIX + name`; its sha.
pub fn commit_mutant(
    repo: &Path,
    base: &str,
    path: &str,
    text: &str,
    name: &str,
) -> Result<String, GitError> {
    let scratch = tempfile::Builder::new()
        .prefix("lilypad-mutant-")
        .tempdir()
        .map_err(GitError::Spawn)?;
    let index = scratch.path().join("index");
    let index_s = index.to_string_lossy();
    let env = [("GIT_INDEX_FILE", index_s.as_ref())];
    let entry = git::text(repo, &["ls-tree", base, "--", path])?;
    let mode = entry
        .split_whitespace()
        .next()
        .unwrap_or("100644")
        .to_string();
    let blob = git::run(
        repo,
        &["hash-object", "-w", "--stdin"],
        Some(text.as_bytes()),
    )?;
    let blob = String::from_utf8_lossy(&blob).trim().to_string();
    git::run_env(repo, &["read-tree", base], None, &env)?;
    let info = format!("{mode},{blob},{path}");
    git::run_env(repo, &["update-index", "--cacheinfo", &info], None, &env)?;
    let tree = git::run_env(repo, &["write-tree"], None, &env)?;
    let tree = String::from_utf8_lossy(&tree).trim().to_string();
    let when = git::text(repo, &["log", "-1", "--format=%ct +0000", base])?;
    let when = when.trim();
    let who = [
        ("GIT_AUTHOR_NAME", "lilypad"),
        ("GIT_AUTHOR_EMAIL", "lilypad@localhost"),
        ("GIT_AUTHOR_DATE", when),
        ("GIT_COMMITTER_NAME", "lilypad"),
        ("GIT_COMMITTER_EMAIL", "lilypad@localhost"),
        ("GIT_COMMITTER_DATE", when),
    ];
    let commit = git::run_env(
        repo,
        &["commit-tree", "--no-gpg-sign", "-m", "Task base", &tree],
        None,
        &who,
    )?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    let reference = format!("{REF_PREFIX}{name}");
    git::run(repo, &["update-ref", &reference, &commit], None)?;
    Ok(commit)
}

/// The gold patch of a mutant: the diff of `path` from the mutant's commit back to `base`.
pub fn gold_patch(repo: &Path, mutant: &str, base: &str, path: &str) -> Result<String, GitError> {
    git::text(
        repo,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            mutant,
            base,
            "--",
            path,
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::mutate::ops::{self, Op};
    use crate::tasks::mutate::parse;
    use crate::tasks::validate::check_out;
    use std::collections::BTreeSet;

    const MODULE: &str = "def grade(score, bonus=0):\n    \"\"\"A letter.\"\"\"\n    total = score + bonus * 2\n    if total >= 90:\n        return \"A\"\n    elif total > 50:\n        return \"B\"\n    else:\n        return \"C\"\n";

    fn git(dir: &Path, args: &[&str]) -> String {
        let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@t"];
        all.extend_from_slice(args);
        git::text(dir, &all).unwrap()
    }

    #[test]
    fn every_operator_s_gold_patch_restores_the_module_exactly() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir_all(repo.join("pkg")).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("pkg/grade.py"), MODULE).unwrap();
        std::fs::write(repo.join("test_grade.py"), "from pkg.grade import grade\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "grade"]);
        let base = resolve(&repo, "HEAD").unwrap();
        let files = files(&repo, &base).unwrap();
        assert_eq!(sources(&files), ["pkg/grade.py"]);
        assert_eq!(test_modules(&files), ["test_grade.py"]);

        let mutants = parse::mutants("pkg/grade.py", MODULE).unwrap();
        let ops: BTreeSet<Op> = mutants.iter().map(|m| m.mutation.op).collect();
        assert_eq!(ops.len(), 6, "every operator: {ops:?}");
        for (i, m) in mutants.iter().enumerate() {
            let text = ops::apply(MODULE, &m.mutation);
            assert_ne!(text, MODULE);
            let name = format!("m{i}");
            let commit = commit_mutant(&repo, &base, &m.path, &text, &name).unwrap();
            // No parent, the ref names it, the module holds the mutant.
            assert_eq!(git(&repo, &["rev-list", "--count", &commit]).trim(), "1");
            assert_eq!(
                resolve(&repo, &format!("{REF_PREFIX}{name}")).unwrap(),
                commit
            );
            assert_eq!(read(&repo, &commit, "pkg/grade.py").unwrap().unwrap(), text);
            assert_eq!(
                read(&repo, &commit, "test_grade.py").unwrap().unwrap(),
                "from pkg.grade import grade\n"
            );
            // The gold patch, applied to a checkout of the mutant, gives back the original.
            let patch = gold_patch(&repo, &commit, &base, &m.path).unwrap();
            let to = tmp.path().join(format!("c{i}"));
            check_out(&repo, &to, &commit).unwrap();
            git::run(&to, &["apply", "-"], Some(patch.as_bytes())).unwrap();
            assert_eq!(
                std::fs::read_to_string(to.join("pkg/grade.py")).unwrap(),
                MODULE,
                "{}",
                m.describe(MODULE)
            );
        }
        // The repository's branch, index and files are as they were.
        assert_eq!(resolve(&repo, "HEAD").unwrap(), base);
        assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    }
}
