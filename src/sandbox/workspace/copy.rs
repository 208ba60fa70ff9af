//! Copying the user's repository into the workspace: what `git status` would show (tracked
//! files, even those an ignore rule matches, and untracked files that are not ignored, less
//! the untracked caches of `super::byproducts`), or
//! outside git the files no ignore rule matches; hidden files kept, symlinks copied as
//! symlinks, modes kept, `.git` never copied.
//!
//! Owns: the copy and the walk rules shared with the host sandbox's listing ([`walker`]).
//! Does not own: the workspace's git history (`super`). The user's repository is only read.

use crate::sandbox::{PatchError, SandboxError};
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

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
        .args(super::byproducts::ls_files_args())
        // The user's repository is only read: no lock, no index refresh written back.
        .env("GIT_OPTIONAL_LOCKS", "0")
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
