//! `lilypad serve`: load the model (or a script) and serve it over the OpenAI-compatible API
//! until interrupted. Prints `listening on http://ADDR/v1` on stderr once it accepts
//! connections (with the real port when `--listen` asked for port 0).

use crate::config::Settings;
use crate::launch::serving::{self, ServeOptions, Serving};
use crate::launch::EngineFlag;
use crate::serve::{self, ServeError};
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
    pub engine: Option<EngineFlag>,
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
    let mut section = settings.serve.clone();
    if args.keys.is_some() {
        section.keys_file.clone_from(&args.keys);
    }
    if args.audit.is_some() {
        section.audit_dir.clone_from(&args.audit);
    }
    if let Some(listen) = &args.listen {
        section.listen.clone_from(listen);
    }
    section.allow_remote |= args.allow_remote;
    section.audit_content |= args.audit_content;
    if let Some(n) = args.replicas {
        section.replicas = Some(n.into());
    }
    let opts = ServeOptions {
        engine: args.engine.clone(),
        weight_updates: args.weight_updates,
    };
    let Serving {
        server,
        addr,
        model_name,
        first_weights,
    } = serving::build(settings, &section, &opts)?;
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
        tokio::spawn(serve::reload_keys_on_hangup(server.clone()));
        let timeout = server.read_timeout;
        serve::serve_with_limits(
            listener,
            serve::router(server.clone()),
            timeout,
            serve::drain_then(server, serve::termination()),
        )
        .await;
        eprintln!("stopped: every request in flight finished");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
