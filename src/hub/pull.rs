//! Pulling a model (the repository's commit and file list, then each chosen file unless the
//! cache has it) and finding a pulled one with no network call.

use super::api::Api;
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

/// A pulled model.
#[derive(Debug, Clone, PartialEq)]
pub struct Pulled {
    pub commit: String,
    /// The snapshot paths of its files, the one to load first.
    pub files: Vec<PathBuf>,
    /// Whether it came from the cache alone (offline).
    pub offline: bool,
}

fn cache_of(settings: &HubSettings) -> Result<Cache, HubError> {
    Ok(Cache {
        root: settings.cache_dir.clone().ok_or(HubError::NoCache)?,
    })
}

/// The file to load for `name` from the cache alone: the commit `main` (or `revision`)
/// points at, and the file its tag picks there, every split part present.
pub fn find(
    settings: &HubSettings,
    name: &ModelName,
    revision: Option<&str>,
) -> Result<PathBuf, HubError> {
    let cache = cache_of(settings)?;
    let revision = revision.unwrap_or("main");
    let not_pulled = |why: Option<String>| HubError::NotPulled {
        name: name.to_string(),
        why,
    };
    let commit = cache
        .commit_for(&name.repo, revision)?
        .ok_or_else(|| not_pulled(None))?;
    let files = cache.snapshot_files(&name.repo, &commit)?;
    let parts = select::choose(&files, name.tag.as_deref()).ok_or_else(|| {
        not_pulled(Some(format!(
            "no file for that tag in {}",
            cache.repo_dir(&name.repo).display()
        )))
    })?;
    if let Some(missing) = parts.iter().find(|p| !files.contains(p)) {
        return Err(not_pulled(Some(format!("part {missing} is missing"))));
    }
    Ok(cache.snapshot(&name.repo, &commit, &parts[0]))
}

/// Pull `name` at `revision` into the cache (offline: find it there), reporting progress.
pub async fn pull(
    settings: &HubSettings,
    name: &ModelName,
    revision: &str,
    report: &mut dyn FnMut(Progress),
) -> Result<Pulled, HubError> {
    let cache = cache_of(settings)?;
    if settings.offline {
        let path = find(settings, name, Some(revision)).map_err(|e| match e {
            HubError::NotPulled { .. } => HubError::Offline {
                name: name.to_string(),
                cache: cache.root.clone(),
            },
            e => e,
        })?;
        return Ok(Pulled {
            commit: cache.commit_for(&name.repo, revision)?.unwrap_or_default(),
            files: vec![path],
            offline: true,
        });
    }
    let api = Api::new(settings)?;
    let info = api.info(&name.repo, revision).await?;
    let parts =
        select::choose(&info.files, name.tag.as_deref()).ok_or_else(|| HubError::NoGguf {
            repo: name.repo.clone(),
            revision: revision.to_string(),
            tag: name.tag.clone(),
            files: info.files.clone(),
        })?;
    if let Some(missing) = parts.iter().find(|p| !info.files.contains(p)) {
        return Err(HubError::SplitIncomplete {
            repo: name.repo.clone(),
            file: parts[0].clone(),
            missing: missing.clone(),
        });
    }
    report(Progress::Resolved {
        commit: info.commit.clone(),
        files: parts.clone(),
    });
    let mut paths = Vec::new();
    for file in &parts {
        paths.push(pull_file(&api, &cache, &name.repo, &info.commit, file, report).await?);
    }
    cache.write_ref(&name.repo, revision, &info.commit)?;
    Ok(Pulled {
        commit: info.commit,
        files: paths,
        offline: false,
    })
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
