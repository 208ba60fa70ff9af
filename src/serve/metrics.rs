//! `GET /metrics`: what a platform team graphs and alerts on, in the Prometheus exposition
//! format (OpenMetrics text, written by the `prometheus-client` crate), named as vLLM names
//! its own with the prefix `lilypad:` so that dashboards carry over.
//!
//! Every series has the labels `model_name`, `replica` (the index of the engine the request
//! went to, from 0, see `replicas.rs`; `none` for a request turned away before it was given
//! one, and for audit failures) and `key_id` (the key's `id` in the keys file; `default` for the single `--api-key-env`
//! token or when no key is required; `unknown` for a refused token). Gauges:
//! `num_requests_running` (producing tokens), `num_requests_waiting` (taken, not producing
//! yet). Counters: `prompt_tokens_total`, `generation_tokens_total`,
//! `prefix_cache_queries_total` (prompt tokens looked up in memory) and
//! `prefix_cache_hits_total` (those found, not read again), `request_success_total` by
//! `finished_reason` (`stop`, `length`, `tool_calls`, `abort`, `error`),
//! `requests_rejected_total` by `endpoint` and `reason`, `requests_total` (every request
//! answered, once, by `endpoint` and HTTP status `code`, 499 for a client that went away),
//! `audit_write_failures_total` (audit lines that could not be written), and the MTP drafts
//! (`spec_decode_num_draft_tokens_total`, `spec_decode_num_accepted_tokens_total`).
//! With the in-process engine, two gauges per replica labelled `model_name` and `replica` only:
//! `kv_cache_usage_perc` (the share of the attention cache in use, 0 to 1, as vLLM reports
//! it) and `conversations_parked` (conversations whose memory waits in host memory for a
//! sequence). Histograms (seconds): `time_to_first_token_seconds`, `inter_token_latency_seconds`,
//! `e2e_request_latency_seconds`, `request_queue_time_seconds` (the time to the first token
//! less the prompt's reading, as the engine reports it).
//!
//! Does not own: when the events happen (`chat.rs` reports them).

use crate::engine::{Figures, OccupancyReading};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The labels every series has.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Base {
    model_name: String,
    replica: String,
    key_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Finished {
    model_name: String,
    replica: String,
    key_id: String,
    finished_reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Rejected {
    model_name: String,
    replica: String,
    key_id: String,
    endpoint: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answered {
    model_name: String,
    key_id: String,
    endpoint: String,
    code: String,
}

/// The labels of engine-wide series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EngineLabels {
    model_name: String,
    replica: String,
}

/// The replica a request went to, for the `replica` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replica(pub Option<usize>);

impl Replica {
    /// Not given one (turned away before routing).
    pub const NONE: Replica = Replica(None);

    fn label(self) -> String {
        match self.0 {
            Some(i) => i.to_string(),
            None => "none".to_string(),
        }
    }
}

/// Buckets from 1 ms to about 65 s, doubling.
#[derive(Clone)]
struct Seconds;

impl MetricConstructor<Histogram> for Seconds {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(0.001, 2.0, 17))
    }
}

/// Why a request was turned away, as the `reason` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    Unauthorized,
    /// The key's role does not reach the endpoint.
    Forbidden,
    /// The body is not JSON by its `Content-Type`.
    UnsupportedMediaType,
    InvalidRequest,
    ContextLengthExceeded,
    QueueFull,
    Draining,
    /// The key is over its `max_parallel_requests` or `tokens_per_minute`.
    RateLimited,
}

impl Rejection {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Rejection::Unauthorized => "unauthorized",
            Rejection::Forbidden => "forbidden",
            Rejection::UnsupportedMediaType => "unsupported_media_type",
            Rejection::InvalidRequest => "invalid_request",
            Rejection::ContextLengthExceeded => "context_length_exceeded",
            Rejection::QueueFull => "queue_full",
            Rejection::Draining => "draining",
            Rejection::RateLimited => "rate_limited",
        }
    }
}

/// The server's metrics (see the module docs).
pub struct Metrics {
    registry: Registry,
    model_name: String,
    running: Family<Base, Gauge>,
    waiting: Family<Base, Gauge>,
    prompt_tokens: Family<Base, Counter>,
    generation_tokens: Family<Base, Counter>,
    prefix_queries: Family<Base, Counter>,
    prefix_hits: Family<Base, Counter>,
    drafted: Family<Base, Counter>,
    accepted: Family<Base, Counter>,
    success: Family<Finished, Counter>,
    rejected: Family<Rejected, Counter>,
    answered: Family<Answered, Counter>,
    audit_failures: Family<Base, Counter>,
    kv_usage: Family<EngineLabels, Gauge<f64, AtomicU64>>,
    parked: Family<EngineLabels, Gauge>,
    ttft: Family<Base, Histogram, Seconds>,
    itl: Family<Base, Histogram, Seconds>,
    e2e: Family<Base, Histogram, Seconds>,
    queue: Family<Base, Histogram, Seconds>,
}

impl Metrics {
    pub fn new(model_name: &str) -> Self {
        let mut m = Self {
            registry: Registry::default(),
            model_name: model_name.to_string(),
            running: Family::default(),
            waiting: Family::default(),
            prompt_tokens: Family::default(),
            generation_tokens: Family::default(),
            prefix_queries: Family::default(),
            prefix_hits: Family::default(),
            drafted: Family::default(),
            accepted: Family::default(),
            success: Family::default(),
            rejected: Family::default(),
            answered: Family::default(),
            audit_failures: Family::default(),
            kv_usage: Family::default(),
            parked: Family::default(),
            ttft: Family::new_with_constructor(Seconds),
            itl: Family::new_with_constructor(Seconds),
            e2e: Family::new_with_constructor(Seconds),
            queue: Family::new_with_constructor(Seconds),
        };
        // Families are shared handles: the registry encodes the same series the fields update.
        let r = &mut m.registry;
        r.register(
            "lilypad:num_requests_running",
            "Requests producing tokens",
            m.running.clone(),
        );
        r.register(
            "lilypad:num_requests_waiting",
            "Requests taken and not producing tokens yet",
            m.waiting.clone(),
        );
        r.register(
            "lilypad:prompt_tokens",
            "Prompt tokens of finished requests",
            m.prompt_tokens.clone(),
        );
        r.register(
            "lilypad:generation_tokens",
            "Tokens generated",
            m.generation_tokens.clone(),
        );
        r.register(
            "lilypad:prefix_cache_queries",
            "Prompt tokens looked up in the conversation's memory",
            m.prefix_queries.clone(),
        );
        r.register(
            "lilypad:prefix_cache_hits",
            "Prompt tokens found in memory and not read again",
            m.prefix_hits.clone(),
        );
        r.register(
            "lilypad:spec_decode_num_draft_tokens",
            "Tokens drafted by the MTP layer",
            m.drafted.clone(),
        );
        r.register(
            "lilypad:spec_decode_num_accepted_tokens",
            "Drafted tokens the model accepted",
            m.accepted.clone(),
        );
        r.register(
            "lilypad:request_success",
            "Requests finished, by finish reason",
            m.success.clone(),
        );
        r.register(
            "lilypad:requests_rejected",
            "Requests turned away, by reason",
            m.rejected.clone(),
        );
        r.register(
            "lilypad:requests",
            "Requests answered, by endpoint and HTTP status",
            m.answered.clone(),
        );
        r.register(
            "lilypad:audit_write_failures",
            "Audit lines that could not be written",
            m.audit_failures.clone(),
        );
        r.register(
            "lilypad:kv_cache_usage_perc",
            "Share of the attention cache in use, 0 to 1",
            m.kv_usage.clone(),
        );
        r.register(
            "lilypad:conversations_parked",
            "Conversations whose memory is parked in host memory",
            m.parked.clone(),
        );
        r.register(
            "lilypad:time_to_first_token_seconds",
            "From a request's arrival to its first token",
            m.ttft.clone(),
        );
        r.register(
            "lilypad:inter_token_latency_seconds",
            "Between two tokens of one reply",
            m.itl.clone(),
        );
        r.register(
            "lilypad:e2e_request_latency_seconds",
            "From a request's arrival to its end",
            m.e2e.clone(),
        );
        r.register(
            "lilypad:request_queue_time_seconds",
            "Waiting before the prompt was read",
            m.queue.clone(),
        );
        m
    }

    /// The exposition text.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// The labels of `key`'s series on `replica`.
    fn base(&self, key: &str, replica: Replica) -> Base {
        Base {
            model_name: self.model_name.clone(),
            replica: replica.label(),
            key_id: key.to_string(),
        }
    }

    fn finished(&self, key: &str, replica: Replica, reason: &str) -> Finished {
        Finished {
            model_name: self.model_name.clone(),
            replica: replica.label(),
            key_id: key.to_string(),
            finished_reason: reason.to_string(),
        }
    }

    /// A request of `key` (the key id, or `unknown` for a token no key has) was turned away.
    pub fn rejected(&self, key: &str, endpoint: &str, why: Rejection) {
        let labels = Rejected {
            endpoint: endpoint.to_string(),
            model_name: self.model_name.clone(),
            replica: Replica::NONE.label(),
            key_id: key.to_string(),
            reason: why.label().to_string(),
        };
        self.rejected.get_or_create(&labels).inc();
    }

    /// A request of `key` to `endpoint` was answered with `status` (once per request).
    pub fn answered(&self, key: &str, endpoint: &str, status: u16) {
        let labels = Answered {
            model_name: self.model_name.clone(),
            key_id: key.to_string(),
            endpoint: endpoint.to_string(),
            code: status.to_string(),
        };
        self.answered.get_or_create(&labels).inc();
    }

    /// Replica `replica`'s engine memory now (written before each scrape).
    pub fn engine_memory(&self, replica: usize, now: OccupancyReading) {
        let labels = EngineLabels {
            model_name: self.model_name.clone(),
            replica: replica.to_string(),
        };
        self.kv_usage.get_or_create(&labels).set(now.usage());
        self.parked.get_or_create(&labels).set(now.parked as i64);
    }

    /// The audit line of a request of `key` could not be written.
    pub fn audit_failed(&self, key: &str) {
        self.audit_failures
            .get_or_create(&self.base(key, Replica::NONE))
            .inc();
    }

    /// A request was taken; it waits until its first token.
    pub fn taken(&self, key: &str, replica: Replica) {
        self.waiting.get_or_create(&self.base(key, replica)).inc();
    }

    /// It left the wait without producing (the engine refused it).
    pub fn left_waiting(&self, key: &str, replica: Replica) {
        self.waiting.get_or_create(&self.base(key, replica)).dec();
    }

    /// Its first token came, `since_arrival` after it arrived.
    pub fn first_token(&self, key: &str, replica: Replica, since_arrival: Duration) {
        let base = self.base(key, replica);
        self.waiting.get_or_create(&base).dec();
        self.running.get_or_create(&base).inc();
        self.ttft
            .get_or_create(&base)
            .observe(since_arrival.as_secs_f64());
    }

    /// Another token came, `gap` after the one before.
    pub fn next_token(&self, key: &str, replica: Replica, gap: Duration) {
        self.itl
            .get_or_create(&self.base(key, replica))
            .observe(gap.as_secs_f64());
    }

    /// The request ended (`time_to_first` when it had its first token), `reason` as the API
    /// said it.
    pub fn ended(
        &self,
        key: &str,
        replica: Replica,
        reason: &str,
        since_arrival: Duration,
        time_to_first: Option<Duration>,
        figures: Option<&Figures>,
    ) {
        let base = self.base(key, replica);
        if time_to_first.is_some() {
            self.running.get_or_create(&base).dec();
        } else {
            self.waiting.get_or_create(&base).dec();
        }
        self.success
            .get_or_create(&self.finished(key, replica, reason))
            .inc();
        self.e2e
            .get_or_create(&base)
            .observe(since_arrival.as_secs_f64());
        let Some(f) = figures else {
            return;
        };
        self.prompt_tokens
            .get_or_create(&base)
            .inc_by(f.prompt_tokens as u64);
        self.generation_tokens
            .get_or_create(&base)
            .inc_by(f.generated_tokens as u64);
        self.prefix_queries
            .get_or_create(&base)
            .inc_by(f.prompt_tokens as u64);
        self.prefix_hits
            .get_or_create(&base)
            .inc_by(f.reused_tokens as u64);
        if let Some(d) = &f.draft {
            self.drafted.get_or_create(&base).inc_by(d.drafted as u64);
            self.accepted.get_or_create(&base).inc_by(d.accepted as u64);
        }
        if let Some(first) = time_to_first {
            let queued = (first.as_secs_f64() - f.prefill_seconds).max(0.0);
            self.queue.get_or_create(&base).observe(queued);
        }
    }
}
