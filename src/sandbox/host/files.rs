//! The host sandbox's file operations, straight on the host's file system: resolving paths,
//! atomic writes, the workspace listing, and applying a restore plan. Also used where a
//! container's workspace is reachable on the host.
//!
//! Does not own: path policy (`crate::tools`), what to restore (`crate::sandbox::workspace`).

use crate::sandbox::workspace::RestorePlan;
use crate::sandbox::{EntryKind, Resolved, SandboxError};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// `realpath -m` over the existing prefix of `p`; see [`Resolved`].
pub(crate) fn resolve_local(p: &Path) -> Result<Resolved, SandboxError> {
    let mut existing = p.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => break,
        }
        if !existing.pop() {
            break;
        }
    }
    let show = p.display().to_string();
    let mut full =
        fs::canonicalize(&existing).map_err(|e| SandboxError::io("resolving", show, e))?;
    let kind = if !rest.is_empty() {
        EntryKind::Missing
    } else {
        match fs::metadata(&full) {
            Ok(m) if m.is_dir() => EntryKind::Dir,
            Ok(m) if m.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        }
    };
    for name in rest.iter().rev() {
        full.push(name);
    }
    Ok(Resolved {
        path: full.to_string_lossy().into_owned(),
        kind,
    })
}

/// Write through a temporary file in the same directory, then rename over the target (a
/// symlink at the target is replaced, never followed). Keeps an existing file's mode.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), SandboxError> {
    let show = || path.display().to_string();
    if path.is_dir() {
        return Err(SandboxError::IsADirectory { path: show() });
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(parent)
        .map_err(|e| SandboxError::io("creating directory for", show(), e))?;
    let mode = fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let mut tmp = tempfile::Builder::new()
        .prefix(".lilypad-write.")
        .tempfile_in(parent)
        .map_err(|e| SandboxError::io("writing", show(), e))?;
    tmp.write_all(data)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| SandboxError::io("writing", show(), e))?;
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode))
        .map_err(|e| SandboxError::io("setting mode of", show(), e))?;
    tmp.persist(path)
        .map_err(|e| SandboxError::io("writing", show(), e.error))?;
    Ok(())
}

/// Regular files below `dir`, relative to it, sorted; `.git` and ignored files skipped, with
/// the ignore files of `dir`'s ancestors up to `root` applied too.
pub(crate) fn list_local(root: &Path, dir: &Path) -> Result<Vec<String>, SandboxError> {
    let dir_owned: PathBuf = dir.to_path_buf();
    // A parallel walk (one thread per core, at most 8): directory reads dominate on large
    // trees, and each thread keeps its own list, merged once at the end.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let walker = crate::sandbox::workspace::walker(root)
        .threads(threads)
        .filter_entry(move |e| {
            let p = e.path();
            e.file_name() != ".git" && (p.starts_with(&dir_owned) || dir_owned.starts_with(p))
        })
        .build_parallel();
    let lists = std::sync::Mutex::new(Vec::<Vec<String>>::new());
    walker.visit(&mut ListBuilder { dir, lists: &lists });
    // A poisoned lock only means a walker thread panicked; its list is still whole.
    let lists = lists.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut files: Vec<String> = lists.into_iter().flatten().collect();
    files.sort();
    Ok(files)
}

/// Makes one [`FileList`] per walker thread.
struct ListBuilder<'a> {
    dir: &'a Path,
    lists: &'a std::sync::Mutex<Vec<Vec<String>>>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for ListBuilder<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(FileList {
            dir: self.dir,
            files: Vec::new(),
            lists: self.lists,
        })
    }
}

/// One walker thread's files, handed over when the thread is done.
struct FileList<'a> {
    dir: &'a Path,
    files: Vec<String>,
    lists: &'a std::sync::Mutex<Vec<Vec<String>>>,
}

impl ignore::ParallelVisitor for FileList<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        if let Ok(entry) = entry {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if let Ok(rel) = entry.path().strip_prefix(self.dir) {
                    self.files.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        ignore::WalkState::Continue
    }
}

impl Drop for FileList<'_> {
    fn drop(&mut self) {
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        lists.push(std::mem::take(&mut self.files));
    }
}

/// Apply `plan` to the workspace at `root`: delete, then unpack (safely: nothing is written
/// outside `root` or through a symlink, whatever the sandbox left there).
pub(crate) fn apply_restore(root: &Path, plan: &RestorePlan) -> Result<(), SandboxError> {
    let real_root = fs::canonicalize(root)
        .map_err(|e| SandboxError::io("resolving", root.display().to_string(), e))?;
    for rel in &plan.remove {
        let path = root.join(rel);
        // Only an entry whose directory is really inside the workspace (no symlink on the way).
        let inside = path
            .parent()
            .and_then(|p| fs::canonicalize(p).ok())
            .is_some_and(|p| p.starts_with(&real_root));
        if !inside {
            continue;
        }
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(_) => continue,
        }
        .map_err(|e| SandboxError::io("removing", path.display().to_string(), e))?;
    }
    if !plan.archive.is_empty() {
        let skipped = crate::sandbox::tarball::unpack(&plan.archive, root)?;
        if skipped > 0 {
            tracing::warn!(
                skipped,
                "restore: entries that would leave the workspace were skipped"
            );
        }
    }
    Ok(())
}
