//! Several sequences decoded together. Decoding is memory-bound: one step reads every weight
//! once whether the batch holds one sequence's token or eight, so the aggregate tokens/s of N
//! sequences decoded together should approach N times one sequence's. Measured against one
//! sequence in the same run: [`aggregate`] for the engine itself (N greedy generations in
//! different conversations, started together, wall time until the last ends), [`serve`] for
//! `lilypad serve` (concurrent clients against the same requests one at a time, over HTTP on
//! 127.0.0.1, memory emptied before each arm so both read their prompts in full).
//!
//! Does not own: loading the engine or writing the model (`super::engine_runs`).

use super::agent_turns::ratio;
use super::Figure;
use crate::engine::remote::{ChatRequest, RemoteEngine, RemoteSettings};
use crate::engine::{Engine, EngineError, EngineHandle, GenerateRequest, SamplingParams};
use crate::engine::{GenerationStream, SequenceId};
use crate::protocol::Message;
use std::sync::Arc;
use std::time::Instant;

/// Aggregate decode speed with `n` sequences together, for each `n` of `counts`.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The bench the figures belong to (`decode` or `sequences`).
    pub bench: &'static str,
    /// (sequences, aggregate tokens/s, tokens generated in all)
    pub rows: Vec<(usize, f64, usize)>,
    /// What the figures are about (the model), for their names.
    pub model: String,
    /// The target ratio at 4 sequences, when the issue sets one for this model.
    pub target_at_4: Option<f64>,
}

/// Wait for every stream; the tokens generated in all.
fn generated(streams: Vec<GenerationStream>) -> Result<usize, EngineError> {
    let mut n = 0;
    for s in streams {
        n += s.wait()?.1.figures.generated_tokens;
    }
    Ok(n)
}

/// `n` greedy generations of exactly `tokens` tokens each (end-of-generation ignored, as
/// llama-batched-bench does) after one-token prompts, in `n` conversations, started together; one warm-up round first, then for each count the median of `reps`
/// rounds.
pub fn aggregate(
    engine: &EngineHandle,
    counts: &[usize],
    tokens: usize,
    reps: usize,
) -> Result<Vec<(usize, f64, usize)>, EngineError> {
    let round = |n: usize| -> Result<(f64, usize), EngineError> {
        engine.reset()?;
        let t = Instant::now();
        let streams = (0..n)
            .map(|i| {
                let prompt = ((b'a' + (i % 26) as u8) as char).to_string();
                let sampling = SamplingParams {
                    ignore_eos: true,
                    ..SamplingParams::greedy()
                };
                engine.generate(GenerateRequest {
                    sequence: SequenceId(i as u64 + 1),
                    ..GenerateRequest::new(prompt, tokens as u32, sampling)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let made = generated(streams)?;
        Ok((made as f64 / t.elapsed().as_secs_f64().max(1e-9), made))
    };
    round(1)?;
    let mut rows = Vec::new();
    for &n in counts {
        let mut speeds = Vec::new();
        let mut made = 0;
        for _ in 0..reps.max(1) {
            let (tps, m) = round(n)?;
            speeds.push(tps);
            made = m;
        }
        rows.push((n, super::median(&speeds), made));
    }
    Ok(rows)
}

impl Outcome {
    pub fn figures(&self) -> Vec<Figure> {
        let Some(&(_, one, _)) = self.rows.iter().find(|r| r.0 == 1) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter(|r| r.0 > 1)
            .map(|&(n, tps, _)| Figure {
                bench: self.bench.into(),
                name: format!("aggregate decode, {n} sequences together ({})", self.model),
                value: tps,
                unit: "tok/s".into(),
                baseline: "1 sequence, same run".into(),
                baseline_value: one,
                ratio: ratio(tps, one),
                better: "higher".into(),
                target: if n == 4 { self.target_at_4 } else { None },
            })
            .collect()
    }
}

/// Lilypad's aggregate decode at each count of `rows` against llama-batched-bench's
/// `speed_tg` at the same count (`peer`); counts it did not run are left out.
pub fn against_batched(
    rows: &[(usize, f64, usize)],
    peer: &[super::peers::batched::Row],
) -> Vec<Figure> {
    rows.iter()
        .filter_map(|&(n, tps, made)| {
            let p = peer.iter().find(|p| p.pl == n)?;
            Some(Figure {
                bench: "sequences".into(),
                name: format!(
                    "decode, {n} sequence(s) together against llama-batched-bench ({made} tokens; its {})",
                    p.pl * p.tg
                ),
                value: tps,
                unit: "tok/s".into(),
                baseline: format!("llama-batched-bench -npl {n} -ntg {} (speed_tg)", p.tg),
                baseline_value: p.speed_tg,
                ratio: ratio(tps, p.speed_tg),
                better: "higher".into(),
                target: Some(0.95),
            })
        })
        .collect()
}

/// What [`serve`] measured: aggregate completion tokens/s of the clients together and of the
/// same requests one at a time.
#[derive(Debug, Clone)]
pub struct ServeOutcome {
    pub clients: usize,
    pub together: f64,
    pub one_at_a_time: f64,
}

impl ServeOutcome {
    pub fn figure(&self) -> Figure {
        Figure {
            bench: "sequences".into(),
            name: format!(
                "lilypad serve, {} concurrent clients (completion tok/s)",
                self.clients
            ),
            value: self.together,
            unit: "tok/s".into(),
            baseline: "the same requests one at a time".into(),
            baseline_value: self.one_at_a_time,
            ratio: ratio(self.together, self.one_at_a_time),
            better: "higher".into(),
            target: Some(2.5),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeBenchError {
    #[error("starting the bench server: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Prompt(#[from] crate::prompt::PromptError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Remote(#[from] crate::engine::remote::RemoteError),
}

/// `clients` requests of `tokens` completion tokens each (greedy, different conversations)
/// to an in-process `lilypad serve` on 127.0.0.1: all at once, then one at a time.
pub fn serve(
    engine: Arc<EngineHandle>,
    clients: usize,
    tokens: u32,
) -> Result<ServeOutcome, ServeBenchError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let template = engine.model().chat_template.clone();
    let dyn_engine: Arc<dyn Engine> = engine.clone();
    let prompt = crate::prompt::PromptSettings::default();
    let backend = crate::serve::ServedModel::new(dyn_engine, &prompt, template)?;
    let server = crate::serve::Server::new(
        backend,
        "bench".into(),
        // All clients at once, as before requests waited in line for the engine.
        &crate::serve::ServeSettings {
            parallel: Some(clients.max(1)),
            ..Default::default()
        },
        &crate::engine::EngineSettings::default(),
    );
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    rt.spawn(crate::serve::serve(listener, Arc::new(server)));
    let client = RemoteEngine::new(&RemoteSettings {
        endpoint: Some(base),
        model_name: Some("bench".into()),
        ..Default::default()
    })?;
    let request = |i: usize| ChatRequest {
        messages: vec![
            Message::system(format!("You are bench agent {i}.")),
            Message::user(format!("task {i}: say something")),
        ],
        tools: Vec::new(),
        max_tokens: tokens,
        sampling: SamplingParams::greedy(),
        report: Default::default(),
        session: None,
    };
    let arm = |together: bool| -> Result<f64, EngineError> {
        engine.reset()?;
        let t = Instant::now();
        let made = if together {
            generated((0..clients).map(|i| client.chat(request(i))).collect())?
        } else {
            let mut made = 0;
            for i in 0..clients {
                made += generated(vec![client.chat(request(i))])?;
            }
            made
        };
        Ok(made as f64 / t.elapsed().as_secs_f64().max(1e-9))
    };
    // A warm-up, then one-at-a-time first so that neither arm profits from the other.
    arm(true)?;
    let one_at_a_time = arm(false)?;
    let together = arm(true)?;
    Ok(ServeOutcome {
        clients,
        together,
        one_at_a_time,
    })
}
