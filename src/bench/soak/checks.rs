//! The soak's verdict: what the clients saw against what the server counted and audited, each
//! broken rule a typed [`Finding`]. The rules: every request got exactly one whole answer and
//! left exactly one audit line with the status the client got (499 for a client that hung
//! up); `lilypad:requests_total` by endpoint and code equals the clients' counts; no 5xx but
//! the injected fault's (503 `engine_unavailable` of a request in flight while replica 0 was
//! halted: those requests were on the engine that stopped); no generation holds a sequence
//! once the clients are done; RSS after the run within 10% of RSS after warm-up; the keys
//! were re-read, the fault went in, the new weights came and replica 0 served again.
//!
//! Owns: the rules. Does not own: gathering what they read (`tally.rs`, `schedule.rs`).

use super::clients::{Seen, Sent};
use super::schedule::{Done, FaultRoute};
use super::tally::Line;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::time::Instant;

/// How much RSS may grow from warm-up to the end of the run.
pub const RSS_GROWTH: f64 = 1.10;

/// One broken rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// A request got no whole answer (or more than one).
    NotOneAnswer { id: String, what: String },
    /// A request left other than one audit line.
    AuditLines { id: String, lines: usize },
    /// Its one audit line names another status or endpoint.
    AuditDiffers {
        id: String,
        client: String,
        audit: String,
    },
    /// An audit line of no request the soak sent.
    StrayAuditLine { id: String },
    /// The metrics' request counter of an endpoint and code against the clients' count.
    CounterOff {
        endpoint: String,
        code: u16,
        metrics: u64,
        clients: u64,
    },
    /// A 5xx outside the injected fault.
    ServerError {
        id: String,
        endpoint: String,
        code: u16,
        error: Option<String>,
    },
    /// Generations still counted running or waiting after every client finished.
    SequencesHeld { running: f64, waiting: f64 },
    /// RSS grew past [`RSS_GROWTH`] times its warm-up value.
    RssGrew { warm_kib: u64, end_kib: u64 },
    /// The new key was not let in after the SIGHUP.
    KeysNotReloaded,
    /// The halt was not answered 200.
    FaultNotInjected { status: Option<u16> },
    /// The weight update was not answered 200.
    WeightsNotUpdated { status: Option<u16> },
    /// Replica 0 served nothing after the new weights replaced the halted engine.
    ReplicaNotBack,
    /// The server process ended.
    ServerEnded { status: String },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::NotOneAnswer { id, what } => write!(f, "{id}: not one answer: {what}"),
            Finding::AuditLines { id, lines } => write!(f, "{id}: {lines} audit lines"),
            Finding::AuditDiffers { id, client, audit } => {
                write!(f, "{id}: the client saw {client}, the audit line says {audit}")
            }
            Finding::StrayAuditLine { id } => write!(f, "an audit line of no request: {id:?}"),
            Finding::CounterOff {
                endpoint,
                code,
                metrics,
                clients,
            } => write!(
                f,
                "lilypad:requests_total{{endpoint={endpoint},code={code}}} = {metrics}, the clients counted {clients}"
            ),
            Finding::ServerError {
                id,
                endpoint,
                code,
                error,
            } => write!(f, "{id}: {endpoint} answered {code} {error:?} outside the injected fault"),
            Finding::SequencesHeld { running, waiting } => write!(
                f,
                "after the run, {running} requests still running and {waiting} waiting"
            ),
            Finding::RssGrew { warm_kib, end_kib } => write!(
                f,
                "RSS grew from {warm_kib} KiB after warm-up to {end_kib} KiB after the run"
            ),
            Finding::KeysNotReloaded => write!(f, "the new key was not let in after SIGHUP"),
            Finding::FaultNotInjected { status } => {
                write!(f, "the halt of replica 0 was answered {status:?}")
            }
            Finding::WeightsNotUpdated { status } => {
                write!(f, "the weight update was answered {status:?}")
            }
            Finding::ReplicaNotBack => {
                write!(f, "replica 0 served nothing after the new weights")
            }
            Finding::ServerEnded { status } => write!(f, "the server ended: {status}"),
        }
    }
}

/// What the checks read.
pub struct Evidence<'a> {
    pub sent: &'a [Sent],
    pub schedule: &'a Done,
    /// `lilypad:requests_total` by endpoint and code.
    pub counted: &'a BTreeMap<(String, u16), u64>,
    pub audited: &'a HashMap<String, Vec<Line>>,
    pub running: f64,
    pub waiting: f64,
    pub rss_warm_kib: u64,
    pub rss_end_kib: u64,
    pub faults: FaultRoute,
}

/// The clients' counts by endpoint and code (a hang-up as 499).
pub fn by_code(sent: &[Sent]) -> BTreeMap<(String, u16), u64> {
    let mut by = BTreeMap::new();
    for s in sent {
        if let Some(code) = s.code() {
            *by.entry((s.endpoint.label().to_string(), code))
                .or_insert(0) += 1;
        }
    }
    by
}

/// Whether `s` was in flight while replica 0's engine was being stopped.
fn during(s: &Sent, halt: Option<(Instant, Instant, u16)>) -> bool {
    halt.is_some_and(|(from, to, _)| s.started <= to && s.ended >= from)
}

/// Whether `s` is a failure the halt caused: a 503 `engine_unavailable` (or a hang-up the
/// server recorded as 503) of a request in flight while replica 0's engine was being stopped.
pub fn injected(s: &Sent, halt: Option<(Instant, Instant, u16)>) -> bool {
    let unavailable = match &s.seen {
        Seen::Answer {
            status: 503,
            error: Some(e),
        } => e == "engine_unavailable",
        Seen::HungUp => s.recorded == Some(503),
        _ => false,
    };
    unavailable && during(s, halt)
}

/// A client that hangs up cannot know what the server recorded: 499 when the server saw it
/// go, 200 when the server had written the whole reply before it saw that, 503 when the halt
/// failed the generation first. Each hang-up takes its one audit line's status when it is one
/// of those; any other stays 499 for the checks to find.
pub fn hang_ups(
    sent: &mut [Sent],
    audited: &HashMap<String, Vec<Line>>,
    halt: Option<(Instant, Instant, u16)>,
) {
    for s in sent.iter_mut().filter(|s| s.seen == Seen::HungUp) {
        if let Some([one]) = audited.get(&s.id).map(Vec::as_slice) {
            let fits = matches!(one.status, 499 | 200) || (one.status == 503 && during(s, halt));
            if fits {
                s.recorded = Some(one.status);
            }
        }
    }
}

/// Every broken rule.
pub fn check(e: &Evidence<'_>) -> Vec<Finding> {
    let mut found = Vec::new();
    let mut ids = HashSet::new();
    for s in e.sent {
        ids.insert(s.id.as_str());
        if let Seen::Broken(what) = &s.seen {
            found.push(Finding::NotOneAnswer {
                id: s.id.clone(),
                what: what.clone(),
            });
        }
        let lines = e.audited.get(&s.id).map_or(&[][..], Vec::as_slice);
        match (lines, s.code()) {
            ([one], Some(code)) if one.status != code || one.endpoint != s.endpoint.label() => {
                found.push(Finding::AuditDiffers {
                    id: s.id.clone(),
                    client: format!("{} {code}", s.endpoint.label()),
                    audit: format!("{} {}", one.endpoint, one.status),
                })
            }
            ([_], _) => {}
            (more, _) => found.push(Finding::AuditLines {
                id: s.id.clone(),
                lines: more.len(),
            }),
        }
        if let (Some(code @ 500..), Seen::Answer { error, .. }) = (s.code(), &s.seen) {
            if !injected(s, e.schedule.halt) {
                found.push(Finding::ServerError {
                    id: s.id.clone(),
                    endpoint: s.endpoint.label().to_string(),
                    code,
                    error: error.clone(),
                });
            }
        }
    }
    for id in e.audited.keys().filter(|id| !ids.contains(id.as_str())) {
        found.push(Finding::StrayAuditLine { id: id.clone() });
    }
    let clients = by_code(e.sent);
    let keys: std::collections::BTreeSet<_> = clients.keys().chain(e.counted.keys()).collect();
    for k in keys {
        let (m, c) = (
            e.counted.get(k).copied().unwrap_or(0),
            clients.get(k).copied().unwrap_or(0),
        );
        if m != c {
            found.push(Finding::CounterOff {
                endpoint: k.0.clone(),
                code: k.1,
                metrics: m,
                clients: c,
            });
        }
    }
    if e.running != 0.0 || e.waiting != 0.0 {
        found.push(Finding::SequencesHeld {
            running: e.running,
            waiting: e.waiting,
        });
    }
    if e.rss_end_kib as f64 > e.rss_warm_kib as f64 * RSS_GROWTH {
        found.push(Finding::RssGrew {
            warm_kib: e.rss_warm_kib,
            end_kib: e.rss_end_kib,
        });
    }
    let d = e.schedule;
    if d.reload.is_none() {
        found.push(Finding::KeysNotReloaded);
    }
    let halted = d.halt.map(|h| h.2);
    if e.faults == FaultRoute::Compiled && halted != Some(200) {
        found.push(Finding::FaultNotInjected { status: halted });
    }
    if d.update != Some(200) {
        found.push(Finding::WeightsNotUpdated { status: d.update });
    }
    if d.replica_0_after.is_none_or(|n| n < 1.0) {
        found.push(Finding::ReplicaNotBack);
    }
    found
}
