//! The shared Hugging Face cache, laid out as `huggingface_hub` lays it out:
//! `models--ORG--NAME/blobs/ETAG` holds each file once, `snapshots/COMMIT/PATH` is a relative
//! symlink to its blob, `refs/REVISION` holds the commit a branch or tag pointed at when last
//! seen. A download is written to `blobs/ETAG.incomplete` first. Owns the paths and the
//! listing; does not download.

use super::{select, HubError};
use std::path::{Path, PathBuf};

/// The cache's root directory (`HF_HUB_CACHE`).
#[derive(Debug, Clone)]
pub struct Cache {
    pub root: PathBuf,
}

/// One pulled model file found in the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct PulledModel {
    /// `ORG/NAME`.
    pub repo: String,
    /// The refs pointing at `commit` (`main`), or none when only the commit is there.
    pub refs: Vec<String>,
    pub commit: String,
    /// The file's path in the repository (the first part of a split model).
    pub file: String,
    /// The tag that picks `file` in its snapshot (`ORG/NAME:TAG` names it), if one does.
    pub tag: Option<String>,
    /// Bytes, all parts together.
    pub size: u64,
    /// The snapshot path to load.
    pub path: PathBuf,
}

impl PulledModel {
    /// The name that finds this file: `ORG/NAME:TAG`, or `ORG/NAME` when no tag picks it.
    pub fn name(&self) -> String {
        match &self.tag {
            Some(t) => format!("{}:{t}", self.repo),
            None => self.repo.clone(),
        }
    }
}

impl Cache {
    /// `models--ORG--NAME`, as `huggingface_hub`'s `repo_folder_name` writes it.
    pub fn repo_dir(&self, repo: &str) -> PathBuf {
        self.root.join(format!(
            "models--{}",
            repo.split('/').collect::<Vec<_>>().join("--")
        ))
    }

    pub fn blob(&self, repo: &str, etag: &str) -> PathBuf {
        self.repo_dir(repo).join("blobs").join(etag)
    }

    pub fn snapshot(&self, repo: &str, commit: &str, file: &str) -> PathBuf {
        self.repo_dir(repo)
            .join("snapshots")
            .join(commit)
            .join(file)
    }

    /// Hold the lock on one blob, `.locks/models--ORG--NAME/ETAG.lock`, the file
    /// `huggingface_hub` locks too, so that two downloads of one file (from two Lilypad
    /// processes or one and the Python client) wait for each other. Released when the
    /// returned file is dropped.
    pub fn lock(&self, repo: &str, etag: &str) -> Result<std::fs::File, HubError> {
        let dir = self
            .root
            .join(".locks")
            .join(self.repo_dir(repo).file_name().unwrap_or_default());
        std::fs::create_dir_all(&dir).map_err(HubError::io(&dir))?;
        let path = dir.join(format!("{etag}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(HubError::io(&path))?;
        file.lock().map_err(HubError::io(&path))?;
        Ok(file)
    }

    /// The commit `refs/REVISION` holds, if the revision was seen.
    pub fn read_ref(&self, repo: &str, revision: &str) -> Result<Option<String>, HubError> {
        let path = self.repo_dir(repo).join("refs").join(revision);
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(Some(s.trim().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HubError::io(path)(e)),
        }
    }

    /// Record that `revision` points at `commit` (nothing when the revision is the commit).
    pub fn write_ref(&self, repo: &str, revision: &str, commit: &str) -> Result<(), HubError> {
        if revision == commit {
            return Ok(());
        }
        let path = self.repo_dir(repo).join("refs").join(revision);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(HubError::io(dir))?;
        }
        std::fs::write(&path, commit).map_err(HubError::io(path))
    }

    /// Point `snapshots/COMMIT/FILE` at `blobs/ETAG` with a relative symlink, replacing what
    /// was there.
    pub fn link(&self, repo: &str, commit: &str, file: &str, etag: &str) -> Result<(), HubError> {
        let link = self.snapshot(repo, commit, file);
        let dir = link.parent().unwrap_or(&self.root).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(HubError::io(&dir))?;
        // From snapshots/COMMIT/a/b/FILE up to the repository folder, then into blobs.
        let depth = 2 + file.matches('/').count();
        let target = Path::new(&"../".repeat(depth)).join("blobs").join(etag);
        match std::fs::remove_file(&link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(HubError::io(&link)(e)),
        }
        symlink(&target, &link).map_err(HubError::io(&link))
    }

    /// The commits of `repo` in the cache, newest snapshot first.
    pub(crate) fn snapshots(&self, repo_dir: &Path) -> Result<Vec<String>, HubError> {
        let dir = repo_dir.join("snapshots");
        let mut out: Vec<(std::time::SystemTime, String)> = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(HubError::io(dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(HubError::io(&dir))?;
            let time = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            out.push((time, entry.file_name().to_string_lossy().into_owned()));
        }
        out.sort_by(|a, b| b.cmp(a));
        Ok(out.into_iter().map(|(_, c)| c).collect())
    }

    /// The refs of `repo` and the commits they hold.
    pub(crate) fn refs(&self, repo_dir: &Path) -> Result<Vec<(String, String)>, HubError> {
        let dir = repo_dir.join("refs");
        let mut files = Vec::new();
        walk(&dir, &dir, &mut files)?;
        let mut out = Vec::new();
        for name in files {
            let path = dir.join(&name);
            let commit = std::fs::read_to_string(&path).map_err(HubError::io(path))?;
            out.push((name, commit.trim().to_string()));
        }
        Ok(out)
    }

    /// The files (repository paths) present in one snapshot; a link whose blob is gone is
    /// not present.
    pub fn snapshot_files(&self, repo: &str, commit: &str) -> Result<Vec<String>, HubError> {
        let dir = self.repo_dir(repo).join("snapshots").join(commit);
        let mut files = Vec::new();
        walk(&dir, &dir, &mut files)?;
        files.retain(|f| dir.join(f).exists());
        Ok(files)
    }

    /// The commit to use for `repo` at `revision` from the cache alone: the ref, a commit
    /// given as the revision, or (for `main` with no ref, as when only a commit was pulled)
    /// the newest snapshot.
    pub fn commit_for(&self, repo: &str, revision: &str) -> Result<Option<String>, HubError> {
        if let Some(c) = self.read_ref(repo, revision)? {
            return Ok(Some(c));
        }
        let snapshots = self.snapshots(&self.repo_dir(repo))?;
        if snapshots.iter().any(|s| s == revision) {
            return Ok(Some(revision.to_string()));
        }
        Ok((revision == "main")
            .then(|| snapshots.into_iter().next())
            .flatten())
    }

    /// Every pulled GGUF model in the cache (one row per model file, split parts together).
    pub fn list(&self) -> Result<Vec<PulledModel>, HubError> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(HubError::io(&self.root)(e)),
        };
        let mut dirs: Vec<String> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(HubError::io(&self.root))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix("models--") {
                dirs.push(rest.replacen("--", "/", 1));
            }
        }
        dirs.sort();
        for repo in dirs {
            let repo_dir = self.repo_dir(&repo);
            let refs = self.refs(&repo_dir)?;
            for commit in self.snapshots(&repo_dir)? {
                let files = self.snapshot_files(&repo, &commit)?;
                let mut firsts: Vec<Vec<String>> = Vec::new();
                for f in &files {
                    if let Some(parts) = select::choose(std::slice::from_ref(f), None) {
                        // A first split part lists every part; keep it only if all are here.
                        firsts.push(parts);
                    }
                }
                for parts in firsts {
                    if !parts.iter().all(|p| files.contains(p)) {
                        continue;
                    }
                    let mut size = 0;
                    for p in &parts {
                        let path = self.snapshot(&repo, &commit, p);
                        size += std::fs::metadata(&path).map_err(HubError::io(path))?.len();
                    }
                    out.push(PulledModel {
                        repo: repo.clone(),
                        refs: refs
                            .iter()
                            .filter(|(_, c)| *c == commit)
                            .map(|(r, _)| r.clone())
                            .collect(),
                        path: self.snapshot(&repo, &commit, &parts[0]),
                        tag: select::tag_of(&files, &parts[0]),
                        file: parts[0].clone(),
                        commit: commit.clone(),
                        size,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Paths of the files under `dir`, relative to `root`, with `/` between parts. A missing
/// directory has none.
pub(crate) fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), HubError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(HubError::io(dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(HubError::io(dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(HubError::io(&path))?;
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
    out.sort();
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Where symlinks are not available the blob is copied, as `huggingface_hub` does.
#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    let from = link.parent().unwrap_or(Path::new(".")).join(target);
    std::fs::copy(from, link).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_huggingface_hub() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            root: dir.path().to_path_buf(),
        };
        assert_eq!(cache.repo_dir("org/m"), dir.path().join("models--org--m"));
        std::fs::create_dir_all(cache.repo_dir("org/m").join("blobs")).unwrap();
        std::fs::write(cache.blob("org/m", "e1"), b"abc").unwrap();
        cache.link("org/m", "c1", "sub/m-Q8_0.gguf", "e1").unwrap();
        cache.write_ref("org/m", "main", "c1").unwrap();
        let link = cache.snapshot("org/m", "c1", "sub/m-Q8_0.gguf");
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../../../blobs/e1")
        );
        assert_eq!(std::fs::read(&link).unwrap(), b"abc");
        assert_eq!(
            cache.commit_for("org/m", "main").unwrap().as_deref(),
            Some("c1")
        );
        let listed = cache.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].refs, ["main"]);
        assert_eq!(listed[0].size, 3);
    }
}
