//! `lilypad serve --replicas`: the team bench's workload (`super::team`: conversations of
//! growing turns from concurrent clients, each conversation sticky by `X-Session-ID`) served by
//! two replicas against one, in the same run, with the same resources in all: one replica with
//! every thread, every sequence and the whole attention cache, or two with half of each
//! (threads split by `crate::launch::devices`). Aggregate completion tokens per second, every
//! reply held to the same length (`ignore_eos`, `max_tokens`; another length fails the run).
//! On a CPU the two replicas share the cores the one had, so the ratio shows what routing and
//! two contexts cost; on a machine with two GPUs each replica has its own.
//!
//! Owns: this comparison. Does not own: the workload (`super::team`) or the server.

use super::team::{drive, listen, post, served_model, Load, Side};
use super::{BenchError, Figure};
use crate::engine::{EngineHandle, EngineSettings};
use crate::serve::{Replica, Replicas, ServeSettings, Server};
use std::path::Path;
use std::sync::Arc;

/// What all the replicas of a side hold together, split evenly between them.
const SEQUENCES: u32 = 8;
/// The attention cache of a side, in tokens, all replicas together.
const CTX: u32 = 65_536;

/// Serve `load` with `count` replicas of the model at `path`, `es`'s threads in all and
/// [`SEQUENCES`] sequences, [`CTX`] tokens of cache and room for twice `load.conversations`
/// kept conversations in all (each of two replicas room for every conversation).
fn side(
    rt: &tokio::runtime::Runtime,
    path: &Path,
    es: &EngineSettings,
    count: usize,
    load: Load,
) -> Result<Side, BenchError> {
    let gpus = crate::launch::devices::gpu_devices(es);
    let share = |total: u32| total / count.max(1) as u32;
    let es = &EngineSettings {
        sequences: share(SEQUENCES),
        ctx: share(CTX),
        conversation_slots: share(2 * load.conversations as u32),
        ..es.clone()
    };
    let mut engines = Vec::with_capacity(count);
    for i in 0..count {
        let s = crate::launch::devices::engine_settings(es, &gpus, i, count);
        engines.push(Arc::new(super::engine_runs::load(path, &s)?));
    }
    let replica =
        |engine: &Arc<EngineHandle>| Ok::<_, BenchError>(Replica::new(served_model(engine)?));
    let mut all = engines
        .iter()
        .map(replica)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter();
    let Some(first) = all.next() else {
        return Ok(Side::default());
    };
    let server = Server::with_replicas(
        Replicas::new(first, all.collect()),
        "bench".into(),
        &ServeSettings {
            parallel: Some(load.conversations),
            ..Default::default()
        },
        es,
    );
    let (base, serving) = listen(rt, server)?;
    let url = format!("{base}/v1/completions");
    let client = reqwest::Client::new();
    let max = load.max_tokens;
    let result = rt.block_on(drive(
        "lilypad serve",
        load,
        engines[0].clone(),
        move |c, prompt| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let body = serde_json::json!({
                    "model": "bench", "prompt": prompt, "max_tokens": max, "temperature": 0,
                    "ignore_eos": true,
                });
                let v = post(&client, &url, Some(format!("conversation-{c}")), &body).await?;
                let u = &v["usage"];
                let made = u["completion_tokens"]
                    .as_u64()
                    .ok_or_else(|| BenchError::Io {
                        what: "a reply of the replicas bench",
                        source: std::io::Error::other(format!("no usage in {v}")),
                    })? as usize;
                let text = v["choices"][0]["text"].as_str().unwrap_or("").to_string();
                Ok((0, text, made))
            }
        },
    ));
    serving.abort();
    result
}

/// Measure (see the module docs) with `threads` in all.
pub fn run(
    path: &Path,
    es: &EngineSettings,
    threads: u32,
    quick: bool,
) -> Result<Figure, BenchError> {
    let load = Load {
        conversations: 16,
        turns: if quick { 3 } else { 10 },
        max_tokens: 8,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(super::suite::io("starting a tokio runtime"))?;
    let mut s = es.clone();
    // Two replicas need a thread each at least.
    s.threads = threads.max(2);
    eprintln!(
        "bench replicas: {} conversations of {} turns, lilypad serve with 2 replicas and with 1 ({} threads in all)...",
        load.conversations, load.turns, s.threads
    );
    let one = side(&rt, path, &s, 1, load)?;
    let two = side(&rt, path, &s, 2, load)?;
    let rate = |x: &Side| x.completion as f64 / x.seconds.max(1e-9);
    Ok(Figure {
        bench: "team".into(),
        name: format!(
            "serve: 2 replicas, {} threads, {SEQUENCES} sequences and a {CTX}-token cache in all, {} conversations x {} growing turns, aggregate completion tokens/s ({} completion tokens on each side)",
            s.threads, load.conversations, load.turns, two.completion
        ),
        value: rate(&two),
        unit: "tok/s".into(),
        baseline: format!(
            "1 replica with every thread, all {SEQUENCES} sequences and the whole {CTX}-token cache, same workload, same run"
        ),
        baseline_value: rate(&one),
        ratio: rate(&two) / rate(&one).max(1e-9),
        better: "higher".into(),
        target: None,
    })
}
