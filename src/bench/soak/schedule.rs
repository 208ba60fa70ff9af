//! The soak's faults and operator actions, at fixed shares of the soak's length while the
//! clients run: the keys file rewritten and re-read (SIGHUP; a key only the new file has is
//! polled until it is let in), replica 0's engine halted through the test-only fault route
//! (a debug build's; a release build has none and says so), and new weights put in
//! (`/update_weights`), which replaces every replica and so brings the halted one back.
//! Every request sent here is kept as the clients' are (`Sent`): it is counted and audited
//! like any other.
//!
//! Owns: when each fault comes and what it answered. Does not own: the server's process
//! (`server.rs`), the checks (`tally.rs`).

use super::clients::{Seen, Sent, CLIENT_KEYS};
use super::server::Served;
use super::tally;
use crate::serve::Endpoint;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The operator's key (admin): weight updates and the fault route.
const OPS: (&str, &str) = ("ops", "soak-token-ops");
/// A key only the rewritten keys file has.
const NEW_KEY: (&str, &str) = ("delta", "soak-token-delta");
/// How long the new key may take to be let in after the SIGHUP.
const RELOAD_LIMIT: Duration = Duration::from_secs(15);

/// Whether the test-only fault route is in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultRoute {
    Compiled,
    /// A release build: the fault route is not compiled in, and no fault is injected.
    NotCompiled,
}

impl FaultRoute {
    /// This build's.
    pub fn of_this_build() -> Self {
        if cfg!(debug_assertions) {
            Self::Compiled
        } else {
            Self::NotCompiled
        }
    }
}

/// What the schedule did and what it was answered.
#[derive(Debug, Clone, Default)]
pub struct Done {
    /// The requests it sent (the operator's and the new key's probes).
    pub sent: Vec<Sent>,
    /// From the SIGHUP to the new key's first 200; `None` if it was never let in.
    pub reload: Option<Duration>,
    /// The halt: when it was sent and when it was answered, and its status.
    pub halt: Option<(Instant, Instant, u16)>,
    /// The weight update's status.
    pub update: Option<u16>,
    /// Requests replica 0 finished after the weight update (it came back).
    pub replica_0_after: Option<f64>,
}

/// The keys file: the clients' three keys (the third allowed one request at a time, so it is
/// turned away with 429 often) and the operator's; `reloaded`: the third allowed two, and a
/// fourth key.
pub fn keys_file(path: &Path, reloaded: bool) -> std::io::Result<()> {
    let line = |(id, token): (&str, &str), extra: &str| {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("{{\"id\": \"{id}\", \"sha256\": \"{hex}\"{extra}}}\n")
    };
    let limited = if reloaded {
        r#", "max_parallel_requests": 2, "priority": -1"#
    } else {
        r#", "max_parallel_requests": 1, "priority": -1"#
    };
    let mut text = line(CLIENT_KEYS[0], r#", "priority": 1"#);
    text.push_str(&line(CLIENT_KEYS[1], ""));
    text.push_str(&line(CLIENT_KEYS[2], limited));
    text.push_str(&line(OPS, r#", "admin": true"#));
    if reloaded {
        text.push_str(&line(NEW_KEY, ""));
    }
    // Written whole then renamed: the server never reads half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Wait until `at` after `start`.
async fn at(start: Instant, share: f64, length: Duration) {
    tokio::time::sleep_until((start + length.mul_f64(share)).into()).await;
}

/// Run the schedule over a soak of `length` begun at `start`.
pub async fn run(
    http: reqwest::Client,
    server: &Served,
    keys: PathBuf,
    second_weights: PathBuf,
    faults: FaultRoute,
    start: Instant,
    length: Duration,
) -> Result<Done, super::SoakError> {
    let base = server.base.clone();
    let mut done = Done::default();

    at(start, 0.30, length).await;
    keys_file(&keys, true).map_err(|source| super::SoakError::Io {
        what: "rewriting the keys file",
        source,
    })?;
    server.hangup()?;
    let hup = Instant::now();
    let mut k = 0;
    while hup.elapsed() < RELOAD_LIMIT {
        let s = plain(
            &http,
            &base,
            Endpoint::Tokenize,
            NEW_KEY,
            k,
            r#"{"prompt": "hi"}"#,
        )
        .await;
        k += 1;
        let ok = s.code() == Some(200);
        done.sent.push(s);
        if ok {
            done.reload = Some(hup.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    if faults == FaultRoute::Compiled {
        at(start, 0.45, length).await;
        let sent_at = Instant::now();
        let s = plain(&http, &base, Endpoint::Faults, OPS, 0, "").await;
        done.halt = s.code().map(|c| (sent_at, s.ended, c));
        done.sent.push(s);
    }

    at(start, 0.65, length).await;
    let body = serde_json::json!({"model_path": second_weights}).to_string();
    let s = plain(&http, &base, Endpoint::UpdateWeights, OPS, 1, &body).await;
    done.update = s.code();
    done.sent.push(s);
    let before = tally::replica_requests(&http, &base, "0").await?;

    at(start, 1.0, length).await;
    let after = tally::replica_requests(&http, &base, "0").await?;
    done.replica_0_after = Some(after - before);
    Ok(done)
}

/// A request of an operator's or a probe's (not a generation): its status and error type.
async fn plain(
    http: &reqwest::Client,
    base: &str,
    endpoint: Endpoint,
    (key, token): (&str, &str),
    k: usize,
    body: &str,
) -> Sent {
    let path = match endpoint {
        Endpoint::Tokenize => "/tokenize",
        Endpoint::Faults => "/test/replicas/0/halt",
        _ => "/update_weights",
    };
    let id = format!("soak-{key}-{}-{k}", endpoint.label());
    let started = Instant::now();
    let answer = http
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .header("x-request-id", &id)
        .header("content-type", "application/json")
        .body(body.to_string())
        .timeout(Duration::from_secs(300))
        .send()
        .await;
    let seen = match answer {
        Err(e) => Seen::Broken(format!("no answer: {e}")),
        Ok(r) => {
            let status = r.status().as_u16();
            // A body that breaks off is a broken answer, not an empty one.
            match r.text().await {
                Err(e) => Seen::Broken(format!("{status} with a body cut off: {e}")),
                Ok(text) => {
                    let error = (status >= 400).then(|| {
                        serde_json::from_str::<serde_json::Value>(&text)
                            .ok()
                            .and_then(|v| v["error"]["type"].as_str().map(str::to_string))
                            .unwrap_or(text)
                    });
                    Seen::Answer { status, error }
                }
            }
        }
    };
    Sent {
        id,
        key: key.to_string(),
        endpoint,
        shape: None,
        started,
        ended: Instant::now(),
        seen,
        recorded: None,
    }
}
