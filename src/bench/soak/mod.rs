//! The soak of `lilypad serve` (issue 41, item 6), one driver for the CI test
//! (`tests/remote/serve_soak.rs`, a minute) and `lilypad bench soak --minutes N`: a real
//! server process with two replicas of a model (the tiny test model unless one is given),
//! concurrent clients over three keys (one rate-limited) asking chat and completions,
//! streamed and whole, one choice or four, some hanging up mid-stream (`clients.rs`); while
//! they run, the keys file rewritten and re-read on SIGHUP, replica 0's engine halted through
//! the test-only fault route (debug builds only: a release build says it has none and soaks
//! without it), and new weights put in, which brings replica 0 back (`schedule.rs`).
//! Afterwards the server's metrics and audit lines are read back (`tally.rs`) and held to the
//! clients' view (`checks.rs`); [`Soaked`] carries the figures and the findings (`report.rs`
//! prints them).
//!
//! Owns: the soak's plan and its order. Does not own: the server (it runs `lilypad serve` as
//! any operator would), timing assertions (the request rate is printed, never asserted).

mod answers;
pub mod checks;
pub mod clients;
mod report;
pub mod schedule;
mod server;
pub mod tally;

pub use checks::Finding;
pub use report::Soaked;
pub use schedule::FaultRoute;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How a soak is run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The `lilypad` program that serves (the bench's own; the test's `CARGO_BIN_EXE_lilypad`).
    pub lilypad: PathBuf,
    /// A working directory (models, keys file, audit lines, config).
    pub dir: PathBuf,
    /// The model served; the tiny test model (written into `dir`) when `None`. New weights are
    /// a second tiny model, or this same file again.
    pub model: Option<PathBuf>,
    /// How long the clients run.
    pub length: Duration,
    pub clients: usize,
    pub replicas: usize,
    /// The server's CPU threads in all.
    pub threads: u32,
}

impl Plan {
    /// The soak: 32 clients, two replicas, for `length`.
    pub fn new(lilypad: PathBuf, dir: PathBuf, length: Duration) -> Self {
        Self {
            lilypad,
            dir,
            model: None,
            length,
            clients: 32,
            replicas: 2,
            threads: 2,
        }
    }
}

/// Why a soak could not be run (a finding is not an error: see [`Finding`]).
#[derive(Debug, Error)]
pub enum SoakError {
    #[error("{what}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("writing the tiny model")]
    Model(#[source] crate::gguf::GgufWriteError),
    #[error("lilypad serve ended or never listened ({status}):\n{log}")]
    ServerEnded { status: String, log: String },
    #[error("asking the server")]
    Http(#[source] reqwest::Error),
}

/// The tiny model with the built-in chat template; `seed` picks its weights.
fn tiny_model(path: &Path, seed: u64) -> Result<(), SoakError> {
    let spec = crate::testmodel::TinySpec {
        seed,
        chat_template: Some(crate::prompt::BUILTIN_TEMPLATE.to_string()),
        ..crate::testmodel::TinySpec::synthetic()
    };
    crate::testmodel::write(path, &spec).map_err(SoakError::Model)
}

/// Run the soak of `plan`.
pub fn run(plan: &Plan) -> Result<Soaked, SoakError> {
    let io = |what: &'static str| move |source| SoakError::Io { what, source };
    let (model, second) = match &plan.model {
        Some(m) => (m.clone(), m.clone()),
        None => {
            let (a, b) = (plan.dir.join("soak-a.gguf"), plan.dir.join("soak-b.gguf"));
            tiny_model(&a, crate::testmodel::TinySpec::synthetic().seed)?;
            tiny_model(&b, 99)?;
            (a, b)
        }
    };
    let keys = plan.dir.join("soak-keys.jsonl");
    schedule::keys_file(&keys, false).map_err(io("writing the keys file"))?;
    let audit = plan.dir.join("soak-audit");
    let faults = FaultRoute::of_this_build();
    let mut served = server::Served::start(&server::Launch {
        lilypad: &plan.lilypad,
        model: &model,
        keys: &keys,
        audit: &audit,
        dir: &plan.dir,
        replicas: plan.replicas,
        threads: plan.threads,
        faults: faults == FaultRoute::Compiled,
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(io("starting a tokio runtime"))?;
    let http = reqwest::Client::new();
    let start = Instant::now();
    let until = start + plan.length;
    let (sent, done, rss_warm) = rt.block_on(async {
        let clients: Vec<_> = (0..plan.clients)
            .map(|c| tokio::spawn(clients::client(c, http.clone(), served.base.clone(), until)))
            .collect();
        // RSS at the end of warm-up, then at each sixth of the run (a curve to read a growth by).
        let warm = async {
            let mut samples = Vec::new();
            for i in 1..=5u32 {
                tokio::time::sleep_until((start + plan.length * i / 6).into()).await;
                samples.push(served.rss_kib()?);
            }
            Ok::<_, SoakError>(samples)
        };
        let sched = schedule::run(
            http.clone(),
            &served,
            keys.clone(),
            second.clone(),
            faults,
            start,
            plan.length,
        );
        let (done, rss_warm) = tokio::join!(sched, warm);
        let mut sent = Vec::new();
        for c in clients {
            sent.extend(c.await.map_err(|e| SoakError::Io {
                what: "a client task",
                source: std::io::Error::other(e),
            })?);
        }
        Ok::<_, SoakError>((sent, done?, rss_warm?))
    })?;
    let ended = Instant::now();
    let mut all = sent;
    all.extend(done.sent.iter().cloned());
    let settled = rt.block_on(settle(&http, &served.base, &all, &audit));
    let (text, audited) = settled?;
    checks::hang_ups(&mut all, &audited, done.halt);
    let running = tally::sum(&text, "lilypad:num_requests_running", &[]);
    let waiting = tally::sum(&text, "lilypad:num_requests_waiting", &[]);
    let counted = tally::counted(&text);
    let rss_end = served.rss_kib()?;
    let rss_samples = rss_warm;
    let rss_warm = rss_samples.first().copied().unwrap_or(0);
    let mut findings = checks::check(&checks::Evidence {
        sent: &all,
        schedule: &done,
        counted: &counted,
        audited: &audited,
        running,
        waiting,
        rss_warm_kib: rss_warm,
        rss_end_kib: rss_end,
        faults,
    });
    if let Some(status) = served.ended() {
        findings.push(Finding::ServerEnded { status });
    }
    Ok(Soaked::new(report::Parts {
        plan: plan.clone(),
        sent: all,
        schedule: done,
        counted,
        audit_lines: audited.values().map(Vec::len).sum(),
        running,
        waiting,
        rss_warm_kib: rss_warm,
        rss_end_kib: rss_end,
        rss_samples,
        faults,
        start,
        ended,
        findings,
        server_log: tail(&served.log(), 20_000),
    }))
}

/// The last `max` bytes of `text` (at a character boundary).
fn tail(text: &str, max: usize) -> String {
    let from = text.len().saturating_sub(max);
    let from = (from..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[from..].to_string()
}

/// Wait (up to half a minute) until the server has counted and audited every request the
/// soak sent and holds no generation: a stream whose client hung up ends only when the server
/// notices. The last metrics read and the audit lines.
async fn settle(
    http: &reqwest::Client,
    base: &str,
    sent: &[clients::Sent],
    audit: &Path,
) -> Result<(String, std::collections::HashMap<String, Vec<tally::Line>>), SoakError> {
    let want = sent.iter().filter(|s| s.code().is_some()).count() as u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = tally::metrics(http, base).await?;
        let audited = tally::audited(audit)?;
        let counted: u64 = tally::counted(&text).values().sum();
        let busy = tally::sum(&text, "lilypad:num_requests_running", &[])
            + tally::sum(&text, "lilypad:num_requests_waiting", &[]);
        let lines: usize = audited.values().map(Vec::len).sum();
        let settled = counted >= want && lines as u64 >= want && busy == 0.0;
        if settled || Instant::now() > deadline {
            return Ok((text, audited));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
