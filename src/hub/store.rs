//! Lilypad's own store of GGUF files converted from pulled safetensors checkpoints, kept apart
//! from the Hugging Face cache (which holds only what the Hub serves):
//! `DATA/converted/models--ORG--NAME/COMMIT/TYPE.gguf`, one file per repository, commit and
//! type (`q8_0`, `q4_k_m`). A file there is complete and passed the vocabulary check: the
//! converter writes elsewhere and the file is renamed in only then. Owns the paths, finding
//! and listing; does not convert.

use super::{select, Cache, HubError, PulledModel};
use std::path::{Path, PathBuf};

/// The store's root (`HubSettings::converted_dir`).
#[derive(Debug, Clone)]
pub struct Store {
    pub root: PathBuf,
}

impl Store {
    /// `models--ORG--NAME`, named as the cache names its folders.
    pub fn repo_dir(&self, repo: &str) -> PathBuf {
        let cache = Cache {
            root: self.root.clone(),
        };
        cache.repo_dir(repo)
    }

    /// Where the conversion of `repo` at `commit` to `ty` is kept.
    pub fn path(&self, repo: &str, commit: &str, ty: &str) -> PathBuf {
        self.repo_dir(repo)
            .join(commit)
            .join(format!("{}.gguf", ty.to_ascii_lowercase()))
    }

    /// The converted files of `repo` at `commit` (`q8_0.gguf`, ...).
    pub fn files(&self, repo: &str, commit: &str) -> Result<Vec<String>, HubError> {
        let dir = self.repo_dir(repo).join(commit);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(HubError::io(dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let name = entry
                .map_err(HubError::io(&dir))?
                .file_name()
                .to_string_lossy()
                .into_owned();
            // Only finished files: a conversion in progress has another suffix.
            if name.ends_with(".gguf") {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    /// The converted file `tag` picks for `repo` at `commit` (no tag: Q4_K_M, then Q8_0,
    /// then the first), if there is one.
    pub fn find(
        &self,
        repo: &str,
        commit: &str,
        tag: Option<&str>,
    ) -> Result<Option<PathBuf>, HubError> {
        let files = self.files(repo, commit)?;
        Ok(select::choose(&files, tag).map(|p| self.repo_dir(repo).join(commit).join(&p[0])))
    }

    /// Every converted file, as rows of `lilypad models` (refs from the cache's).
    pub fn list(&self, cache: &Cache) -> Result<Vec<PulledModel>, HubError> {
        let mut out = Vec::new();
        for (repo, repo_dir) in repos(&self.root)? {
            let refs = cache.refs(&cache.repo_dir(&repo))?;
            for commit in subdirs(&repo_dir)? {
                for file in self.files(&repo, &commit)? {
                    let path = repo_dir.join(&commit).join(&file);
                    let size = std::fs::metadata(&path).map_err(HubError::io(&path))?.len();
                    out.push(PulledModel {
                        repo: repo.clone(),
                        refs: refs
                            .iter()
                            .filter(|(_, c)| *c == commit)
                            .map(|(r, _)| r.clone())
                            .collect(),
                        commit: commit.clone(),
                        tag: file.strip_suffix(".gguf").map(str::to_string),
                        file,
                        size,
                        path,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// The `models--ORG--NAME` folders under `root`, as `(ORG/NAME, folder)`, by name.
pub(crate) fn repos(root: &Path) -> Result<Vec<(String, PathBuf)>, HubError> {
    let mut out = Vec::new();
    for name in subdirs(root)? {
        if let Some(rest) = name.strip_prefix("models--") {
            out.push((rest.replacen("--", "/", 1), root.join(&name)));
        }
    }
    Ok(out)
}

/// The names of the folders in `dir`, sorted; none when it is absent.
fn subdirs(dir: &Path) -> Result<Vec<String>, HubError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HubError::io(dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(HubError::io(dir))?;
        if entry
            .file_type()
            .map_err(HubError::io(entry.path()))?
            .is_dir()
        {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    Ok(out)
}
