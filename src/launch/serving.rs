//! Putting `lilypad serve` together from settings: the engines behind the front end (a script,
//! or replicas of the model file, each on its own GPU or with its share of the CPU threads),
//! the keys, the audit log, and the weights `POST /update_weights` may replace (loaded as the
//! first ones were). Does not own the HTTP surface (`crate::serve`), reading flags
//! (`crate::cli`) or the runtime the server runs on.

use super::devices;
use super::options::EngineFlag;
use crate::config::{NoModel, Settings};
use crate::engine::script::ScriptError;
use crate::engine::{Engine, EngineError, EngineHandle, ScriptEngine};
use crate::prompt::PromptError;
use crate::serve::{
    check_listen, AuditLog, KeyStore, LoadError, Replica, Replicas, ServeError, ServeSettings,
    ServedModel, Server, WeightLoader, Weights,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use thiserror::Error;

/// What `lilypad serve` was asked for beyond the `[serve]` settings (which already hold its
/// flags).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// `--engine`: the in-process model (default) or a script.
    pub engine: Option<EngineFlag>,
    /// `--weight-updates`: open `POST /update_weights`.
    pub weight_updates: bool,
}

/// Why a server could not be put together.
#[derive(Debug, Error)]
pub enum ServingError {
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    NoModel(#[from] NoModel),
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("loading {} for replica {replica}: {source}", path.display())]
    Load {
        path: PathBuf,
        replica: usize,
        #[source]
        source: EngineError,
    },
    #[error("--weight-updates needs the in-process engine and a model file")]
    WeightUpdatesNeedModel,
    #[error("`lilypad serve` runs the in-process engine (`llama`) or a script (`script:FILE`), not a remote server")]
    RemoteEngine,
}

/// A server ready to listen: its state, its address (checked), and the model file whose
/// version is to be hashed once it listens (with `--weight-updates`).
pub struct Serving {
    pub server: Server,
    pub addr: SocketAddr,
    pub model_name: String,
    pub first_weights: Option<PathBuf>,
}

/// The server for `serve` (the `[serve]` settings with the flags over them) and `opts`.
pub fn build(
    settings: &Settings,
    serve: &ServeSettings,
    opts: &ServeOptions,
) -> Result<Serving, ServingError> {
    let addr = check_listen(&serve.listen, serve.allow_remote)?;
    let api_key = match &serve.api_key_env {
        Some(name) => Some(
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| ServeError::MissingKey { name: name.clone() })?,
        ),
        None => None,
    };
    let keys = KeyStore::new(serve.keys_file.clone(), api_key).map_err(ServeError::from)?;
    if !addr.ip().is_loopback() && !keys.required() {
        eprintln!(
            "warning: serving {addr} to the network without an API key (--keys FILE or --api-key-env NAME)"
        );
    }
    let audit = match &serve.audit_dir {
        Some(dir) => Some(
            AuditLog::new(dir, serve.audit_content, serve.audit_retention_days)
                .map_err(ServeError::from)?,
        ),
        None => None,
    };
    let (replicas, default_name, weights) = match &opts.engine {
        Some(EngineFlag::Script(path)) => {
            if opts.weight_updates {
                return Err(ServingError::WeightUpdatesNeedModel);
            }
            let mut engine = ScriptEngine::from_file(path)?;
            // As for sessions: slows the replay down (for watching, and for queueing tests).
            engine.piece_delay = std::time::Duration::from_millis(settings.script.piece_delay_ms);
            let engine: Arc<dyn Engine> = Arc::new(engine);
            let model = ServedModel::new(engine, &settings.prompt, None)?;
            let replicas = Replicas::new(Replica::new(model), Vec::new());
            (replicas, "script".to_string(), None)
        }
        Some(EngineFlag::Remote) => return Err(ServingError::RemoteEngine),
        None | Some(EngineFlag::Llama) => {
            let path = settings.model_source().file()?.to_path_buf();
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "lilypad".to_string());
            let (first, rest) = load_replicas(&path, settings, serve.replicas)?;
            let weights = opts.weight_updates.then(|| {
                let loader = Reloader {
                    settings: settings.clone(),
                    count: rest.len() + 1,
                };
                (Weights::updatable(path.clone(), Box::new(loader)), path)
            });
            (Replicas::new(first, rest), name, weights)
        }
    };
    let model_name = serve.model_name.clone().unwrap_or(default_name);
    let mut server = Server::with_replicas(replicas, model_name.clone(), serve, &settings.engine);
    server.keys = keys;
    server.audit = audit;
    #[cfg(debug_assertions)]
    {
        server.test_faults = std::env::var(crate::serve::TEST_FAULTS_ENV).is_ok_and(|v| v == "1");
    }
    let first_weights = weights.map(|(w, path)| {
        server.weights = w;
        path
    });
    Ok(Serving {
        server,
        addr,
        model_name,
        first_weights,
    })
}

/// `count` engines of the model at `path` (default: one per GPU device llama.cpp lists, one on
/// a CPU-only build), each with its own context: on its own GPU (split mode `none`), or with
/// its share of the CPU threads. The first apart, so that there is always one.
fn load_replicas(
    path: &Path,
    settings: &Settings,
    count: Option<usize>,
) -> Result<(Replica, Vec<Replica>), ServingError> {
    let gpus = devices::gpu_devices(&settings.engine);
    let count = count.unwrap_or(gpus.len()).max(1);
    let load = |i: usize| -> Result<Replica, ServingError> {
        let engine_settings = devices::engine_settings(&settings.engine, &gpus, i, count);
        eprintln!("loading {} (replica {i} of {count})", path.display());
        let engine = EngineHandle::load(path, &engine_settings, |_| {}).map_err(|source| {
            ServingError::Load {
                path: path.to_path_buf(),
                replica: i,
                source,
            }
        })?;
        let template = engine.model().chat_template.clone();
        let engine = Arc::new(engine);
        let reader = engine.clone();
        let halter = engine.clone();
        let dyn_engine: Arc<dyn Engine> = engine;
        let mut replica = Replica::new(ServedModel::new(dyn_engine, &settings.prompt, template)?);
        replica.occupancy = Some(Box::new(move || reader.occupancy()));
        replica.halt_for_tests = Some(Box::new(move || halter.halt_for_tests()));
        Ok(replica)
    };
    let first = load(0)?;
    let rest = (1..count).map(load).collect::<Result<Vec<_>, _>>()?;
    Ok((first, rest))
}

/// New weights for `POST /update_weights`, loaded as the first ones were, as many replicas.
struct Reloader {
    settings: Settings,
    count: usize,
}

impl WeightLoader for Reloader {
    fn version(&self, path: &Path) -> Result<String, LoadError> {
        Ok(format!("sha256:{}", super::provenance::sha256_file(path)?))
    }

    fn load(&self, path: &Path) -> Result<Vec<Replica>, LoadError> {
        let (first, rest) = load_replicas(path, &self.settings, Some(self.count))?;
        Ok(std::iter::once(first).chain(rest).collect())
    }
}
