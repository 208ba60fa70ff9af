//! Finding pulled models with no network call: a name's file (`find`), and the model to use
//! when none is named (`only`: the one model pulled, or all of them when there are several).

use super::store::Store;
use super::{select, Cache, HubError, HubSettings, ModelName, PulledModel};
use std::path::PathBuf;

pub(crate) fn cache_of(settings: &HubSettings) -> Result<Cache, HubError> {
    Ok(Cache {
        root: settings.cache_dir.clone().ok_or(HubError::NoCache)?,
    })
}

/// The converted store, when the platform has a data directory.
pub(crate) fn store_of(settings: &HubSettings) -> Option<Store> {
    settings.converted_dir.clone().map(|root| Store { root })
}

/// The file to load for `name` from the cache alone: the commit `main` (or `revision`)
/// points at, and the file its tag picks there, every split part present; for a checkpoint
/// repository, the conversion of that commit the tag (the type) picks in the store.
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
    if select::checkpoint_files(&files).is_some() {
        let converted = match store_of(settings) {
            Some(store) => store.find(&name.repo, &commit, name.tag.as_deref())?,
            None => None,
        };
        return converted.ok_or_else(|| {
            not_pulled(Some(format!(
                "the checkpoint is in the cache, not converted to {}",
                name.tag.as_deref().unwrap_or("any type")
            )))
        });
    }
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

/// The pulled models when none is named.
#[derive(Debug, Clone, PartialEq)]
pub enum Only {
    /// Nothing is pulled (or there is no cache directory).
    Nothing,
    /// Exactly one model is pulled: this one is used.
    One(PulledModel),
    /// Several are pulled: one must be chosen.
    Several(Vec<PulledModel>),
}

/// What is pulled, one row per model (a repository's file; of several snapshots holding the
/// same file, the one `main` points at, else the newest).
pub fn only(settings: &HubSettings) -> Result<Only, HubError> {
    let Some(root) = settings.cache_dir.clone() else {
        return Ok(Only::Nothing);
    };
    let cache = Cache { root };
    let mut all = cache.list()?;
    if let Some(store) = store_of(settings) {
        all.extend(store.list(&cache)?);
    }
    let mut models: Vec<PulledModel> = Vec::new();
    for m in all {
        match models
            .iter_mut()
            .find(|k| k.repo == m.repo && k.file == m.file)
        {
            // Rows come newest snapshot first: a later row replaces only for `main`.
            Some(kept) if m.refs.iter().any(|r| r == "main") => *kept = m,
            Some(_) => {}
            None => models.push(m),
        }
    }
    Ok(match models.len() {
        0 => Only::Nothing,
        1 => Only::One(models.remove(0)),
        _ => Only::Several(models),
    })
}
