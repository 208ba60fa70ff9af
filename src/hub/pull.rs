//! Pulling a repository's files: the plan (its commit, whether it holds GGUF files or a
//! safetensors checkpoint, the files needed), then each file unless the cache has it.

use super::api::Api;
use super::local::cache_of;
use super::{download, select, Cache, HubError, HubSettings, ModelName};
use std::path::PathBuf;

/// What a pull reports as it goes, for the command line to print.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// The revision's commit is known and these files will be fetched.
    Resolved { commit: String, files: Vec<String> },
    /// A file is already in the cache.
    Cached { file: String, path: PathBuf },
    /// A file's download starts (`resume_from` bytes are already there).
    Started {
        file: String,
        size: Option<u64>,
        resume_from: u64,
    },
    /// Bytes of the file written so far.
    Bytes {
        file: String,
        done: u64,
        size: Option<u64>,
    },
    /// A file's download finished and was checked.
    Finished {
        file: String,
        received: u64,
        seconds: f64,
        verified: bool,
    },
}

/// What a repository holds for a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoKind {
    /// GGUF files: the one the tag picks (every part of a split one) is the model.
    Gguf,
    /// A safetensors checkpoint (no GGUF file): the files `lilypad convert` reads.
    Checkpoint,
}

/// What a pull fetches, known before any file comes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `ORG/NAME`.
    pub repo: String,
    /// The branch, tag or commit asked for.
    pub revision: String,
    /// The commit it names.
    pub commit: String,
    pub kind: RepoKind,
    /// Repository paths, the GGUF to load first, or config.json first for a checkpoint.
    pub files: Vec<String>,
    /// Known from the cache alone (`HF_HUB_OFFLINE`).
    pub offline: bool,
}

/// The files `name` at `revision` needs: from the Hub's listing, or offline from the cache.
pub async fn plan(
    settings: &HubSettings,
    name: &ModelName,
    revision: &str,
) -> Result<Plan, HubError> {
    let cache = cache_of(settings)?;
    let (commit, files) = if settings.offline {
        let offline = || HubError::Offline {
            name: name.to_string(),
            cache: cache.root.clone(),
        };
        let commit = cache
            .commit_for(&name.repo, revision)?
            .ok_or_else(offline)?;
        let files = cache.snapshot_files(&name.repo, &commit)?;
        (commit, files)
    } else {
        let info = Api::new(settings)?.info(&name.repo, revision).await?;
        (info.commit, info.files)
    };
    let plan = |kind, files| Plan {
        repo: name.repo.clone(),
        revision: revision.to_string(),
        commit: commit.clone(),
        kind,
        files,
        offline: settings.offline,
    };
    // A repository with any GGUF model file is read as a GGUF repository.
    let any_gguf = select::choose(&files, None).is_some();
    if !any_gguf {
        if let Some(needed) = select::checkpoint_files(&files) {
            return Ok(plan(RepoKind::Checkpoint, needed));
        }
    }
    let Some(parts) = select::choose(&files, name.tag.as_deref()) else {
        if settings.offline {
            return Err(HubError::Offline {
                name: name.to_string(),
                cache: cache.root.clone(),
            });
        }
        return Err(HubError::NoGguf {
            repo: name.repo.clone(),
            revision: revision.to_string(),
            tag: name.tag.clone(),
            files,
        });
    };
    if let Some(missing) = parts.iter().find(|p| !files.contains(p)) {
        return Err(HubError::SplitIncomplete {
            repo: name.repo.clone(),
            file: parts[0].clone(),
            missing: missing.clone(),
        });
    }
    Ok(plan(RepoKind::Gguf, parts))
}

/// Fetch `files` of `plan` into the cache (each one unless the cache has it; offline, each
/// must be there), then record the revision's commit. Returns their snapshot paths.
pub async fn fetch(
    settings: &HubSettings,
    plan: &Plan,
    files: &[String],
    report: &mut dyn FnMut(Progress),
) -> Result<Vec<PathBuf>, HubError> {
    let cache = cache_of(settings)?;
    report(Progress::Resolved {
        commit: plan.commit.clone(),
        files: files.to_vec(),
    });
    if plan.offline {
        let mut paths = Vec::new();
        for file in files {
            let path = cache.snapshot(&plan.repo, &plan.commit, file);
            if !path.exists() {
                return Err(HubError::Offline {
                    name: format!("{} ({file})", plan.repo),
                    cache: cache.root.clone(),
                });
            }
            report(Progress::Cached {
                file: file.clone(),
                path: path.clone(),
            });
            paths.push(path);
        }
        return Ok(paths);
    }
    let api = Api::new(settings)?;
    let mut paths = Vec::new();
    for file in files {
        paths.push(pull_file(&api, &cache, &plan.repo, &plan.commit, file, report).await?);
    }
    cache.write_ref(&plan.repo, &plan.revision, &plan.commit)?;
    Ok(paths)
}

/// One file: from the snapshot, else from its blob, else downloaded.
async fn pull_file(
    api: &Api,
    cache: &Cache,
    repo: &str,
    commit: &str,
    file: &str,
    report: &mut dyn FnMut(Progress),
) -> Result<PathBuf, HubError> {
    let snapshot = cache.snapshot(repo, commit, file);
    if snapshot.exists() {
        report(Progress::Cached {
            file: file.to_string(),
            path: snapshot.clone(),
        });
        return Ok(snapshot);
    }
    let meta = api.meta(repo, commit, file).await?;
    let commit = meta.commit.as_deref().unwrap_or(commit);
    let blob = cache.blob(repo, &meta.etag);
    // Another pull of the same file finishes (or fails) before this one looks at the blob.
    let lock = {
        let (cache, repo, etag) = (cache.clone(), repo.to_string(), meta.etag.clone());
        tokio::task::spawn_blocking(move || cache.lock(&repo, &etag))
            .await
            .map_err(|e| HubError::Io {
                path: blob.clone(),
                source: std::io::Error::other(e),
            })??
    };
    if !blob.exists() {
        let partial = blob.with_file_name(format!("{}.incomplete", meta.etag));
        report(Progress::Started {
            file: file.to_string(),
            size: meta.size,
            resume_from: std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0),
        });
        let started = std::time::Instant::now();
        let mut on_bytes = |done, size| {
            report(Progress::Bytes {
                file: file.to_string(),
                done,
                size,
            })
        };
        let fetched = download::fetch(
            api,
            &meta.location,
            file,
            &blob,
            &meta.etag,
            meta.size,
            &mut on_bytes,
        )
        .await?;
        report(Progress::Finished {
            file: file.to_string(),
            received: fetched.received,
            seconds: started.elapsed().as_secs_f64(),
            verified: download::is_sha256(&meta.etag),
        });
    } else {
        report(Progress::Cached {
            file: file.to_string(),
            path: snapshot.clone(),
        });
    }
    cache.link(repo, commit, file, &meta.etag)?;
    drop(lock);
    Ok(cache.snapshot(repo, commit, file))
}
