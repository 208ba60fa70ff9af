//! The one door every request to an endpoint of `lilypad serve` goes through before the
//! endpoint reads its body, so that no endpoint can skip a rule. In this order:
//!
//! 1. the key (`Authorization: Bearer`): 401 for a token no key has;
//! 2. the role: 403 `permission_denied` for an operator's endpoint asked by another key,
//!    before anything of the request is acted on;
//! 3. the body, for endpoints that take one, read only now: a `Content-Type` other than JSON
//!    gets 415, a body over [`BODY_CAP`] 413, one that does not arrive within the read
//!    timeout (`[serve] read_timeout_secs`) 408, one that is not UTF-8 400;
//! 4. for the model endpoints ([`Endpoint::admits_work`]): the drain (503 with `Retry-After`
//!    once shutdown began), the key's own limits (429 with the `Retry-After` its limit gives),
//!    and the queue bound (503 with `Retry-After` when `max_queue` requests are in flight
//!    already; `/health/ready` says busy by the same rule, [`Server::readiness`]). An admitted
//!    request counts as in flight until its [`Admitted`] is dropped.
//!
//! Every request leaves, once, a count in `lilypad:requests` by endpoint and status, and
//! (with `--audit DIR`) one audit line naming its endpoint, whether refused at the door,
//! refused by its endpoint, answered, or abandoned by its client (`abort`, 499). Every answer
//! carries `X-Request-Id` (the client's own, or a new one), and every error is in OpenAI's
//! `{"error": {...}}` form.
//!
//! Does not own: the rules' state (keys `keys.rs`, limits `limits.rs`, the wait for a place to
//! generate `queue.rs`), what an endpoint does with its request (`chat.rs`, `completions.rs`,
//! `tokenize.rs`, `weights.rs`), a generation's own accounting (`track.rs`).

use super::api::{self, ApiError};
use super::audit::{AuditLog, AuditRecord};
use super::keys::{Caller, Role, UNKNOWN_KEY_ID};
use super::limits::{Held, OverLimit};
use super::metrics::Rejection;
use super::server::Server;
use crate::engine::Figures;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{header, Extensions, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The endpoints behind the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/completions`.
    Completions,
    /// `POST /tokenize`.
    Tokenize,
    /// `POST /detokenize`.
    Detokenize,
    /// `GET /v1/models`.
    Models,
    /// `POST /update_weights` and `POST /update_weights_from_disk`.
    UpdateWeights,
    /// `GET /get_weight_version`.
    WeightVersion,
    /// `POST /test/replicas/{index}/halt`, the test-only fault route (`faults.rs`).
    Faults,
}

impl Endpoint {
    /// Every endpoint, for tables that must cover them all.
    pub const ALL: [Endpoint; 8] = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Tokenize,
        Endpoint::Detokenize,
        Endpoint::Models,
        Endpoint::UpdateWeights,
        Endpoint::WeightVersion,
        Endpoint::Faults,
    ];

    /// The name in the metrics' `endpoint` label and the audit line's `endpoint`.
    pub fn label(self) -> &'static str {
        match self {
            Endpoint::Chat => "chat_completions",
            Endpoint::Completions => "completions",
            Endpoint::Tokenize => "tokenize",
            Endpoint::Detokenize => "detokenize",
            Endpoint::Models => "models",
            Endpoint::UpdateWeights => "update_weights",
            Endpoint::WeightVersion => "get_weight_version",
            Endpoint::Faults => "test_faults",
        }
    }

    /// The role a key needs.
    pub fn role(self) -> Role {
        match self {
            Endpoint::UpdateWeights | Endpoint::Faults => Role::Admin,
            _ => Role::User,
        }
    }

    /// A model endpoint: the drain, the key's limits, the queue bound and the in-flight count
    /// apply to it.
    pub fn admits_work(self) -> bool {
        matches!(
            self,
            Endpoint::Chat | Endpoint::Completions | Endpoint::Tokenize | Endpoint::Detokenize
        )
    }

    /// It takes a JSON body.
    fn reads_body(self) -> bool {
        matches!(
            self,
            Endpoint::Chat
                | Endpoint::Completions
                | Endpoint::Tokenize
                | Endpoint::Detokenize
                | Endpoint::UpdateWeights
        )
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The header a request's id comes in and goes back in.
const REQUEST_ID: &str = "x-request-id";

/// The header a client names its conversation in (for routers; recorded in the audit).
const SESSION_ID: &str = "x-session-id";

/// Status written for a request whose client went away.
pub(super) const CLIENT_GONE: u16 = 499;

/// Seconds a client is told to wait when the server drains or its queue is full.
const BUSY_RETRY_SECS: u64 = 5;

/// The largest body read: long conversations with big tool results exceed axum's 2 MB default.
pub(super) const BODY_CAP: usize = 64 << 20;

/// Header `name` when it is a sensible identifier: 1 to 200 visible ASCII characters.
pub(super) fn identifier<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| (1..=200).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
}

/// The client's `X-Request-Id` when it is a sensible one, else a new one.
fn request_id(headers: &HeaderMap) -> String {
    match identifier(headers, REQUEST_ID) {
        Some(v) => v.to_string(),
        None => {
            let mut bytes = [0u8; 8];
            use ring::rand::SecureRandom;
            let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            match ring::rand::SystemRandom::new().fill(&mut bytes) {
                Ok(()) => format!("req-{}", super::keys::hex(&bytes)),
                // Without randomness: unique within this process.
                Err(_) => format!("req-{}-{n}", api::now()),
            }
        }
    }
}

/// A `Retry-After` of `secs` seconds on `r`.
pub(super) fn retry_after(mut r: Response, secs: u64) -> Response {
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// `r` with the request's id.
pub(super) fn with_id(mut r: Response, id: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(id) {
        r.headers_mut().insert(REQUEST_ID, v);
    }
    r
}

/// Whether a `Content-Type` names JSON (`application/json`, any parameters). A request
/// without one is read as JSON, as the OpenAI clients and curl with `-d` and a JSON body mean.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return true;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let media = text.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/json")
}

/// A request in flight on the model endpoints: counted against `max_queue` until dropped.
pub(super) struct InLine(Arc<Server>);

impl Drop for InLine {
    fn drop(&mut self) {
        self.0.in_line.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request let in: who sent it, its body, and its accounting until it ends.
pub(super) struct Admitted {
    server: Arc<Server>,
    pub(super) endpoint: Endpoint,
    pub(super) caller: Caller,
    pub(super) request_id: String,
    /// The client's `X-Session-ID`, if sent.
    pub(super) session: Option<String>,
    pub(super) arrived: Instant,
    body: String,
    record: Option<AuditRecord>,
    /// The key's use, for the model endpoints.
    held: Option<Held>,
    /// The place in flight, for the model endpoints.
    _place: Option<InLine>,
    ended: bool,
}

/// A request at the door, not let in yet.
struct Arrival<'a> {
    server: &'a Arc<Server>,
    endpoint: Endpoint,
    request_id: String,
    record: Option<AuditRecord>,
    arrived: Instant,
}

impl Arrival<'_> {
    /// Turn it away: counted, audited, answered with `e` (and its id).
    fn refuse(&mut self, key: &str, why: Rejection, e: ApiError) -> Response {
        let status = e.status.as_u16();
        self.server
            .metrics
            .rejected(key, self.endpoint.label(), why);
        self.server
            .metrics
            .answered(key, self.endpoint.label(), status);
        write_line(
            self.server,
            self.record.take(),
            key,
            status,
            why.label(),
            self.arrived,
        );
        with_id(e.into_response(), &self.request_id)
    }
}

/// Let a request to `endpoint` in, or answer why not (see the module docs for the rules and
/// their order). `body` is read only once the key and its role are known.
pub(super) async fn enter(
    server: &Arc<Server>,
    endpoint: Endpoint,
    extensions: &Extensions,
    headers: &HeaderMap,
    body: Body,
) -> Result<Admitted, Response> {
    let arrived = Instant::now();
    let request_id = request_id(headers);
    let session = identifier(headers, SESSION_ID).map(str::to_string);
    let client = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.to_string())
        // Served without connection info (a router used directly): say so, not "".
        .unwrap_or_else(|| "unknown".to_string());
    let record = server.audit.as_ref().map(|_| AuditRecord {
        request_id: request_id.clone(),
        client,
        session_id: session.clone(),
        endpoint: endpoint.label().to_string(),
        ..AuditRecord::default()
    });
    let mut at = Arrival {
        server,
        endpoint,
        request_id,
        record,
        arrived,
    };
    let caller = match authorized(server, headers) {
        Ok(c) => c,
        Err(e) => return Err(at.refuse(UNKNOWN_KEY_ID, Rejection::Unauthorized, e)),
    };
    let key = caller.id.clone();
    if caller.role < endpoint.role() {
        let e = ApiError {
            status: StatusCode::FORBIDDEN,
            kind: "permission_denied",
            message: format!(
                "the key {key:?} may not use this endpoint: it is the operator's (a key with \"admin\": true)"
            ),
        };
        return Err(at.refuse(&key, Rejection::Forbidden, e));
    }
    let body = if endpoint.reads_body() {
        if !is_json(headers) {
            let e = ApiError {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                kind: "invalid_request_error",
                message: "send the body as JSON (Content-Type: application/json)".into(),
            };
            return Err(at.refuse(&key, Rejection::UnsupportedMediaType, e));
        }
        let bytes = match read_body(body, server.read_timeout).await {
            Ok(b) => b,
            Err(e) => return Err(at.refuse(&key, Rejection::InvalidRequest, e)),
        };
        match String::from_utf8(bytes.into()) {
            Ok(text) => text,
            Err(_) => {
                let e = api::bad("the body is not UTF-8 text (send JSON)");
                return Err(at.refuse(&key, Rejection::InvalidRequest, e));
            }
        }
    } else {
        String::new()
    };
    let (held, place) = if endpoint.admits_work() {
        let (held, place) = admit_work(server, &caller)
            .map_err(|(why, r)| retry_after(at.refuse(&key, why, r.error), r.retry))?;
        (Some(held), Some(place))
    } else {
        (None, None)
    };
    Ok(Admitted {
        server: server.clone(),
        endpoint,
        caller,
        request_id: at.request_id,
        session,
        arrived,
        body,
        record: at.record,
        held,
        _place: place,
        ended: false,
    })
}

/// Read a whole body: at most [`BODY_CAP`] bytes, within `timeout`.
async fn read_body(body: Body, timeout: Duration) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, BODY_CAP);
    let collected = match tokio::time::timeout(timeout, limited.collect()).await {
        Ok(c) => c,
        Err(_) => {
            return Err(ApiError {
                status: StatusCode::REQUEST_TIMEOUT,
                kind: "invalid_request_error",
                message: format!("the body did not arrive within {} s", timeout.as_secs_f64()),
            })
        }
    };
    match collected {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "invalid_request_error",
            message: format!("the body is over {} MiB", BODY_CAP >> 20),
        }),
        Err(e) => Err(api::bad(format!("the body could not be read: {e}"))),
    }
}

/// Why the work rules turned a request away, and when to try again (`Retry-After`).
struct Refusal {
    retry: u64,
    error: ApiError,
}

/// The drain, the key's limits and the queue bound, in that order.
fn admit_work(
    server: &Arc<Server>,
    caller: &Caller,
) -> Result<(Held, InLine), (Rejection, Refusal)> {
    let busy = |kind: &'static str, message: String| Refusal {
        retry: BUSY_RETRY_SECS,
        error: ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind,
            message,
        },
    };
    if server.draining.load(Ordering::SeqCst) {
        return Err((
            Rejection::Draining,
            busy(
                "server_draining",
                "the server is shutting down; send the request to another one".into(),
            ),
        ));
    }
    let held = server.usages.admit(caller).map_err(|over| {
        let key = &caller.id;
        let message = match over {
            OverLimit::Parallel { limit } => {
                format!("the key {key:?} has {limit} requests in flight, its max_parallel_requests")
            }
            OverLimit::Tokens { limit, .. } => {
                format!("the key {key:?} used its {limit} tokens per minute; try again later")
            }
        };
        (
            Rejection::RateLimited,
            Refusal {
                retry: over.retry_after_secs(),
                error: ApiError {
                    status: StatusCode::TOO_MANY_REQUESTS,
                    kind: "rate_limit_exceeded",
                    message,
                },
            },
        )
    })?;
    // Exactly `max_queue` requests may be in flight: the one that would be one more is
    // turned away (the same rule as `Server::readiness`).
    if server.in_line.fetch_add(1, Ordering::SeqCst) >= server.max_queue {
        server.in_line.fetch_sub(1, Ordering::SeqCst);
        return Err((
            Rejection::QueueFull,
            busy(
                "server_busy",
                format!(
                    "{} requests are already in flight; try again later",
                    server.max_queue
                ),
            ),
        ));
    }
    Ok((held, InLine(server.clone())))
}

/// Complete and write an audit line; a failure is logged and counted, not hidden.
fn write_line(
    server: &Server,
    record: Option<AuditRecord>,
    key: &str,
    status: u16,
    reason: &str,
    arrived: Instant,
) {
    let (Some(log), Some(mut r)) = (server.audit.as_ref(), record) else {
        return;
    };
    r.ts = AuditLog::now();
    r.key_id = key.to_string();
    r.status = status;
    r.finish_reason = reason.to_string();
    r.duration_ms = arrived.elapsed().as_millis() as u64;
    if let Err(e) = log.write(&r) {
        server.metrics.audit_failed(key);
        tracing::error!(request_id = %r.request_id, "the audit line was not written: {e}");
    }
}

impl Admitted {
    /// The server it came to.
    pub(super) fn server(&self) -> &Arc<Server> {
        &self.server
    }

    /// The body, taken (empty for endpoints without one, and once taken).
    pub(super) fn take_body(&mut self) -> String {
        std::mem::take(&mut self.body)
    }

    /// The audit line in the making, when there is an audit trail.
    pub(super) fn record(&mut self) -> Option<&mut AuditRecord> {
        self.record.as_mut()
    }

    /// The endpoint refused it after the door (a bad body, a prompt too long): counted as
    /// turned away for `why`, audited, answered with `e` and the request's id.
    pub(super) fn refuse(mut self, why: Rejection, e: ApiError) -> Response {
        self.refused(why, e.status.as_u16());
        with_id(e.into_response(), &self.request_id)
    }

    /// [`Self::refuse`] without the answer (the caller has one already).
    pub(super) fn refused(&mut self, why: Rejection, status: u16) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let key = self.caller.id.clone();
        self.server
            .metrics
            .rejected(&key, self.endpoint.label(), why);
        self.server
            .metrics
            .answered(&key, self.endpoint.label(), status);
        write_line(
            &self.server,
            self.record.take(),
            &key,
            status,
            why.label(),
            self.arrived,
        );
    }

    /// It ended with `status` for `reason`; a generation's figures count against the key's
    /// tokens and go into the audit line with the tools its reply called.
    pub(super) fn end(
        &mut self,
        status: u16,
        reason: &str,
        figures: Option<&Figures>,
        tool_names: Vec<String>,
    ) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let key = self.caller.id.clone();
        if let Some(f) = figures {
            if let Some(h) = &self.held {
                h.used((f.prompt_tokens + f.generated_tokens) as u64);
            }
            if let Some(r) = self.record.as_mut() {
                r.prompt_tokens = f.prompt_tokens;
                r.completion_tokens = f.generated_tokens;
                r.cached_tokens = f.reused_tokens;
            }
        }
        if let Some(r) = self.record.as_mut() {
            r.tool_names = tool_names;
        }
        self.server
            .metrics
            .answered(&key, self.endpoint.label(), status);
        write_line(
            &self.server,
            self.record.take(),
            &key,
            status,
            reason,
            self.arrived,
        );
    }

    /// Answer `r` and end the request with its status: `ok` for a success, else `error`.
    pub(super) fn answer(mut self, r: Response) -> Response {
        let status = r.status().as_u16();
        let reason = if r.status().is_success() {
            "ok"
        } else {
            "error"
        };
        self.end(status, reason, None, Vec::new());
        with_id(r, &self.request_id)
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        // Dropped before an end: the client went away while it was handled.
        self.end(CLIENT_GONE, "abort", None, Vec::new());
    }
}

/// The key of `Authorization: Bearer TOKEN` (see [`KeyStore::caller`]), or 401.
fn authorized(server: &Server, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    server.keys.caller(token).ok_or_else(|| ApiError {
        status: StatusCode::UNAUTHORIZED,
        kind: "invalid_api_key",
        message: "missing or unknown API key (send Authorization: Bearer KEY)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_only() {
        let mut h = HeaderMap::new();
        assert!(is_json(&h), "no Content-Type is read as JSON");
        for (value, json) in [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
            ("multipart/form-data; boundary=x", false),
        ] {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(is_json(&h), json, "{value}");
        }
    }

    #[test]
    fn every_operator_endpoint_needs_the_admin_role_and_no_model_endpoint_does() {
        for e in Endpoint::ALL {
            let operator = matches!(e, Endpoint::UpdateWeights | Endpoint::Faults);
            assert_eq!(e.role() == Role::Admin, operator, "{e:?}");
            assert!(!(e.admits_work() && operator), "{e:?}");
        }
        let labels: std::collections::HashSet<_> =
            Endpoint::ALL.iter().map(|e| e.label()).collect();
        assert_eq!(labels.len(), Endpoint::ALL.len(), "labels are unique");
    }
}
