//! `lilypad serve`: load the model (or a script) and serve it over the OpenAI-compatible API
//! until interrupted. Prints `listening on http://ADDR/v1` on stderr once it accepts
//! connections (with the real port when `--listen` asked for port 0).

use crate::config::{ModelSource, Settings};
use crate::engine::{Engine, EngineHandle, OccupancyReading, ScriptEngine};
use crate::serve::{check_listen, AuditLog, KeyStore, ServeError, ServedModel, Server};
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
    type Reader = Box<dyn Fn() -> OccupancyReading + Send + Sync>;
    let (engine, template, default_name, occupancy): (_, _, _, Option<Reader>) =
        match args.engine.as_deref() {
            Some(s) if s.starts_with("script:") => {
                let path = PathBuf::from(&s["script:".len()..]);
                let mut engine = ScriptEngine::from_file(&path)?;
                // As for sessions: slows the replay down (for watching, and for queueing tests).
                engine.piece_delay =
                    std::time::Duration::from_millis(settings.script.piece_delay_ms);
                let engine: Arc<dyn Engine> = Arc::new(engine);
                (engine, None, "script".to_string(), None)
            }
            None | Some("llama") => {
                let path = match settings.model_source() {
                    ModelSource::Configured(p) | ModelSource::Discovered(p) => p,
                    ModelSource::Missing { .. } => {
                        anyhow::bail!("no model: pass --model F.gguf (see `lilypad doctor`)")
                    }
                };
                eprintln!("loading {}", path.display());
                let engine = EngineHandle::load(&path, &settings.engine, |_| {})
                    .with_context(|| format!("loading {}", path.display()))?;
                let template = engine.model().chat_template.clone();
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "lilypad".to_string());
                let engine = Arc::new(engine);
                let handle = engine.clone();
                let occupancy: Reader = Box::new(move || handle.occupancy());
                let engine: Arc<dyn Engine> = engine;
                (engine, template, name, Some(occupancy))
            }
            Some(other) => anyhow::bail!("unknown engine {other:?}: use `llama` or `script:FILE`"),
        };
    let backend = ServedModel::new(engine, &settings.prompt, template)?;
    let model_name = serve.model_name.clone().unwrap_or(default_name);
    let mut server = Server::new(backend, model_name.clone(), &serve, &settings.engine);
    server.keys = keys;
    server.audit = audit;
    server.occupancy = occupancy;
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
        tokio::spawn(crate::serve::reload_keys_on_hangup(server.clone()));
        axum::serve(listener, crate::serve::app(server.clone()))
            .with_graceful_shutdown(crate::serve::drain_then(
                server,
                crate::serve::termination(),
            ))
            .await?;
        eprintln!("stopped: every request in flight finished");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
