//! A repository's history as candidate tasks: its commits ([`commits`]), each sorted by what
//! it changes ([`classify`]) into a [`Candidate`] (code and tests changed: the parent is the
//! task's base, the test files' diff its `test_patch`, the rest its gold `patch`) or a
//! [`Skip`] saying why it is none (a merge, the first commit, documentation only, no tests, no
//! code, too many files).
//!
//! Owns: listing commits, the rules that make a commit a candidate, and the candidate's
//! patches. Does not own: a path's role (`super::files`) or running the tests
//! (`super::validate`).

use super::files::{is_test_module, role, FileRole};
use super::git::{self, GitError};
use std::path::Path;

/// One commit of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub sha: String,
    /// Git's shortest unambiguous abbreviation (7 characters at least).
    pub short: String,
    pub parents: Vec<String>,
    /// The committer date, strict ISO 8601.
    pub created_at: String,
    pub subject: String,
    pub body: String,
}

/// Why a commit is no candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    Merge,
    /// The first commit: nothing to start from.
    Root,
    DocsOnly,
    /// Code changed, no test file.
    NoTests,
    /// Test files (or documentation) changed, no code.
    NoCode,
    /// Test files changed, but no pytest module remains to run (only helpers or data).
    NoTestModule,
    /// More code files than `--max-files`.
    TooManyFiles,
}

impl Skip {
    /// The reason as one word, for summaries.
    pub fn code(self) -> &'static str {
        match self {
            Skip::Merge => "merge",
            Skip::Root => "root",
            Skip::DocsOnly => "docs_only",
            Skip::NoTests => "no_tests",
            Skip::NoCode => "no_code",
            Skip::NoTestModule => "no_test_module",
            Skip::TooManyFiles => "too_many_files",
        }
    }
}

/// A commit that may become a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub commit: Commit,
    /// The commit's parent: the task's `base_commit`.
    pub base: String,
    /// Changed code and documentation files (the gold patch's).
    pub code_files: Vec<String>,
    /// Changed test files (the test patch's).
    pub test_files: Vec<String>,
    /// The test patch's pytest modules that exist after the commit: what the tests run on.
    pub run_files: Vec<String>,
    pub patch: String,
    pub test_patch: String,
}

/// The commits reachable from `HEAD`, newest first, from `since` on when given (any date git
/// reads, e.g. `2024-01-31`).
pub fn commits(repo: &Path, since: Option<&str>) -> Result<Vec<Commit>, GitError> {
    // Fields end with US (0x1f), commits with RS (0x1e): neither occurs in a commit message.
    let mut args = vec![
        "log".to_string(),
        "--format=%H%x1f%h%x1f%P%x1f%cI%x1f%s%x1f%b%x1e".to_string(),
    ];
    if let Some(s) = since {
        args.push(format!("--since={s}"));
    }
    args.push("HEAD".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = git::text(repo, &args)?;
    Ok(out
        .split('\u{1e}')
        .filter_map(|rec| {
            let f: Vec<&str> = rec.trim_start_matches('\n').split('\u{1f}').collect();
            let [sha, short, parents, date, subject, body] = f.as_slice() else {
                return None;
            };
            Some(Commit {
                sha: sha.to_string(),
                short: short.to_string(),
                parents: parents.split_whitespace().map(str::to_string).collect(),
                created_at: date.to_string(),
                subject: subject.to_string(),
                body: body.trim().to_string(),
            })
        })
        .collect())
}

/// Sort `commit` into a candidate or a skip; `max_files` bounds its code files.
pub fn classify(
    repo: &Path,
    commit: &Commit,
    max_files: usize,
) -> Result<Result<Candidate, Skip>, GitError> {
    let base = match commit.parents.as_slice() {
        [] => return Ok(Err(Skip::Root)),
        [one] => one.clone(),
        _ => return Ok(Err(Skip::Merge)),
    };
    let changes = changed(repo, &base, &commit.sha)?;
    let (mut code, mut tests, mut docs, mut run) = (vec![], vec![], 0usize, vec![]);
    for (status, path) in changes {
        match role(&path) {
            FileRole::Test => {
                if status != 'D' && is_test_module(&path) {
                    run.push(path.clone());
                }
                tests.push(path);
            }
            FileRole::Docs => {
                docs += 1;
                code.push(path);
            }
            FileRole::Code => code.push(path),
        }
    }
    let code_only = code.len() - docs;
    let skip = match (code_only, tests.is_empty()) {
        (0, true) if docs > 0 => Some(Skip::DocsOnly),
        (0, _) => Some(Skip::NoCode),
        (_, true) => Some(Skip::NoTests),
        _ if run.is_empty() => Some(Skip::NoTestModule),
        (n, _) if n > max_files => Some(Skip::TooManyFiles),
        _ => None,
    };
    if let Some(s) = skip {
        return Ok(Err(s));
    }
    code.sort();
    tests.sort();
    run.sort();
    let patch = diff(repo, &base, &commit.sha, &code)?;
    let test_patch = diff(repo, &base, &commit.sha, &tests)?;
    Ok(Ok(Candidate {
        commit: commit.clone(),
        base,
        code_files: code,
        test_files: tests,
        run_files: run,
        patch,
        test_patch,
    }))
}

/// The files `to` changes from `from`, each with its status letter (`A`, `M`, `D`, ...).
fn changed(repo: &Path, from: &str, to: &str) -> Result<Vec<(char, String)>, GitError> {
    let out = git::text(
        repo,
        &["diff", "--name-status", "--no-renames", "-z", from, to],
    )?;
    let fields: Vec<&str> = out.split('\0').filter(|s| !s.is_empty()).collect();
    Ok(fields
        .chunks(2)
        .filter_map(|c| match c {
            [status, path] => Some((status.chars().next().unwrap_or('M'), path.to_string())),
            _ => None,
        })
        .collect())
}

/// The diff of `files` from `from` to `to`, as `git apply` takes it.
fn diff(repo: &Path, from: &str, to: &str, files: &[String]) -> Result<String, GitError> {
    let mut args = vec![
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        "--binary",
        from,
        to,
        "--",
    ];
    args.extend(files.iter().map(String::as_str));
    git::text(repo, &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// git as the test identity, away from the machine's config (signing, hooks).
    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn commit(dir: &Path, files: &[(&str, Option<&str>)], msg: &str) {
        for (path, text) in files {
            let p = dir.join(path);
            match text {
                Some(t) => {
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, t).unwrap();
                }
                None => std::fs::remove_file(&p).unwrap(),
            }
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", msg]);
    }

    #[test]
    fn commits_are_sorted_into_candidates_and_skips() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        commit(d, &[("pkg/a.py", Some("A = 1\n"))], "start");
        commit(
            d,
            &[
                ("pkg/a.py", Some("A = 2\n")),
                ("tests/test_a.py", Some("def test_a(): pass\n")),
                ("tests/data.json", Some("{}\n")),
                ("README.md", Some("# a\n")),
            ],
            "Fix A\n\nA was wrong.",
        );
        commit(d, &[("README.md", Some("# b\n"))], "docs");
        commit(d, &[("pkg/a.py", Some("A = 3\n"))], "code only");
        commit(d, &[("tests/helpers.py", Some("X = 1\n"))], "tests only");
        commit(
            d,
            &[
                ("pkg/a.py", Some("A = 4\n")),
                ("tests/test_a.py", None),
                ("tests/conftest.py", Some("\n")),
            ],
            "drop the test",
        );
        commit(
            d,
            &[
                ("pkg/b.py", Some("\n")),
                ("pkg/c.py", Some("\n")),
                ("tests/test_b.py", Some("\n")),
            ],
            "two files",
        );
        let all = commits(d, None).unwrap();
        let subjects: Vec<&str> = all.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "two files",
                "drop the test",
                "tests only",
                "code only",
                "docs",
                "Fix A",
                "start"
            ]
        );
        let sorted: Vec<Result<Candidate, Skip>> =
            all.iter().map(|c| classify(d, c, 1).unwrap()).collect();
        let skips: Vec<Option<Skip>> = sorted.iter().map(|r| r.as_ref().err().copied()).collect();
        assert_eq!(
            skips,
            [
                Some(Skip::TooManyFiles),
                Some(Skip::NoTestModule),
                Some(Skip::NoCode),
                Some(Skip::NoTests),
                Some(Skip::DocsOnly),
                None,
                Some(Skip::Root),
            ]
        );
        let c = sorted[5].as_ref().unwrap();
        assert_eq!(c.base, all[6].sha);
        assert_eq!(c.commit.body, "A was wrong.");
        assert_eq!(c.code_files, ["README.md", "pkg/a.py"]);
        assert_eq!(c.test_files, ["tests/data.json", "tests/test_a.py"]);
        assert_eq!(c.run_files, ["tests/test_a.py"]);
        assert!(
            c.patch.contains("+A = 2") && !c.patch.contains("test_a"),
            "{}",
            c.patch
        );
        assert!(c.test_patch.contains("+def test_a(): pass") && !c.test_patch.contains("A = 2"));
        assert!(c.commit.created_at.contains('T'), "{}", c.commit.created_at);
        assert!(c.commit.short.len() >= 7 && c.commit.sha.starts_with(&c.commit.short));
        // With room for two files the last commit is a candidate too.
        assert!(classify(d, &all[0], 2).unwrap().is_ok());
    }
}
