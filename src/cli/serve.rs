//! `lilypad serve`: load the model (or a script) and serve it over the OpenAI-compatible API
//! until interrupted. Prints `listening on http://ADDR/v1` on stderr once it accepts
//! connections (with the real port when `--listen` asked for port 0).

use crate::config::Settings;
use crate::engine::{Engine, EngineHandle, ScriptEngine};
use crate::serve::{
    check_listen, AuditLog, KeyStore, LoadError, Replica, Replicas, ServeError, ServedModel,
    Server, WeightLoader, Weights,
};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080, or [serve] listen]
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Allow a non-loopback --listen address (protect it with --api-key-env NAME)
    #[arg(long)]
    pub allow_remote: bool,
    /// `llama` (the in-process model, default) or `script:FILE` (replays raw model outputs
    /// from a script, one per request: for testing clients without a model)
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// API keys with limits and priorities, JSON Lines (re-read on SIGHUP) [default: [serve]
    /// keys_file]
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Write one JSON line per request to DIR/YYYY-MM-DD.jsonl [default: [serve] audit_dir]
    #[arg(long, value_name = "DIR")]
    pub audit: Option<PathBuf>,
    /// Audit lines hold the request's messages too
    #[arg(long)]
    pub audit_content: bool,
    /// Engines behind the one front end, each with its own context: on its own GPU, or with
    /// its share of the CPU threads [default: [serve] replicas, else one per GPU device, one
    /// on a CPU-only build]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub replicas: Option<u16>,
    /// Open `POST /update_weights` (and `/update_weights_from_disk`): new weights from a GGUF
    /// file without a restart, for a trainer's rounds (needs a model file)
    #[arg(long)]
    pub weight_updates: bool,
}

pub(super) fn run(args: &ServeArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    // The flags are the top layer over `[serve]`.
    let mut serve = settings.serve.clone();
    if args.keys.is_some() {
        serve.keys_file.clone_from(&args.keys);
    }
    if args.audit.is_some() {
        serve.audit_dir.clone_from(&args.audit);
    }
    serve.audit_content |= args.audit_content;
    let listen = args.listen.as_deref().unwrap_or(&serve.listen);
    let allow_remote = args.allow_remote || serve.allow_remote;
    let addr = check_listen(listen, allow_remote)?;
    let api_key = match &serve.api_key_env {
        Some(name) => Some(
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| ServeError::MissingKey { name: name.clone() })?,
        ),
        None => None,
    };
    let keys = KeyStore::new(serve.keys_file.clone(), api_key)?;
    if !addr.ip().is_loopback() && !keys.required() {
        eprintln!(
            "warning: serving {addr} to the network without an API key (--keys FILE or --api-key-env NAME)"
        );
    }
    let audit = match &serve.audit_dir {
        Some(dir) => Some(AuditLog::new(
            dir,
            serve.audit_content,
            serve.audit_retention_days,
        )?),
        None => None,
    };
    if let Some(n) = args.replicas {
        serve.replicas = Some(n.into());
    }
    let (replicas, default_name, weights) = match args.engine.as_deref() {
        Some(s) if s.starts_with("script:") => {
            let path = PathBuf::from(&s["script:".len()..]);
            let mut engine = ScriptEngine::from_file(&path)?;
            // As for sessions: slows the replay down (for watching, and for queueing tests).
            engine.piece_delay = std::time::Duration::from_millis(settings.script.piece_delay_ms);
            let engine: Arc<dyn Engine> = Arc::new(engine);
            let model = ServedModel::new(engine, &settings.prompt, None)?;
            if args.weight_updates {
                anyhow::bail!("--weight-updates needs the in-process engine and a model file");
            }
            (
                Replicas::new(Replica::new(model), Vec::new()),
                "script".to_string(),
                None,
            )
        }
        None | Some("llama") => {
            let path = settings.model_source().file()?.to_path_buf();
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "lilypad".to_string());
            let loaded = load_replicas(&path, settings, serve.replicas)?;
            let weights = args.weight_updates.then(|| {
                let loader = Reloader {
                    settings: settings.clone(),
                    count: loaded.len(),
                };
                Weights::updatable(path.clone(), Box::new(loader))
            });
            (into_replicas(loaded)?, name, weights.map(|w| (w, path)))
        }
        Some(other) => anyhow::bail!("unknown engine {other:?}: use `llama` or `script:FILE`"),
    };
    let model_name = serve.model_name.clone().unwrap_or(default_name);
    let mut server = Server::with_replicas(replicas, model_name.clone(), &serve, &settings.engine);
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let local = listener.local_addr()?;
        eprintln!("serving {model_name} (OpenAI-compatible)");
        eprintln!("listening on http://{local}/v1");
        let server = Arc::new(server);
        if let Some(path) = first_weights {
            // The first weights' version (their SHA-256) is named once read, off the requests'
            // way: `GET /v1/models` says null until then.
            let s = server.clone();
            std::thread::spawn(move || match s.weights.hash(&path) {
                Some(Ok(v)) => s.weights.first_version_known(v),
                Some(Err(e)) => tracing::warn!("hashing {}: {e}", path.display()),
                None => {}
            });
        }
        tokio::spawn(crate::serve::reload_keys_on_hangup(server.clone()));
        let timeout = server.read_timeout;
        crate::serve::serve_with_limits(
            listener,
            crate::serve::router(server.clone()),
            timeout,
            crate::serve::drain_then(server, crate::serve::termination()),
        )
        .await;
        eprintln!("stopped: every request in flight finished");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `count` engines of the model at `path` (default: one per GPU device llama.cpp lists, one on
/// a CPU-only build), each with its own context: on its own GPU (split mode `none`), or with
/// its share of the CPU threads.
fn load_replicas(
    path: &std::path::Path,
    settings: &Settings,
    count: Option<usize>,
) -> anyhow::Result<Vec<Replica>> {
    let gpus = crate::launch::devices::gpu_devices(&settings.engine);
    let count = count.unwrap_or(gpus.len()).max(1);
    let mut loaded = Vec::with_capacity(count);
    for i in 0..count {
        let engine_settings =
            crate::launch::devices::engine_settings(&settings.engine, &gpus, i, count);
        eprintln!("loading {} (replica {i} of {count})", path.display());
        let engine = EngineHandle::load(path, &engine_settings, |_| {})
            .with_context(|| format!("loading {} for replica {i}", path.display()))?;
        let template = engine.model().chat_template.clone();
        let engine = Arc::new(engine);
        let reader = engine.clone();
        let halter = engine.clone();
        let dyn_engine: Arc<dyn Engine> = engine;
        let mut replica = Replica::new(ServedModel::new(dyn_engine, &settings.prompt, template)?);
        replica.occupancy = Some(Box::new(move || reader.occupancy()));
        replica.halt_for_tests = Some(Box::new(move || halter.halt_for_tests()));
        loaded.push(replica);
    }
    Ok(loaded)
}

fn into_replicas(loaded: Vec<Replica>) -> anyhow::Result<Replicas> {
    let mut loaded = loaded.into_iter();
    let Some(first) = loaded.next() else {
        anyhow::bail!("no replica to serve");
    };
    Ok(Replicas::new(first, loaded.collect()))
}

/// New weights for `POST /update_weights`, loaded as the first ones were, as many replicas.
struct Reloader {
    settings: Settings,
    count: usize,
}

impl WeightLoader for Reloader {
    fn version(&self, path: &std::path::Path) -> Result<String, LoadError> {
        Ok(format!(
            "sha256:{}",
            crate::launch::provenance::sha256_file(path)?
        ))
    }

    fn load(&self, path: &std::path::Path) -> Result<Vec<Replica>, LoadError> {
        Ok(load_replicas(path, &self.settings, Some(self.count))?)
    }
}
