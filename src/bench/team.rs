//! Serving a team, against the real peer: `lilypad serve` and `llama-server` (`-np 4`, its
//! prompt cache and context checkpoints on) on the same GGUF and the same agent-shaped
//! workload: 16 conversations (`--quick`: 8) of 10 growing turns (4), each turn a new user
//! message of a tool result's size after the conversation so far, the model's own short greedy
//! replies kept, all conversations at once from concurrent HTTP clients. Per side: prompt tokens
//! the server evaluated per new prompt token (Lilypad's from `usage.prompt_tokens_details.
//! cached_tokens`, the peer's `timings.prompt_n`), and completion tokens per second of wall
//! time, Lilypad's with its default shared attention cache and with one per sequence
//! (`--no-kv-unified`, the layout of the peer's slots).
//!
//! Both sides do the same work: every reply is held to exactly `max_tokens` tokens
//! (`ignore_eos` on both, `max_tokens` / `n_predict`), and a reply of any other length (as
//! either server counts it) fails the run rather than skewing a rate. So the completion
//! tokens of the two sides are equal and the rates compare wall times of equal work.
//!
//! Both sides read the same rendered text (`/v1/completions` with `X-Session-ID` per
//! conversation; the peer's `/completion` with `cache_prompt`), so the chat template plays no
//! part. Owns: the workload and its arithmetic. Does not own: the servers.

use super::peers::server::Server as PeerServer;
use super::{BenchError, Figure};
use crate::engine::{EngineHandle, EngineSettings};
use crate::serve::{ServedModel, Server};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// One side's totals.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Side {
    pub(super) evaluated: usize,
    pub(super) new_tokens: usize,
    pub(super) completion: usize,
    pub(super) seconds: f64,
}

/// The workload's size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Load {
    pub(super) conversations: usize,
    pub(super) turns: usize,
    pub(super) max_tokens: u32,
}

fn user_message(conversation: usize, turn: usize) -> String {
    let mut text = format!("step {turn} of task {conversation}: the tool's output follows.\n");
    for line in 0..24 {
        text.push_str(&format!(
            "src/module_{conversation}/file_{turn}.py:{line}: value = compute({line}, {turn})\n"
        ));
    }
    text
}

fn render(history: &[(String, String)], next: &str, conversation: usize) -> String {
    let mut p = format!("<|im_start|>system\nYou are coding agent {conversation}.<|im_end|>\n");
    for (user, reply) in history {
        p.push_str(&format!(
            "<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n{reply}<|im_end|>\n"
        ));
    }
    p.push_str(&format!(
        "<|im_start|>user\n{next}<|im_end|>\n<|im_start|>assistant\n"
    ));
    p
}

/// A server's answer without the figures a served request has.
fn refused(server: &str, answer: &serde_json::Value) -> BenchError {
    BenchError::Io {
        what: "a request of the team bench",
        source: std::io::Error::other(format!("{server} answered without its figures: {answer}")),
    }
}

fn http(e: impl std::error::Error + Send + Sync + 'static) -> BenchError {
    BenchError::Io {
        what: "a request of the team bench",
        source: std::io::Error::other(e),
    }
}

/// POST `body` as JSON to `url` (with `X-Session-ID: session` when given); the answer's JSON.
pub(super) async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<String>,
    body: &serde_json::Value,
) -> Result<serde_json::Value, BenchError> {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header("X-Session-ID", s);
    }
    let bytes = req
        .send()
        .await
        .map_err(http)?
        .bytes()
        .await
        .map_err(http)?;
    serde_json::from_slice(&bytes).map_err(http)
}

/// The engine served as `lilypad serve` serves it (the default prompt settings).
pub(super) fn served_model(engine: &Arc<EngineHandle>) -> Result<ServedModel, BenchError> {
    let dyn_engine: Arc<dyn crate::engine::Engine> = engine.clone();
    ServedModel::new(
        dyn_engine,
        &crate::prompt::PromptSettings::default(),
        engine.model().chat_template.clone(),
    )
    .map_err(|e| BenchError::Attempts(Box::new(e)))
}

/// `server` listening on a free loopback port: its `http://ADDR` and the task serving it.
pub(super) fn listen(
    rt: &tokio::runtime::Runtime,
    server: Server,
) -> Result<(String, tokio::task::JoinHandle<()>), BenchError> {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(super::suite::io("binding a port"))?;
    let addr = listener
        .local_addr()
        .map_err(super::suite::io("reading the port"))?;
    let serving = rt.spawn(crate::serve::serve(listener, Arc::new(server)));
    Ok((format!("http://{addr}"), serving))
}

/// One side (`server` names it in errors): every conversation on its own task; `ask` sends
/// one prompt and returns (prompt tokens evaluated, completion text, completion tokens). Each
/// reply must be exactly `load.max_tokens` long ([`BenchError::UnequalWork`] otherwise).
pub(super) async fn drive<F, Fut>(
    server: &'static str,
    load: Load,
    engine: Arc<EngineHandle>,
    ask: F,
) -> Result<Side, BenchError>
where
    F: Fn(usize, String) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(usize, String, usize), BenchError>> + Send,
{
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for c in 0..load.conversations {
        let (ask, engine) = (ask.clone(), engine.clone());
        set.spawn(async move {
            let mut side = Side::default();
            let mut history: Vec<(String, String)> = Vec::new();
            let mut before = 0usize;
            for t in 0..load.turns {
                let user = user_message(c, t);
                let prompt = render(&history, &user, c);
                let len = engine.tokenize(&prompt)?.len();
                let (evaluated, reply, made) = ask(c, prompt.clone()).await?;
                if made != load.max_tokens as usize {
                    return Err(BenchError::UnequalWork {
                        server,
                        expected: load.max_tokens as usize,
                        made,
                    });
                }
                side.evaluated += evaluated;
                side.new_tokens += len.saturating_sub(before);
                side.completion += made;
                // What the next prompt holds of this turn: the prompt and the reply.
                let reply_prompt = prompt + &reply + "<|im_end|>\n";
                before = engine.tokenize(&reply_prompt)?.len();
                history.push((user, reply));
            }
            Ok::<Side, BenchError>(side)
        });
    }
    let mut total = Side::default();
    while let Some(r) = set.join_next().await {
        let s = r.map_err(|e| BenchError::Io {
            what: "a client of the team bench",
            source: std::io::Error::other(e),
        })??;
        total.evaluated += s.evaluated;
        total.new_tokens += s.new_tokens;
        total.completion += s.completion;
    }
    total.seconds = started.elapsed().as_secs_f64();
    Ok(total)
}

/// Lilypad's side: `engine` served in process as `lilypad serve` serves it, each conversation
/// sticky by `X-Session-ID`.
fn serve_side(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    engine: &Arc<EngineHandle>,
    load: Load,
    s: &EngineSettings,
) -> Result<Side, BenchError> {
    let server = crate::serve::Server::new(
        served_model(engine)?,
        "bench".into(),
        &crate::serve::ServeSettings {
            parallel: Some(load.conversations),
            ..Default::default()
        },
        s,
    );
    let (url, serving) = listen(rt, server)?;
    let (client, max) = (client.clone(), load.max_tokens);
    let side = rt.block_on(drive(
        "lilypad serve",
        load,
        engine.clone(),
        move |c, prompt| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let body = serde_json::json!({
                    "model": "bench", "prompt": prompt, "max_tokens": max, "temperature": 0,
                    "ignore_eos": true,
                });
                let v = post(
                    &client,
                    &format!("{url}/v1/completions"),
                    Some(format!("conversation-{c}")),
                    &body,
                )
                .await?;
                let u = &v["usage"];
                let prompt_tokens = u["prompt_tokens"]
                    .as_u64()
                    .ok_or_else(|| refused("lilypad serve", &v))?
                    as usize;
                let cached = u["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0) as usize;
                let text = v["choices"][0]["text"].as_str().unwrap_or("").to_string();
                let made = u["completion_tokens"]
                    .as_u64()
                    .ok_or_else(|| refused("lilypad serve", &v))?
                    as usize;
                Ok((prompt_tokens - cached.min(prompt_tokens), text, made))
            }
        },
    ));
    serving.abort();
    side
}

/// Measure (see the module docs) on the model at `path` against `program` (llama-server).
pub fn run(
    path: &Path,
    es: &EngineSettings,
    threads: u32,
    program: &Path,
    dir: &Path,
    quick: bool,
) -> Result<Vec<Figure>, BenchError> {
    let load = Load {
        conversations: if quick { 8 } else { 16 },
        turns: if quick { 4 } else { 10 },
        max_tokens: 8,
    };
    let ctx = 32_768u32;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(super::suite::io("starting a tokio runtime"))?;
    let mut s = es.clone();
    s.ctx = ctx;
    s.threads = threads;
    s.sequences = 4;
    s.conversation_slots = load.conversations as u32;
    s.gpu_layers = Some(0);
    eprintln!(
        "bench team: {} conversations of {} turns, lilypad serve against llama-server -np 4...",
        load.conversations, load.turns
    );
    let client = reqwest::Client::new();
    // One engine loaded at a time: the shared cache's is dropped before the next loads.
    let ours = {
        let engine = Arc::new(super::engine_runs::load(path, &s)?);
        serve_side(&rt, &client, &engine, load, &s)?
    };
    // The same with an attention cache per sequence, as the peer's slots have: each of the 4
    // sequences `ctx` tokens, the peer's memory exactly. This engine stays for the peer's
    // side, which counts its prompts' tokens with it.
    let split_settings = EngineSettings {
        kv_unified: false,
        ..s.clone()
    };
    let engine = Arc::new(super::engine_runs::load(path, &split_settings)?);
    let split = serve_side(&rt, &client, &engine, load, &split_settings)?;
    // The peer's side.
    // Each of the four slots gets as much context as Lilypad's whole engine (`-c` four times
    // over): with `ctx` shared, the late turns of four conversations at once do not fit, and
    // llama-server refuses them ("Context size has been exceeded"), where Lilypad parks the
    // conversations that do not fit.
    let extra: Vec<String> = [
        "-np",
        "4",
        "--ctx-checkpoints",
        "128",
        "--checkpoint-min-step",
        "0",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let peer = PeerServer::start(
        program,
        path,
        threads,
        ctx * 4,
        &extra,
        &dir.join("team-llama-server.log"),
    )?;
    let peer_url = peer.url().to_string();
    let theirs = {
        let (client, max) = (client.clone(), load.max_tokens);
        rt.block_on(drive(
            "llama-server",
            load,
            engine.clone(),
            move |_, prompt| {
                let (client, url) = (client.clone(), peer_url.clone());
                async move {
                    let body = serde_json::json!({
                        "prompt": prompt, "n_predict": max, "ignore_eos": true,
                        "cache_prompt": true, "temperature": 0, "top_k": 1,
                    });
                    let v = post(&client, &format!("{url}/completion"), None, &body).await?;
                    // A refused request (a prompt past the context) has no timings: an error, not
                    // a request that cost nothing.
                    let evaluated = v["timings"]["prompt_n"]
                        .as_u64()
                        .ok_or_else(|| refused("llama-server", &v))?
                        as usize;
                    let text = v["content"].as_str().unwrap_or("").to_string();
                    let made = v["timings"]["predicted_n"]
                        .as_u64()
                        .ok_or_else(|| refused("llama-server", &v))?
                        as usize;
                    Ok((evaluated, text, made))
                }
            },
        ))?
    };
    drop(peer);
    let per_new = |s: &Side| s.evaluated as f64 / s.new_tokens.max(1) as f64;
    let what = format!(
        "{} conversations x {} growing turns, concurrent clients",
        load.conversations, load.turns
    );
    // The same quantity on both sides, counted the same way (`drive` held every reply to
    // `max_tokens`), and the ratio is of those two rates.
    let rate = |side: &Side| side.completion as f64 / side.seconds.max(1e-9);
    let throughput = |how: &str, side: &Side| {
        Figure {
        bench: "team".into(),
        name: format!(
            "{how}: completion tokens per second of wall time, {what} ({} completion tokens on each side)",
            side.completion
        ),
        value: rate(side),
        unit: "tok/s".into(),
        baseline: "llama-server -np 4, each slot Lilypad's whole context, same workload".into(),
        baseline_value: rate(&theirs),
        ratio: rate(side) / rate(&theirs).max(1e-9),
        better: "higher".into(),
        target: Some(1.0),
    }
    };
    Ok(vec![
        Figure {
            bench: "team".into(),
            name: format!("serve: prompt tokens evaluated per new prompt token, {what}"),
            value: per_new(&ours),
            unit: "tokens/token".into(),
            baseline: "llama-server -np 4, each slot Lilypad's whole context (prompt cache, 128 checkpoints), same workload"
                .into(),
            baseline_value: per_new(&theirs),
            ratio: per_new(&ours) / per_new(&theirs).max(1e-9),
            better: "lower".into(),
            target: Some(0.5),
        },
        throughput("serve", &ours),
        throughput(
            "serve --no-kv-unified (an attention cache per sequence, as the peer's slots)",
            &split,
        ),
    ])
}
