//! New weights between attempts (`lilypad run --reload-weights`): before each attempt of a
//! batch the weight file is looked at again, and when another file has taken its place (its
//! size, modification time or inode changed: a trainer writes the new round's weights beside it
//! and renames them over it) the model is loaded anew and hashed. Attempts that started on the
//! old weights finish on them (they hold the old model until they end); the new model has no
//! memory of conversations read with the old one, so none is reused across weight versions.
//! Each attempt's provenance (and rollout) records the weights it ran with. A batch with one
//! engine per device reloads them all at once, each with its own settings.
//!
//! Never write a new round's weights into the file in place: the running engine maps it.
//!
//! Owns: noticing the change and swapping the model. Does not own: loading
//! (`crate::launch::build_model`) or hashing (`crate::launch::provenance`).

use crate::config::Settings;
use crate::engine::TemplatedModel;
use crate::launch::{self, EngineChoice, LaunchError};
use crate::session::ModelIdentity;
use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;
use tokio::sync::Mutex;

/// Why the weights could not be watched or loaded anew.
#[derive(Debug, Error)]
pub enum WeightsError {
    #[error("reading the weight file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("loading the new weights: {0}")]
    Load(#[from] LaunchError),
    #[error("loading the new weights: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("no engine {engine} among {count}")]
    NoEngine { engine: usize, count: usize },
}

/// What tells one weight file from the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signature {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn signature(path: &std::path::Path) -> Result<Signature, WeightsError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).map_err(|source| WeightsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Signature {
        len: m.len(),
        modified: m.modified().ok(),
        inode: m.ino(),
    })
}

struct Loaded {
    signature: Signature,
    /// One per engine of the batch.
    models: Vec<Arc<TemplatedModel>>,
    identity: Option<ModelIdentity>,
    /// How many times the weights were loaded (1 for the batch's first model).
    version: u32,
}

/// The batch's models, reloaded when their weight file is replaced.
pub struct WeightWatch {
    path: PathBuf,
    /// The settings each engine was loaded with (as many as models).
    settings: Vec<Settings>,
    current: Mutex<Loaded>,
}

impl WeightWatch {
    /// Watch `path`, whose engines `models` (with `identity`), loaded with `settings` (one
    /// each), are already loaded.
    pub fn new(
        path: PathBuf,
        settings: Vec<Settings>,
        models: Vec<Arc<TemplatedModel>>,
        identity: Option<ModelIdentity>,
    ) -> Result<Self, WeightsError> {
        let signature = signature(&path)?;
        Ok(Self {
            path,
            settings,
            current: Mutex::new(Loaded {
                signature,
                models,
                identity,
                version: 1,
            }),
        })
    }

    /// The model of engine `engine` to start an attempt with, every engine loaded anew first
    /// if the file was replaced, with its identity and how many loads it is.
    pub async fn current(
        &self,
        engine: usize,
    ) -> Result<(Arc<TemplatedModel>, Option<ModelIdentity>, u32), WeightsError> {
        // Held while loading: attempts that start meanwhile wait for the new weights.
        let mut loaded = self.current.lock().await;
        let now = signature(&self.path)?;
        if now != loaded.signature {
            let (path, settings) = (self.path.clone(), self.settings.clone());
            let fresh = tokio::task::spawn_blocking(move || {
                let choice = EngineChoice::Llama(path);
                let models = settings
                    .iter()
                    .map(|s| launch::build_model(&choice, s, &s.prompt, |_| {}))
                    .collect::<Result<Vec<_>, _>>()?;
                let identity = launch::provenance::model_identity(&choice, true, None);
                Ok::<_, LaunchError>((models, identity))
            })
            .await??;
            tracing::info!(path = %self.path.display(), "new weights loaded");
            loaded.signature = now;
            loaded.models = fresh.0;
            loaded.identity = Some(fresh.1);
            loaded.version += 1;
        }
        let model = loaded.models.get(engine).ok_or(WeightsError::NoEngine {
            engine,
            count: loaded.models.len(),
        })?;
        Ok((model.clone(), loaded.identity.clone(), loaded.version))
    }
}
