//! The session's workspace: a copy of the user's repository that is a git checkout of its own,
//! the session patch, and a record of every turn that changed files.
//!
//! `create` copies the repository's files once ([`copy`]: what `git status` would show, `.git`
//! never) into the working copy the sandbox uses, and commits them as the **baseline** in a
//! private git directory (the *store*) that only this process uses. The working copy then gets
//! a fresh `.git` of its own holding that same baseline commit on branch `main`: no remotes, no
//! hooks (an empty hooks directory), no config but a neutral identity (`Lilypad
//! <lilypad@localhost>`, so the model's own commits work), and a fixed date, so the same files
//! always make the same baseline commit. `git status --porcelain` is empty at start, and `git
//! diff`, `git log`, `git stash`, `git commit` work in every sandbox as on any checkout.
//!
//! Trust: the model controls the in-sandbox `.git` (it may commit, stash, switch branches,
//! rewrite history or delete it), so nothing Lilypad relies on is read from it. The baseline
//! and the turn records live in the store, on the host, outside every sandbox (the Docker and
//! Kubernetes sandboxes never see it; the contained host sandbox hides the host's temporary
//! directory), and git runs there in a neutral environment ([`git`]). Everything the session
//! reports is computed from the workspace's *files*:
//! - [`Workspace::diff`]: the session patch is the diff from the baseline commit to the files as
//!   they are now (`git add -A` into a private index, then `git diff --binary`): new, deleted,
//!   binary and mode changes; ignored files excluded except those the baseline tracks (the
//!   repository's rules and [`byproducts`]: caches and environments commands leave); `.git`
//!   never. A commit, branch switch or reset by the model counts by what it leaves in the files.
//!   The one exception is a stash left in the workspace: the sandbox reads it (inside, where
//!   the model's git config can do no harm) and hands its diff to [`Workspace::diff_with`],
//!   which applies it onto the files first, so a forgotten `git stash` does not hide changes.
//!   A stash that no longer applies is left out (and logged).
//! - [`Workspace::record_turn`]: the files at the end of a turn are committed to
//!   `refs/lilypad/turns/<n>` in the store when they differ from the previous record.
//! - [`Workspace::restore_plan`]: what to delete and what to write (a tar) to bring the files
//!   back exactly to any turn's record; the sandbox applies it in its own way.
//! - [`Workspace::turn_patch`], [`Workspace::forget_after`], [`Workspace::seed_turn`]: a turn's
//!   record as a patch (the session log keeps one per recorded turn), dropping the records
//!   after a turn the session rewound to, and records made again from saved patches when a
//!   session is resumed or forked.
//!
//! Both directories are named after this process, and a new workspace removes those of dead
//! sessions ([`leftovers`]).
//!
//! The user's repository is only ever read; its `.git` is never copied, opened for writing, or
//! visible in a sandbox.
//!
//! The one other way to make a workspace is [`Workspace::adopt`] ([`in_place`]): a repository
//! copied out of an image for one session is taken as it is, ignored files and its own `.git`
//! included, and the baseline is what its git lists.

mod apply;
pub mod byproducts;
mod checkout;
mod copy;
pub mod git;
mod in_place;
mod leftovers;

pub use apply::{apply_to_repository, ApplyError};
pub use checkout::{Checkout, Files};
pub(crate) use copy::walker;
pub use copy::{copy_repo, copy_tree};
pub use in_place::scratch_dir;

use super::SandboxError;
use git::Git;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tempfile::TempDir;

/// The ref of the baseline commit in the store.
pub const BASELINE_REF: &str = "refs/lilypad/baseline";
/// Turn `n`'s record in the store is `{TURN_REF_PREFIX}{n}`.
pub const TURN_REF_PREFIX: &str = "refs/lilypad/turns/";

/// One recorded turn: its number, commit and tree in the store.
#[derive(Debug, Clone)]
struct Record {
    turn: u32,
    commit: String,
    tree: String,
}

/// The working copy (a git checkout of its own) and the private store of its baseline and turn
/// records; both deleted on drop.
#[derive(Debug)]
pub struct Workspace {
    origin: PathBuf,
    work: WorkDir,
    store: TempDir,
    baseline: Record,
    /// Directories that every ignore rule in force left out when the workspace was made, as
    /// the build that made an image's repository leaves them (`build/`, say): relative paths,
    /// for sandboxes that download the files ([`Self::ignored_at_start`]).
    ignored_at_start: Vec<PathBuf>,
    /// The working copy's `.git` is one Lilypad made (every copy; an adopted directory that
    /// had none), not the repository's own.
    made_git: bool,
    /// The turn records, in turn order; the lock also serialises use of the work index.
    turns: Mutex<Vec<Record>>,
}

/// Where the working copy lives: a copy made for the workspace (deleted with it), or a
/// directory taken as it is ([`Workspace::adopt`]; its owner deletes it).
#[derive(Debug)]
enum WorkDir {
    Own(TempDir),
    Adopted(PathBuf),
}

impl WorkDir {
    fn path(&self) -> &Path {
        match self {
            WorkDir::Own(t) => t.path(),
            WorkDir::Adopted(p) => p,
        }
    }
}

/// What [`Workspace::restore_plan`] says to do to the current files.
#[derive(Debug, Default)]
pub struct RestorePlan {
    /// The record restored (the baseline's commit for turn 0 or a turn before any record).
    pub commit: String,
    /// Paths (relative to the workspace root) to delete first.
    pub remove: Vec<PathBuf>,
    /// A tar of the files to write then (relative paths; files and symlinks only).
    pub archive: Vec<u8>,
}

impl RestorePlan {
    /// True when the files already are as recorded.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.archive.is_empty()
    }

    /// [`Self::remove`] as NUL-separated bytes (for `xargs -0`).
    pub fn remove_list(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.remove {
            out.extend_from_slice(p.as_os_str().as_bytes());
            out.push(0);
        }
        out
    }
}

fn temp_dir(prefix: &str) -> Result<TempDir, SandboxError> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| SandboxError::io("creating temporary directory", prefix, e))
}

/// Remove the workspaces of dead Lilypad processes in the temporary directory; returns how
/// many went.
pub fn sweep_leftovers() -> usize {
    leftovers::sweep(&std::env::temp_dir())
}

impl Workspace {
    /// Copy `repo` into a fresh working copy, commit it as the baseline in a fresh store, and
    /// give the copy its own `.git` (see the module docs).
    pub fn create(repo: &Path) -> Result<Self, SandboxError> {
        let origin = fs::canonicalize(repo)
            .map_err(|e| SandboxError::io("opening repository", repo.display().to_string(), e))?;
        if !origin.is_dir() {
            return Err(SandboxError::NotADirectory {
                path: origin.display().to_string(),
            });
        }
        let swept = leftovers::sweep(&std::env::temp_dir());
        if swept > 0 {
            tracing::info!(swept, "removed workspaces of dead Lilypad sessions");
        }
        let work = temp_dir(&leftovers::own_prefix(leftovers::WORK))?;
        let store = temp_dir(&leftovers::own_prefix(leftovers::STORE))?;
        copy_repo(&origin, work.path())?;
        let s = store.path();
        init_store(s)?;
        byproducts::write_exclude(s)?;
        // Everything copied is tracked, ignore rules or not: the copy holds only what git
        // lists (tracked files included, even those an ignore rule matches), so a change to
        // any of them is in the patch. New files the session makes follow the ignore rules.
        let index = s.join("lilypad-work.index");
        let g = Git::new(s).tree(work.path()).index(&index);
        g.run(&["add", "-A", "--force"])?;
        let tree = g.line(&["write-tree"])?;
        let commit = Git::new(s).line(&[
            "commit-tree",
            &tree,
            "-m",
            "Baseline: the repository as Lilypad copied it",
        ])?;
        Git::new(s).run(&["update-ref", BASELINE_REF, &commit])?;
        init_checkout(work.path(), s, &commit)?;
        Ok(Self {
            origin,
            work: WorkDir::Own(work),
            store,
            baseline: Record {
                turn: 0,
                commit,
                tree,
            },
            ignored_at_start: Vec::new(),
            made_git: true,
            turns: Mutex::new(Vec::new()),
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

    /// Directories (relative) that were wholly ignored when the workspace was made: what an
    /// image's build left in an adopted repository. They are never in the patch unless an
    /// ignore rule changes, so a sandbox that downloads its files may leave them behind.
    pub fn ignored_at_start(&self) -> &[PathBuf] {
        &self.ignored_at_start
    }

    /// True when the working copy's `.git` was made by Lilypad (a copy, or an adopted
    /// directory that had none), false when it is the adopted repository's own.
    pub fn made_git(&self) -> bool {
        self.made_git
    }

    /// The baseline commit (the same id in the store and in the in-sandbox `.git`).
    pub fn baseline(&self) -> &str {
        &self.baseline.commit
    }

    /// The recorded turns: (turn, ref name in the store), in turn order.
    pub fn turns(&self) -> Vec<(u32, String)> {
        self.lock()
            .iter()
            .map(|r| (r.turn, format!("{TURN_REF_PREFIX}{}", r.turn)))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Record>> {
        // A poisoned lock only means a panic elsewhere mid-update; the list is still valid.
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn git(&self) -> Git<'_> {
        Git::new(self.store.path())
    }

    /// The session patch: from the baseline to `current` (a directory holding the workspace's
    /// current files: the working copy itself, or a download of a container's).
    pub fn diff(&self, current: &Path) -> Result<Vec<u8>, SandboxError> {
        self.diff_with(current, None)
    }

    /// [`Self::diff`], with `stash` (the diff of a stash the model left in the workspace, read
    /// inside the sandbox; untrusted) applied onto the current files first when it applies.
    pub fn diff_with(&self, current: &Path, stash: Option<&[u8]>) -> Result<Vec<u8>, SandboxError> {
        let turns = self.lock();
        let mut tree = self.snapshot(current)?;
        if let Some(patch) = stash.filter(|p| !p.is_empty()) {
            match self.apply_onto(&tree, patch) {
                Ok(t) => tree = t,
                Err(e) => tracing::warn!("the stash left in the workspace does not apply: {e}"),
            }
        }
        drop(turns);
        self.git().run(&[
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            &self.baseline.tree,
            &tree,
        ])
    }

    /// Record the files of `current` as turn `turn` when they differ from the latest record
    /// before it (or the baseline). Records of this turn or later ones (left from before a
    /// restore) are dropped first. Returns the new record's ref name, or `None` when the files
    /// did not change.
    pub fn record_turn(&self, current: &Path, turn: u32) -> Result<Option<String>, SandboxError> {
        let mut turns = self.lock();
        let tree = self.snapshot(current)?;
        while turns.last().is_some_and(|r| r.turn >= turn) {
            if let Some(r) = turns.pop() {
                let name = format!("{TURN_REF_PREFIX}{}", r.turn);
                self.git().run(&["update-ref", "-d", &name])?;
            }
        }
        let prev = turns.last().unwrap_or(&self.baseline).clone();
        if prev.tree == tree {
            return Ok(None);
        }
        let message = format!("Turn {turn}");
        let commit =
            self.git()
                .line(&["commit-tree", &tree, "-p", &prev.commit, "-m", &message])?;
        let name = format!("{TURN_REF_PREFIX}{turn}");
        self.git().run(&["update-ref", &name, &commit])?;
        turns.push(Record { turn, commit, tree });
        Ok(Some(name))
    }

    /// What brings `current` back to the files as they were at the end of turn `turn` (the
    /// latest record at or before it; the baseline for 0 or when none is).
    pub fn restore_plan(&self, current: &Path, turn: u32) -> Result<RestorePlan, SandboxError> {
        let turns = self.lock();
        let target = turns
            .iter()
            .rev()
            .find(|r| r.turn <= turn)
            .unwrap_or(&self.baseline)
            .clone();
        let now = self.snapshot(current)?;
        drop(turns);
        let raw = self
            .git()
            .run(&["diff-tree", "-r", "-z", "--no-renames", &now, &target.tree])?;
        let mut plan = RestorePlan {
            commit: target.commit.clone(),
            ..Default::default()
        };
        let mut write = HashSet::new();
        let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            let meta = String::from_utf8_lossy(meta);
            let status = meta.rsplit(' ').next().unwrap_or("");
            let path = PathBuf::from(OsStr::from_bytes(path));
            if matches!(status, "D" | "T") {
                plan.remove.push(path.clone());
            }
            if matches!(status, "A" | "M" | "T") {
                write.insert(path);
            }
        }
        // A file to write where a directory is now: the directory goes too, once emptied of
        // what it held (its ignored files with it).
        let emptied: Vec<PathBuf> = write
            .iter()
            .filter(|w| plan.remove.iter().any(|r| r.starts_with(w) && r != *w))
            .cloned()
            .collect();
        plan.remove.extend(emptied);
        if !write.is_empty() {
            let full = self.git().run(&["archive", "--format=tar", &target.tree])?;
            plan.archive = filter_archive(&full, &write)
                .map_err(|e| SandboxError::io("archiving", format!("turn {}", target.turn), e))?;
        }
        Ok(plan)
    }

    /// The patch of turn `turn`'s record (the latest at or before it): the diff from the
    /// baseline to the files as they were at the end of that turn (empty for the baseline).
    pub fn turn_patch(&self, turn: u32) -> Result<Vec<u8>, SandboxError> {
        let target = self.record_at(turn);
        self.git().run(&[
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            &self.baseline.tree,
            &target.tree,
        ])
    }

    /// Drop the records of turns after `turn` (a rewind: the session's history goes on from
    /// there, so a later turn that changes nothing is not mistaken for an old record).
    pub fn forget_after(&self, turn: u32) -> Result<(), SandboxError> {
        let mut turns = self.lock();
        while turns.last().is_some_and(|r| r.turn > turn) {
            if let Some(r) = turns.pop() {
                let name = format!("{TURN_REF_PREFIX}{}", r.turn);
                self.git().run(&["update-ref", "-d", &name])?;
            }
        }
        Ok(())
    }

    /// Record turn `turn` from a saved patch (the diff from the baseline to that turn's
    /// files, as [`Self::turn_patch`] gives it) without touching the files: a resumed or
    /// forked session gets the turn records of the session it continues. Turns must come in
    /// increasing order; records of this turn or later are replaced.
    pub fn seed_turn(&self, turn: u32, patch: &[u8]) -> Result<(), SandboxError> {
        let tree = if patch.is_empty() {
            self.baseline.tree.clone()
        } else {
            self.apply_onto(&self.baseline.tree, patch)?
        };
        let mut turns = self.lock();
        while turns.last().is_some_and(|r| r.turn >= turn) {
            if let Some(r) = turns.pop() {
                let name = format!("{TURN_REF_PREFIX}{}", r.turn);
                self.git().run(&["update-ref", "-d", &name])?;
            }
        }
        let prev = turns.last().unwrap_or(&self.baseline).clone();
        if prev.tree == tree {
            return Ok(());
        }
        let message = format!("Turn {turn}");
        let commit =
            self.git()
                .line(&["commit-tree", &tree, "-p", &prev.commit, "-m", &message])?;
        self.git()
            .run(&["update-ref", &format!("{TURN_REF_PREFIX}{turn}"), &commit])?;
        turns.push(Record { turn, commit, tree });
        Ok(())
    }

    /// The latest record at or before `turn` (the baseline when none is).
    fn record_at(&self, turn: u32) -> Record {
        self.lock()
            .iter()
            .rev()
            .find(|r| r.turn <= turn)
            .unwrap_or(&self.baseline)
            .clone()
    }

    /// The tree of `current`'s files, as the patch sees them. The working copy keeps its own
    /// index in the store (so only changed files are hashed again); any other directory (a
    /// download) gets a fresh one. Call with the turns lock held.
    fn snapshot(&self, current: &Path) -> Result<String, SandboxError> {
        let s = self.store.path();
        let scratch;
        let index = if current == self.work.path() {
            s.join("lilypad-work.index")
        } else {
            scratch = tempfile::Builder::new()
                .prefix("index-")
                .tempdir_in(s)
                .map_err(|e| SandboxError::io("creating", "a temporary index", e))?;
            scratch.path().join("index")
        };
        let g = Git::new(s).tree(current).index(&index);
        // Start from the baseline's entries, so a tracked file an ignore rule matches stays
        // tracked; `--reset` (a one-tree merge that never refuses) keeps the stat data of
        // entries that still match, so only what changed is hashed again.
        g.run(&["read-tree", "--reset", &self.baseline.tree])?;
        g.run(&["add", "-A"])?;
        g.line(&["write-tree"])
    }

    /// `tree` with `patch` applied (in a scratch index: no file is written).
    fn apply_onto(&self, tree: &str, patch: &[u8]) -> Result<String, SandboxError> {
        let s = self.store.path();
        let scratch = tempfile::Builder::new()
            .prefix("index-")
            .tempdir_in(s)
            .map_err(|e| SandboxError::io("creating", "a temporary index", e))?;
        let index = scratch.path().join("index");
        let g = Git::new(s).index(&index);
        g.run(&["read-tree", tree])?;
        g.run_with(&["apply", "--cached", "--binary", "-"], Some(patch))?;
        g.line(&["write-tree"])
    }
}

/// Give the working copy its own `.git` holding the store's baseline on branch `main` (see the
/// module docs): no template (so no hooks, no sample files), no remote, a neutral identity.
///
/// The directory is written here rather than by `git init`, `git config` and a fetch (a dozen
/// git processes, a good share of a short test run's time in `tasks mine`): the store was made
/// a moment ago and holds only the baseline's objects, so they are copied as they are (copied,
/// not linked: the model may write to the copy), and the index the baseline was made with
/// (whose paths and file data are the working copy's) becomes the checkout's index.
fn init_checkout(work: &Path, store: &Path, commit: &str) -> Result<(), SandboxError> {
    let dot_git = work.join(".git");
    let io = |what: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |e| SandboxError::io(what, path, e)
    };
    for dir in [
        "refs/heads",
        "refs/tags",
        "hooks",
        "objects/info",
        "objects/pack",
    ] {
        let d = dot_git.join(dir);
        fs::create_dir_all(&d).map_err(io("creating", &d))?;
    }
    // The store's format ([`init_store`]): version 0, SHA-1.
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
         \tlogallrefupdates = true\n[user]\n\tname = {}\n\temail = {}\n",
        git::AUTHOR_NAME,
        git::AUTHOR_EMAIL
    );
    let files = [
        (dot_git.join("config"), config),
        (
            dot_git.join("HEAD"),
            format!("ref: refs/heads/{}\n", git::BRANCH),
        ),
        (
            dot_git.join("refs/heads").join(git::BRANCH),
            format!("{commit}\n"),
        ),
    ];
    for (path, text) in files {
        fs::write(&path, text).map_err(io("writing", &path))?;
    }
    copy_objects(&store.join("objects"), &dot_git.join("objects"))?;
    let (from, to) = (store.join("lilypad-work.index"), dot_git.join("index"));
    fs::copy(&from, &to).map_err(io("copying", &from))?;
    byproducts::write_exclude(&dot_git)
}

/// Make the empty bare repository the store is, as `git init --bare` would without its
/// template: format version 0 (SHA-1 object ids), no hooks, no sample files. Written here
/// rather than by git, one process fewer for every workspace, and the same format whatever
/// git's default becomes.
pub(super) fn init_store(store: &Path) -> Result<(), SandboxError> {
    for dir in ["refs/heads", "refs/tags", "objects/info", "objects/pack"] {
        let d = store.join(dir);
        fs::create_dir_all(&d)
            .map_err(|e| SandboxError::io("creating", d.display().to_string(), e))?;
    }
    let files = [
        ("HEAD", "ref: refs/heads/main\n"),
        (
            "config",
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
        ),
    ];
    for (name, text) in files {
        let path = store.join(name);
        fs::write(&path, text)
            .map_err(|e| SandboxError::io("writing", path.display().to_string(), e))?;
    }
    Ok(())
}

/// Copy the object database `from` (loose objects, and the packs `git add` writes for very
/// large files) into `to`, folder by folder.
fn copy_objects(from: &Path, to: &Path) -> Result<(), SandboxError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |e| SandboxError::io(what, path, e)
    };
    fs::create_dir_all(to).map_err(io("creating", to))?;
    for entry in fs::read_dir(from).map_err(io("reading", from))? {
        let entry = entry.map_err(io("reading", from))?;
        let (path, dest) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(io("reading", &path))?.is_dir() {
            copy_objects(&path, &dest)?;
        } else {
            fs::copy(&path, &dest).map_err(io("copying", &path))?;
        }
    }
    Ok(())
}

/// The entries of the tar `full` whose paths are in `keep` (files and symlinks).
fn filter_archive(full: &[u8], keep: &HashSet<PathBuf>) -> std::io::Result<Vec<u8>> {
    let mut out = tar::Builder::new(Vec::new());
    let mut archive = tar::Archive::new(full);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_symlink()) {
            continue;
        }
        let path = entry.path()?.into_owned();
        if !keep.contains(&path) {
            continue;
        }
        let mut header = entry.header().clone();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data)?;
        // Long names and link targets travel in extension records that `append` does not
        // repeat: write them through the builder's own path handling.
        if kind.is_symlink() {
            let target = entry
                .link_name()?
                .map(|t| t.into_owned())
                .unwrap_or_default();
            out.append_link(&mut header, &path, &target)?;
        } else {
            out.append_data(&mut header, &path, data.as_slice())?;
        }
    }
    out.into_inner()
}

#[cfg(test)]
mod tests;
