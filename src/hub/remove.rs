//! Removing a pulled model from the cache: its snapshot links, then the blobs that no link
//! left in the repository points at, then the refs whose commit has no snapshot left; a
//! repository with no snapshot left goes entirely (partial downloads included). A blob that
//! another snapshot still links to stays, so what `huggingface_hub` or llama.cpp pulled of
//! the same repository keeps working. The conversions of a checkpoint repository in Lilypad's
//! store go with it.

use super::local::{cache_of, store_of};
use super::{select, Cache, HubError, HubSettings, ModelName};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a removal took out of the cache.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Removed {
    /// `COMMIT/PATH` of each snapshot link removed.
    pub files: Vec<String>,
    /// Blobs deleted (partial downloads included).
    pub blobs: usize,
    /// Refs removed (`main`).
    pub refs: Vec<String>,
    /// Bytes freed on disk.
    pub bytes: u64,
    /// Whether the repository's folder is gone.
    pub repo_gone: bool,
}

impl Cache {
    /// Remove `name` from the cache: with a tag, the file (every split part) the tag picks in
    /// each snapshot; without one, every file of every snapshot. Nothing matching removes
    /// nothing.
    pub fn remove(&self, name: &ModelName) -> Result<Removed, HubError> {
        let repo_dir = self.repo_dir(&name.repo);
        let mut targets: Vec<(String, String)> = Vec::new();
        for commit in self.snapshots(&repo_dir)? {
            let files = self.snapshot_files(&name.repo, &commit)?;
            let chosen = match &name.tag {
                None => files,
                Some(t) => select::choose(&files, Some(t))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|p| files.contains(p))
                    .collect(),
            };
            targets.extend(chosen.into_iter().map(|f| (commit.clone(), f)));
        }
        if targets.is_empty() {
            return Ok(Removed::default());
        }
        let mut out = Removed::default();
        let mut dropped: BTreeSet<String> = BTreeSet::new();
        for (commit, file) in &targets {
            let link = self.snapshot(&name.repo, commit, file);
            if let Some(blob) = blob_of(&link) {
                dropped.insert(blob);
            }
            std::fs::remove_file(&link).map_err(HubError::io(&link))?;
            out.files.push(format!("{commit}/{file}"));
        }
        let snapshots = repo_dir.join("snapshots");
        prune_empty(&snapshots)?;
        let left = self.snapshots(&repo_dir)?;
        if left.is_empty() {
            out.bytes += size_of_tree(&repo_dir.join("blobs"))?;
            out.blobs += count(&repo_dir.join("blobs"))?;
            out.refs = self.refs(&repo_dir)?.into_iter().map(|(r, _)| r).collect();
            std::fs::remove_dir_all(&repo_dir).map_err(HubError::io(&repo_dir))?;
            out.repo_gone = true;
            return Ok(out);
        }
        let mut kept: BTreeSet<String> = BTreeSet::new();
        for commit in &left {
            let dir = snapshots.join(commit);
            let mut files = Vec::new();
            super::cache::walk(&dir, &dir, &mut files)?;
            kept.extend(files.iter().filter_map(|f| blob_of(&dir.join(f))));
        }
        for blob in dropped.difference(&kept) {
            let path = self.blob(&name.repo, blob);
            match std::fs::metadata(&path) {
                Ok(m) => {
                    std::fs::remove_file(&path).map_err(HubError::io(&path))?;
                    out.bytes += m.len();
                    out.blobs += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HubError::io(path)(e)),
            }
        }
        for (r, commit) in self.refs(&repo_dir)? {
            if !left.contains(&commit) {
                let path = repo_dir.join("refs").join(&r);
                std::fs::remove_file(&path).map_err(HubError::io(path))?;
                out.refs.push(r);
            }
        }
        Ok(out)
    }
}

/// Remove `name` from the cache ([`Cache::remove`]) and its conversions from the store (with
/// a tag, the type it picks; without, every one). Nothing matching in either is an error that
/// names what is pulled.
pub fn remove(settings: &HubSettings, name: &ModelName) -> Result<Removed, HubError> {
    let cache = cache_of(settings)?;
    let mut out = cache.remove(name)?;
    if let Some(store) = store_of(settings) {
        let dir = store.repo_dir(&name.repo);
        let mut commits = Vec::new();
        super::cache::walk(&dir, &dir, &mut commits)?;
        for rel in commits {
            let path = dir.join(&rel);
            let file = rel.rsplit('/').next().unwrap_or(&rel).to_string();
            let picked = match &name.tag {
                None => true,
                Some(t) => select::choose(std::slice::from_ref(&file), Some(t)).is_some(),
            };
            if picked {
                let len = std::fs::symlink_metadata(&path)
                    .map_err(HubError::io(&path))?
                    .len();
                std::fs::remove_file(&path).map_err(HubError::io(&path))?;
                out.bytes += len;
                out.files.push(format!("converted {rel}"));
            }
        }
        prune_empty(&dir)?;
        if name.tag.is_none() {
            match std::fs::remove_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HubError::io(&dir)(e)),
            }
        }
    }
    if out.files.is_empty() {
        return Err(not_pulled(settings, name));
    }
    Ok(out)
}

/// The error for a name with nothing to remove: what is pulled instead.
fn not_pulled(settings: &HubSettings, name: &ModelName) -> HubError {
    let held = match super::only(settings) {
        Ok(super::Only::Nothing) => "nothing is pulled".to_string(),
        Ok(super::Only::One(m)) => format!("pulled: {}", m.name()),
        Ok(super::Only::Several(all)) => {
            let names: BTreeSet<String> = all.iter().map(|m| m.name()).collect();
            format!(
                "pulled: {}",
                names.into_iter().collect::<Vec<_>>().join(", ")
            )
        }
        Err(e) => format!("the cache cannot be read: {e}"),
    };
    HubError::NotPulled {
        name: name.to_string(),
        why: Some(held),
    }
}

/// The blob a snapshot link points at (its file name under `blobs/`); `None` for a file that
/// is no link (a copy, where symlinks are not available).
fn blob_of(link: &Path) -> Option<String> {
    let target = std::fs::read_link(link).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// Remove the empty folders under `dir` (not `dir` itself).
fn prune_empty(dir: &Path) -> Result<(), HubError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(HubError::io(dir)(e)),
    };
    for entry in entries {
        let path: PathBuf = entry.map_err(HubError::io(dir))?.path();
        if path.is_dir() && !path.is_symlink() {
            prune_empty(&path)?;
            let empty = std::fs::read_dir(&path)
                .map_err(HubError::io(&path))?
                .next()
                .is_none();
            if empty {
                std::fs::remove_dir(&path).map_err(HubError::io(&path))?;
            }
        }
    }
    Ok(())
}

/// Bytes of the plain files in `dir` (not following links).
fn size_of_tree(dir: &Path) -> Result<u64, HubError> {
    let mut files = Vec::new();
    super::cache::walk(dir, dir, &mut files)?;
    let mut total = 0;
    for f in files {
        let path = dir.join(f);
        total += std::fs::symlink_metadata(&path)
            .map_err(HubError::io(&path))?
            .len();
    }
    Ok(total)
}

fn count(dir: &Path) -> Result<usize, HubError> {
    let mut files = Vec::new();
    super::cache::walk(dir, dir, &mut files)?;
    Ok(files.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(cache: &Cache, commit: &str, file: &str, etag: &str, bytes: &[u8]) {
        std::fs::create_dir_all(cache.repo_dir("o/m").join("blobs")).unwrap();
        std::fs::write(cache.blob("o/m", etag), bytes).unwrap();
        cache.link("o/m", commit, file, etag).unwrap();
    }

    #[test]
    fn a_shared_blob_stays_and_an_orphaned_ref_goes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            root: dir.path().to_path_buf(),
        };
        // c1: Q8_0 and Q4_K_M; c2 (main): the same Q8_0 blob.
        put(&cache, "c1", "m-Q8_0.gguf", "e8", b"eight");
        put(&cache, "c1", "m-Q4_K_M.gguf", "e4", b"four");
        put(&cache, "c2", "m-Q8_0.gguf", "e8", b"eight");
        cache.write_ref("o/m", "main", "c2").unwrap();
        cache.write_ref("o/m", "old", "c1").unwrap();
        let name = |s: &str| ModelName::parse(s).unwrap();

        let r = cache.remove(&name("o/m:q4_k_m")).unwrap();
        assert_eq!(r.files, ["c1/m-Q4_K_M.gguf"]);
        assert_eq!((r.blobs, r.bytes), (1, 4));
        assert!(r.refs.is_empty() && !r.repo_gone);
        assert!(!cache.blob("o/m", "e4").exists());

        // Q8_0 is linked from both snapshots: removing it frees the one blob once, c1 is
        // left with nothing so `old` goes; then the repository is empty and goes too.
        let r = cache.remove(&name("o/m:Q8_0")).unwrap();
        assert_eq!(r.files.len(), 2);
        assert_eq!((r.blobs, r.bytes), (1, 5));
        assert!(r.repo_gone);
        assert!(!cache.repo_dir("o/m").exists());

        let settings = HubSettings {
            cache_dir: Some(dir.path().to_path_buf()),
            ..HubSettings::default()
        };
        let err = remove(&settings, &name("o/m")).unwrap_err().to_string();
        assert!(
            err.contains("o/m is not pulled") && err.contains("nothing is pulled"),
            "{err}"
        );
    }

    #[test]
    fn a_file_another_snapshot_links_to_keeps_its_blob() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            root: dir.path().to_path_buf(),
        };
        put(&cache, "c1", "m-Q8_0.gguf", "e8", b"eight");
        put(&cache, "c1", "README.md", "er", b"readme");
        put(&cache, "c2", "m-Q8_0.gguf", "e8", b"eight");
        cache.write_ref("o/m", "main", "c2").unwrap();
        let r = cache
            .remove(&ModelName::parse("o/m:Q8_0").unwrap())
            .unwrap();
        // c2 is gone with its ref; c1 keeps its README, the blob of Q8_0 is freed.
        assert_eq!(r.refs, ["main"]);
        assert_eq!((r.blobs, r.bytes), (1, 5));
        assert!(cache.blob("o/m", "er").exists());
        let none = cache
            .remove(&ModelName::parse("o/m:Q5_K_M").unwrap())
            .unwrap();
        assert!(none.files.is_empty() && none.bytes == 0);
    }
}
