//! The session's workspace: an isolated copy of the user's repository, and the patch of
//! everything the session changed in it.
//!
//! `create` copies the repository's files (what `git status` would show: tracked files, even
//! those an ignore rule matches, and untracked files that are not ignored; `.git` skipped, hidden
//! files kept, symlinks copied as symlinks, modes kept; outside git, the files no ignore rule
//! matches) twice: a
//! working copy the sandbox uses, and a read-only baseline. `diff` compares the baseline with
//! the workspace's current contents through a private git directory (`git add -A`, then
//! `git diff --cached --binary`), so new, deleted, binary and mode changes are all in the
//! patch and `git apply` accepts it on the original. `.git` is not copied on purpose: its
//! config may hold credentials and hooks, and the sandbox must not see host secrets.
//!
//! The user's repository is only ever read.

use super::{PatchError, SandboxError};
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// A working copy and a baseline copy of a repository, both deleted on drop.
#[derive(Debug)]
pub struct Workspace {
    origin: PathBuf,
    work: TempDir,
    baseline: TempDir,
}

impl Workspace {
    /// Copy `repo` into fresh temporary directories.
    pub fn create(repo: &Path) -> Result<Self, SandboxError> {
        let origin = fs::canonicalize(repo)
            .map_err(|e| SandboxError::io("opening repository", repo.display().to_string(), e))?;
        if !origin.is_dir() {
            return Err(SandboxError::NotADirectory {
                path: origin.display().to_string(),
            });
        }
        let work = temp_dir("lilypad-ws-")?;
        let baseline = temp_dir("lilypad-base-")?;
        copy_repo(&origin, work.path())?;
        copy_repo(&origin, baseline.path())?;
        Ok(Self {
            origin,
            work,
            baseline,
        })
    }

    /// The user's repository (canonical).
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    /// The working copy on the host.
    pub fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// The patch from the baseline to `current` (a directory holding the workspace's current
    /// contents: the working copy itself, or a download of a container's).
    pub fn diff(&self, current: &Path) -> Result<Vec<u8>, SandboxError> {
        patch_between(self.baseline.path(), current)
    }
}

fn temp_dir(prefix: &str) -> Result<TempDir, SandboxError> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| SandboxError::io("creating temporary directory", prefix, e))
}

/// Copy a repository's files into the existing directory `dst`: in a git work tree, what git
/// lists (tracked files, ignored or not, and untracked files that are not ignored), so a file
/// committed despite an ignore rule is not lost; elsewhere, [`copy_tree`].
pub fn copy_repo(src: &Path, dst: &Path) -> Result<(), SandboxError> {
    // Nothing listed (a directory an enclosing repository ignores, say a project inside a
    // home directory kept in git): copy by the ignore files instead of copying nothing.
    let Some(paths) = git_files(src).filter(|p| !p.is_empty()) else {
        return copy_tree(src, dst);
    };
    for rel in paths {
        let from = src.join(&rel);
        let target = dst.join(&rel);
        let show = || target.display().to_string();
        // Listed but gone (deleted in the work tree, not yet committed): nothing to copy.
        let Ok(meta) = fs::symlink_metadata(&from) else {
            continue;
        };
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| SandboxError::io("creating", show(), e))?;
        }
        if meta.file_type().is_symlink() {
            let link = fs::read_link(&from)
                .map_err(|e| SandboxError::io("reading link", from.display().to_string(), e))?;
            std::os::unix::fs::symlink(&link, &target)
                .map_err(|e| SandboxError::io("creating link", show(), e))?;
        } else if meta.is_dir() {
            // A submodule: its own files, by its own ignore rules.
            fs::create_dir_all(&target).map_err(|e| SandboxError::io("creating", show(), e))?;
            copy_tree(&from, &target)?;
        } else if meta.is_file() {
            fs::copy(&from, &target).map_err(|e| SandboxError::io("copying", show(), e))?;
        }
    }
    Ok(())
}

/// The files git lists below `dir` (relative to it), or `None` when `dir` is not in a git work
/// tree or git cannot be run.
fn git_files(dir: &Path) -> Option<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut paths: Vec<PathBuf> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect();
    // A file both in the index and changed appears once per stage in a conflict.
    paths.dedup();
    Some(paths)
}

/// A walk of `root` by the workspace's rules: hidden files included, `.gitignore` files (and
/// `.git/info/exclude`) below `root` applied with or without git, nothing above `root` or in
/// the user's global git config read, symlinks not followed. The caller adds its entry filter
/// (one that skips `.git`).
pub(crate) fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.hidden(false)
        .ignore(false)
        .parents(false)
        .require_git(false)
        .git_global(false)
        .follow_links(false);
    b
}

/// Copy the non-ignored files of `src` into the existing directory `dst`.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<(), SandboxError> {
    let walker = walker(src)
        .filter_entry(|e| e.file_name() != OsStr::new(".git"))
        .build();
    for entry in walker {
        let entry = entry.map_err(|source| {
            SandboxError::Patch(PatchError::Walk {
                path: src.display().to_string(),
                source,
            })
        })?;
        let rel = match entry.path().strip_prefix(src) {
            Ok(r) if !r.as_os_str().is_empty() => r.to_path_buf(),
            _ => continue,
        };
        let target = dst.join(&rel);
        let show = || target.display().to_string();
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            fs::create_dir_all(&target).map_err(|e| SandboxError::io("creating", show(), e))?;
        } else if ft.is_symlink() {
            let link = fs::read_link(entry.path()).map_err(|e| {
                SandboxError::io("reading link", entry.path().display().to_string(), e)
            })?;
            std::os::unix::fs::symlink(&link, &target)
                .map_err(|e| SandboxError::io("creating link", show(), e))?;
        } else if ft.is_file() {
            fs::copy(entry.path(), &target).map_err(|e| SandboxError::io("copying", show(), e))?;
        }
    }
    Ok(())
}

/// `git diff --binary` from tree `base` to tree `current`, through a throwaway git directory
/// (neither tree is touched; the user's git config is not read).
pub fn patch_between(base: &Path, current: &Path) -> Result<Vec<u8>, SandboxError> {
    let git_dir = temp_dir("lilypad-git-")?;
    let g = |tree: &Path, args: &[&str]| git(git_dir.path(), tree, args);
    g(base, &["init", "-q"])?;
    // Everything in the baseline is tracked, ignore rules or not: it holds only what the copy
    // took (tracked files included, even those an ignore rule matches), so a change to any of
    // them is in the patch. New files the session makes still follow the ignore rules.
    g(base, &["add", "-A", "--force"])?;
    g(
        base,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "--no-verify",
            "-m",
            "baseline",
        ],
    )?;
    // An index without stat data: `add -A` on the other tree must re-hash every file rather
    // than trust sizes and times that may happen to match.
    g(current, &["read-tree", "HEAD"])?;
    g(current, &["add", "-A"])?;
    g(
        current,
        &[
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "HEAD",
        ],
    )
}

fn git(git_dir: &Path, tree: &Path, args: &[&str]) -> Result<Vec<u8>, SandboxError> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(tree)
        .args([
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.fileMode=true",
            "-c",
            "core.symlinks=true",
        ])
        .args([
            "-c",
            "user.name=lilypad",
            "-c",
            "user.email=lilypad@localhost",
        ])
        .args([
            "-c",
            "commit.gpgSign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", git_dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|e| SandboxError::Patch(PatchError::GitSpawn(e)))?;
    if !out.status.success() {
        return Err(SandboxError::Patch(PatchError::Git {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(p: &Path, s: &[u8]) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, s).unwrap();
    }

    #[test]
    fn copy_keeps_tracked_files_that_an_ignore_rule_matches() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        let git = |args: &[&str]| {
            let st = Command::new("git")
                .arg("-C")
                .arg(r)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .status()
                .unwrap();
            assert!(st.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        write(&r.join(".gitignore"), b"*.log\nbuild/\n");
        write(&r.join("keep.log"), b"committed anyway\n");
        write(&r.join("src/a.rs"), b"fn a() {}\n");
        git(&["add", ".gitignore", "src/a.rs"]);
        git(&["add", "-f", "keep.log"]);
        git(&["commit", "-q", "-m", "one"]);
        write(&r.join("x.log"), b"ignored\n");
        write(&r.join("build/out.o"), b"obj");
        write(&r.join("new.txt"), b"untracked\n");
        let ws = Workspace::create(r).unwrap();
        let w = ws.work_dir();
        assert!(w.join("keep.log").exists(), "a tracked file was dropped");
        assert!(w.join("src/a.rs").exists() && w.join("new.txt").exists());
        assert!(!w.join("x.log").exists() && !w.join("build").exists());
        assert!(!w.join(".git").exists());
        assert_eq!(ws.diff(w).unwrap(), b"");
        // A change to the tracked, ignore-matching file is in the patch; a new ignored file
        // is not.
        write(&w.join("keep.log"), b"changed in the session\n");
        write(&w.join("new.log"), b"scratch\n");
        let patch = String::from_utf8(ws.diff(w).unwrap()).unwrap();
        assert!(patch.contains("+changed in the session"), "{patch}");
        assert!(!patch.contains("new.log"), "{patch}");
    }

    #[test]
    fn copy_skips_git_and_ignored_and_patch_applies() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        write(&r.join(".git/config"), b"[remote] url = https://secret@x\n");
        write(&r.join(".gitignore"), b"target/\n");
        write(&r.join("target/big.bin"), b"x");
        write(&r.join("src/a.txt"), b"one\ntwo\n");
        write(&r.join("gone.txt"), b"bye\n");
        write(&r.join(".hidden"), b"h\n");
        let ws = Workspace::create(r).unwrap();
        let w = ws.work_dir();
        assert!(!w.join(".git").exists());
        assert!(!w.join("target").exists());
        assert!(w.join(".hidden").exists());
        assert_eq!(ws.diff(w).unwrap(), b"");

        write(&w.join("src/a.txt"), b"one\nTWO\n");
        fs::remove_file(w.join("gone.txt")).unwrap();
        write(&w.join("new/bin.dat"), &[0, 1, 2, 255, 0]);
        write(&w.join("run.sh"), b"#!/bin/sh\n");
        fs::set_permissions(w.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        let patch = ws.diff(w).unwrap();
        let text = String::from_utf8_lossy(&patch);
        assert!(text.contains("GIT binary patch"), "{text}");
        assert!(text.contains("deleted file mode"), "{text}");
        assert!(text.contains("new file mode 100755"), "{text}");

        // The patch applies to the untouched original.
        let pf = tempfile::NamedTempFile::new().unwrap();
        fs::write(pf.path(), &patch).unwrap();
        let st = Command::new("git")
            .args(["apply", "--whitespace=nowarn"])
            .arg(pf.path())
            .current_dir(r)
            .status()
            .unwrap();
        assert!(st.success());
        assert_eq!(fs::read(r.join("src/a.txt")).unwrap(), b"one\nTWO\n");
        assert_eq!(fs::read(r.join("new/bin.dat")).unwrap(), [0, 1, 2, 255, 0]);
        assert!(!r.join("gone.txt").exists());
    }
}
