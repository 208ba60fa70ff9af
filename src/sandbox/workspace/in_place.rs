//! A workspace on a repository taken as it is: the directory an image documents as its
//! checkout (`/testbed` in SWE-bench's images, a Harbor task's `WORKDIR`), copied out of the
//! image for one session, becomes the working copy itself ([`Workspace::adopt`]). Nothing is
//! left out: the files the image's build made that git ignores (generated modules, compiled
//! extensions, `build/`, `*.egg-info/`) stay where the image's environment expects them, and
//! so does the image's own `.git`, so `HEAD` is the image's commit and `git log` and
//! `git diff HEAD` work as on the benchmark's checkout.
//!
//! The baseline in the store is what the image's git lists (tracked files, even those an ignore
//! rule matches, and untracked files no rule ignores, less [`super::byproducts`]), or outside
//! git the files no ignore rule matches, so the session patch is the agent's change from the
//! repository as the image left it, with the repository's ignore rules (its `.gitignore` files
//! and its `.git/info/exclude`) and the byproduct rules applied. The image's git directory is
//! read once, here, before any command of the model has run; after that only the store is
//! trusted, as in every workspace.
//!
//! Owns: [`Workspace::adopt`] and the name of the scratch directories adopted repositories are
//! copied into ([`scratch_dir`]: swept like every workspace when their process is gone).
//! Does not own: copying the directory out of the image (`crate::sandbox::image::extract`).

use super::git::Git;
use super::{
    byproducts, init_checkout, init_store, leftovers, Record, WorkDir, Workspace, BASELINE_REF,
};
use crate::sandbox::SandboxError;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tempfile::TempDir;

/// A fresh directory to copy a repository into before [`Workspace::adopt`] takes it, named as
/// this process's workspaces are (so a killed session's copy is swept).
pub fn scratch_dir() -> Result<TempDir, SandboxError> {
    super::temp_dir(&leftovers::own_prefix(leftovers::WORK))
}

impl Workspace {
    /// Take `dir` as the working copy as it is (see the module docs). The caller owns `dir`,
    /// keeps it for the workspace's life and deletes it after; the workspace writes into it
    /// (the session's files) and, when it has no `.git`, gives it one holding the baseline.
    pub fn adopt(dir: &Path) -> Result<Self, SandboxError> {
        let work = fs::canonicalize(dir)
            .map_err(|e| SandboxError::io("opening repository", dir.display().to_string(), e))?;
        if !work.is_dir() {
            return Err(SandboxError::NotADirectory {
                path: work.display().to_string(),
            });
        }
        let swept = leftovers::sweep(&std::env::temp_dir());
        if swept > 0 {
            tracing::info!(swept, "removed workspaces of dead Lilypad sessions");
        }
        let store = super::temp_dir(&leftovers::own_prefix(leftovers::STORE))?;
        let s = store.path();
        init_store(s)?;
        byproducts::write_exclude(s)?;
        let own_git = work.join(".git");
        let has_git = own_git.is_dir();
        if has_git {
            add_exclude(s, &own_git)?;
        }
        let index = s.join("lilypad-work.index");
        let g = Git::new(s).tree(&work).index(&index);
        match has_git.then(|| listed(&work)).transpose()? {
            Some(paths) if !paths.is_empty() => {
                g.run_with(
                    &[
                        "--literal-pathspecs",
                        "add",
                        "--force",
                        "--pathspec-from-file=-",
                        "--pathspec-file-nul",
                    ],
                    Some(&paths),
                )?;
            }
            Some(_) => {}
            None => {
                g.run(&["add", "-A"])?;
            }
        }
        let tree = g.line(&["write-tree"])?;
        let commit = Git::new(s).line(&[
            "commit-tree",
            &tree,
            "-m",
            "Baseline: the repository as the image left it",
        ])?;
        Git::new(s).run(&["update-ref", BASELINE_REF, &commit])?;
        if !has_git {
            init_checkout(&work, s, &commit)?;
        }
        let ignored_at_start = ignored_dirs(&g)?;
        Ok(Self {
            origin: work.clone(),
            work: WorkDir::Adopted(work),
            store,
            baseline: Record {
                turn: 0,
                commit,
                tree,
            },
            ignored_at_start,
            made_git: !has_git,
            turns: Mutex::new(Vec::new()),
        })
    }
}

/// The files the repository's own git lists in `work` (tracked, and untracked ones no rule
/// ignores, less the byproducts), as NUL-separated paths, those still present only.
fn listed(work: &Path) -> Result<Vec<u8>, SandboxError> {
    let git_dir = work.join(".git");
    let mut args = vec![
        "ls-files".to_string(),
        "-z".into(),
        "--cached".into(),
        "--others".into(),
        "--exclude-standard".into(),
    ];
    args.extend(byproducts::ls_files_args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let raw = Git::new(&git_dir).tree(work).run(&args)?;
    let mut out = Vec::with_capacity(raw.len());
    let mut last: Option<&[u8]> = None;
    for p in raw.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        // A conflicted file is listed once per stage; a tracked file deleted from the work
        // tree is listed but has nothing to add.
        if last == Some(p) || fs::symlink_metadata(work.join(OsStr::from_bytes(p))).is_err() {
            continue;
        }
        last = Some(p);
        out.extend_from_slice(p);
        out.push(0);
    }
    Ok(out)
}

/// Append the repository's own `info/exclude` to the store's, so that the patch leaves out
/// what the repository's git leaves out.
fn add_exclude(store: &Path, own_git: &Path) -> Result<(), SandboxError> {
    let Ok(theirs) = fs::read(own_git.join("info/exclude")) else {
        return Ok(());
    };
    let path = store.join("info/exclude");
    let mut ours =
        fs::read(&path).map_err(|e| SandboxError::io("reading", path.display().to_string(), e))?;
    ours.extend_from_slice(b"\n# The repository's own info/exclude.\n");
    ours.extend_from_slice(&theirs);
    fs::write(&path, ours).map_err(|e| SandboxError::io("writing", path.display().to_string(), e))
}

/// The directories of the working copy that the store's rules ignore as a whole.
fn ignored_dirs(g: &Git<'_>) -> Result<Vec<PathBuf>, SandboxError> {
    let raw = g.run(&[
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
    ])?;
    Ok(raw
        .split(|b| *b == 0)
        .filter_map(|p| p.strip_suffix(b"/"))
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect())
}
