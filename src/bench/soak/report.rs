//! A soak's outcome ([`Soaked`]): the figures the bench prints (requests by status, answers,
//! audit lines, the metrics' counters against the clients', 5xx inside and outside the
//! injected fault, generations held, RSS after warm-up and at the end, the request rate in
//! each sixth of the run) and the findings.
//!
//! Owns: the figures' arithmetic and their text. Does not own: the rules (`checks.rs`).

use super::checks::{self, Finding};
use super::clients::{Seen, Sent};
use super::schedule::{Done, FaultRoute};
use super::Plan;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Instant;

/// Windows the run's request rate is given in.
const WINDOWS: usize = 6;

/// What [`Soaked::new`] is made of.
pub(super) struct Parts {
    pub plan: Plan,
    pub sent: Vec<Sent>,
    pub schedule: Done,
    pub counted: BTreeMap<(String, u16), u64>,
    pub audit_lines: usize,
    pub running: f64,
    pub waiting: f64,
    pub rss_warm_kib: u64,
    pub rss_end_kib: u64,
    pub rss_samples: Vec<u64>,
    pub faults: FaultRoute,
    pub start: Instant,
    pub ended: Instant,
    pub findings: Vec<Finding>,
    pub server_log: String,
}

/// A soak's figures and findings.
#[derive(Debug, Clone)]
pub struct Soaked {
    pub plan: Plan,
    /// Every request sent, the clients' and the schedule's.
    pub sent: Vec<Sent>,
    pub schedule: Done,
    /// The clients' counts by endpoint and code.
    pub clients: BTreeMap<(String, u16), u64>,
    /// `lilypad:requests_total` by endpoint and code.
    pub counted: BTreeMap<(String, u16), u64>,
    pub audit_lines: usize,
    pub running: f64,
    pub waiting: f64,
    pub rss_warm_kib: u64,
    pub rss_end_kib: u64,
    /// RSS (KiB) at each sixth of the run, the first one the warm-up value.
    pub rss_samples: Vec<u64>,
    pub faults: FaultRoute,
    /// Requests answered per second in each of [`WINDOWS`] equal parts of the run.
    pub rates: Vec<f64>,
    pub findings: Vec<Finding>,
    /// The end of the server's log (its stderr), for reading a finding.
    pub server_log: String,
}

impl Soaked {
    pub(super) fn new(p: Parts) -> Self {
        let span = p.ended.duration_since(p.start).as_secs_f64().max(1e-9);
        let width = span / WINDOWS as f64;
        let mut counts = [0usize; WINDOWS];
        for s in &p.sent {
            let at = s.ended.duration_since(p.start).as_secs_f64();
            counts[((at / width) as usize).min(WINDOWS - 1)] += 1;
        }
        Self {
            clients: checks::by_code(&p.sent),
            rates: counts.iter().map(|&c| c as f64 / width).collect(),
            plan: p.plan,
            sent: p.sent,
            schedule: p.schedule,
            counted: p.counted,
            audit_lines: p.audit_lines,
            running: p.running,
            waiting: p.waiting,
            rss_warm_kib: p.rss_warm_kib,
            rss_end_kib: p.rss_end_kib,
            rss_samples: p.rss_samples,
            faults: p.faults,
            findings: p.findings,
            server_log: p.server_log,
        }
    }

    /// Requests that got one whole answer (a planned hang-up counts as answered).
    pub fn answered(&self) -> usize {
        self.sent.iter().filter(|s| s.code().is_some()).count()
    }

    /// Of the clients' requests: (streamed, hung up, with several choices, turned away 429).
    pub fn shapes(&self) -> (usize, usize, usize, usize) {
        let shapes = self.sent.iter().filter_map(|s| s.shape.map(|sh| (s, sh)));
        let (mut streamed, mut hung, mut several, mut limited) = (0, 0, 0, 0);
        for (s, sh) in shapes {
            streamed += usize::from(sh.stream);
            hung += usize::from(s.seen == Seen::HungUp);
            several += usize::from(sh.n > 1);
            limited += usize::from(s.code() == Some(429));
        }
        (streamed, hung, several, limited)
    }

    /// 5xx answers: (those of the injected fault, all others).
    pub fn server_errors(&self) -> (usize, usize) {
        let fives = self
            .sent
            .iter()
            .filter(|s| s.code().is_some_and(|c| c >= 500));
        let injected = fives
            .clone()
            .filter(|s| checks::injected(s, self.schedule.halt))
            .count();
        (injected, fives.count() - injected)
    }

    /// RSS at the end over RSS after warm-up.
    pub fn rss_ratio(&self) -> f64 {
        self.rss_end_kib as f64 / (self.rss_warm_kib as f64).max(1.0)
    }

    /// The slowest window's request rate over the fastest's.
    pub fn rate_held(&self) -> f64 {
        let max = self.rates.iter().copied().fold(0.0, f64::max);
        let min = self.rates.iter().copied().fold(f64::INFINITY, f64::min);
        if max > 0.0 {
            min / max
        } else {
            0.0
        }
    }

    /// The figures and findings as text.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let secs = self.plan.length.as_secs_f64();
        let (streamed, hung, several, limited) = self.shapes();
        let _ = writeln!(
            o,
            "soak: {} clients, {} replicas, {secs:.0} s: {} requests ({streamed} streamed, {hung} hung up mid-stream, {several} with n = {}, {limited} turned away 429)",
            self.plan.clients,
            self.plan.replicas,
            self.sent.len(),
            super::clients::CHOICES,
        );
        let _ = writeln!(
            o,
            "answers: {} of {} requests got exactly one; audit lines: {}",
            self.answered(),
            self.sent.len(),
            self.audit_lines
        );
        let _ = writeln!(
            o,
            "requests by endpoint and status (clients / lilypad:requests_total):"
        );
        let keys: std::collections::BTreeSet<_> =
            self.clients.keys().chain(self.counted.keys()).collect();
        for k in keys {
            let c = self.clients.get(k).copied().unwrap_or(0);
            let m = self.counted.get(k).copied().unwrap_or(0);
            let mark = if c == m { "" } else { "  <- differs" };
            let _ = writeln!(o, "  {:<18} {}  {c:>6} / {m:<6}{mark}", k.0, k.1);
        }
        let hung = |code| {
            self.sent
                .iter()
                .filter(|s| s.seen == Seen::HungUp && s.code() == Some(code))
                .count()
        };
        let _ = writeln!(
            o,
            "hang-ups recorded by the server: {} as 499, {} as 200 (written whole before it saw the client go), {} as 503 (the fault)",
            hung(499),
            hung(200),
            hung(503)
        );
        let (injected, other) = self.server_errors();
        let _ = writeln!(
            o,
            "5xx: {injected} of the injected fault, {other} outside it"
        );
        let _ = match self.faults {
            FaultRoute::Compiled => writeln!(
                o,
                "fault: replica 0's engine halted (answered {:?}); it served {} requests after the new weights",
                self.schedule.halt.map(|h| h.2),
                self.schedule.replica_0_after.unwrap_or(0.0)
            ),
            FaultRoute::NotCompiled => writeln!(
                o,
                "fault: NOT INJECTED: the test-only fault route is not compiled into this build (a release build); run a debug build (`cargo run -- bench soak`) for the engine failure"
            ),
        };
        let _ = writeln!(
            o,
            "keys: re-read on SIGHUP, the new key let in after {}; weights: update answered {:?}",
            self.schedule
                .reload
                .map_or("never".to_string(), |d| format!("{:.2} s", d.as_secs_f64())),
            self.schedule.update
        );
        let _ = writeln!(
            o,
            "generations held after the run: {} running, {} waiting",
            self.running, self.waiting
        );
        let _ = writeln!(
            o,
            "RSS: {} KiB after warm-up, {} KiB after the run, ratio {:.3} (limit {:.2})",
            self.rss_warm_kib,
            self.rss_end_kib,
            self.rss_ratio(),
            checks::RSS_GROWTH
        );
        let rss: Vec<String> = self.rss_samples.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "RSS by sixths (KiB): {}, then {}",
            rss.join(", "),
            self.rss_end_kib
        );
        let rates: Vec<String> = self.rates.iter().map(|r| format!("{r:.1}")).collect();
        let _ = writeln!(
            o,
            "requests/s: {:.1} over the run; by sixths {}; slowest/fastest {:.2}",
            self.sent.len() as f64 / secs.max(1e-9),
            rates.join(", "),
            self.rate_held()
        );
        if self.findings.is_empty() {
            let _ = writeln!(o, "findings: none");
        } else {
            let _ = writeln!(o, "findings ({}):", self.findings.len());
            for f in self.findings.iter().take(50) {
                let _ = writeln!(o, "  {f}");
            }
        }
        o
    }
}
