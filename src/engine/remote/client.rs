//! The HTTP side of one request: find the model name, send, retry, stream, cancel, and end the
//! event stream with exactly one `Done` or `Failed`.
//!
//! Retries: connection errors, timeouts before the response, 429 and 500/502/503/504 are
//! retried `retries` times, waiting `backoff_ms` doubled each time (capped at 8 s) or the
//! server's `Retry-After` (capped at 30 s). Nothing is retried once output was delivered.
//! Cancellation is checked every 25 ms and when the receiver is dropped; it drops the response,
//! which closes the connection. Each request carries `X-Session-ID`, the same for every turn
//! of a conversation, for routers with session affinity: the sequence's name where the caller
//! gave one (a batch's `<instance_id>-<attempt>`), else `crate::protocol::session_id`.

use super::decode::Decoder;
use super::request::{body, ChatRequest};
use super::{RemoteError, Shared};
use crate::engine::{EngineEvent, Figures, Generation, Reuse, StopReason};
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// How an attempt ended when it did not produce a reply.
enum Failure {
    /// Worth another try (nothing was delivered).
    Retry {
        error: RemoteError,
        after: Option<Duration>,
    },
    Fatal(RemoteError),
}

/// The header that names a request's conversation to routers (`crate::protocol::session_id`).
const SESSION_HEADER: &str = "x-session-id";

/// Why a request stopped early without an error.
struct Cancelled;

pub(crate) async fn run(
    shared: Arc<Shared>,
    request: ChatRequest,
    tx: UnboundedSender<EngineEvent>,
    cancel: Arc<AtomicBool>,
) {
    let started = Instant::now();
    let watch = Watch {
        cancel: &cancel,
        tx: &tx,
    };
    let outcome = tokio::select! {
        r = request_with_retries(&shared, &request, &tx, started) => r,
        _ = watch.cancelled() => Err(Ok(Cancelled)),
    };
    let event = match outcome {
        Ok(g) => EngineEvent::Done(g),
        Err(Ok(Cancelled)) => EngineEvent::Done(Generation::empty(
            StopReason::Cancelled,
            figures(None, 0, started, None),
        )),
        Err(Err(e)) => EngineEvent::Failed(e.into()),
    };
    let _ = tx.send(event);
}

struct Watch<'a> {
    cancel: &'a AtomicBool,
    tx: &'a UnboundedSender<EngineEvent>,
}

impl Watch<'_> {
    async fn cancelled(&self) {
        while !self.cancel.load(Ordering::Relaxed) && !self.tx.is_closed() {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

async fn request_with_retries(
    shared: &Shared,
    request: &ChatRequest,
    tx: &UnboundedSender<EngineEvent>,
    started: Instant,
) -> Result<Generation, Result<Cancelled, RemoteError>> {
    let model = model_name(shared).await.map_err(Err)?;
    let payload = body(request, &model, &shared.settings.extra_body).to_string();
    // The same for every turn of a conversation: a router keeps it on one server.
    let session = request
        .session
        .clone()
        .unwrap_or_else(|| crate::protocol::session_id(&request.messages));
    let mut delay = Duration::from_millis(shared.settings.backoff_ms.max(1));
    let mut attempt = 0;
    loop {
        match attempt_once(shared, &payload, &session, tx, started).await {
            Ok((mut g, reply)) => {
                if reply.usage.is_none() {
                    count_on_client(shared, request, &reply.text, &mut g.figures);
                }
                return Ok(g);
            }
            Err(Failure::Fatal(e)) => return Err(Err(e)),
            Err(Failure::Retry { error, after }) => {
                if attempt >= shared.settings.retries {
                    return Err(Err(error));
                }
                let wait = after
                    .map(|a| a.min(Duration::from_secs(30)))
                    .unwrap_or(delay);
                tracing::warn!("remote engine: {error}; retrying in {wait:?}");
                tokio::time::sleep(wait).await;
                delay = (delay * 2).min(Duration::from_secs(8));
                attempt += 1;
            }
        }
    }
}

fn with_auth(shared: &Shared, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match &shared.api_key {
        Some(k) => rb.bearer_auth(k),
        None => rb,
    }
}

/// A transport error in words, with whether it is worth retrying.
fn transport(shared: &Shared, url: &str, e: reqwest::Error) -> Failure {
    let error = if e.is_timeout() {
        RemoteError::Timeout {
            url: url.to_string(),
            secs: shared.settings.read_timeout_secs,
        }
    } else {
        RemoteError::Unreachable {
            url: url.to_string(),
            detail: error_chain(&e),
        }
    };
    if e.is_connect() || e.is_timeout() || e.is_request() {
        Failure::Retry { error, after: None }
    } else {
        Failure::Fatal(error)
    }
}

/// The root cause of an error (reqwest's own message is only the outermost part, and the
/// chain repeats the URL): `Connection refused (os error 111)`, `dns error: ...`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut root = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        root = c.to_string();
        cur = c.source();
    }
    root
}

/// The message of an error body: OpenAI's `{"error": {"message"}}`, FastAPI's `{"detail"}`,
/// or the text itself.
fn error_message(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let v: Option<Value> = serde_json::from_str(&text).ok();
    let found = v.as_ref().and_then(|v| {
        let e = v.get("error").unwrap_or(v);
        e.get("message")
            .or_else(|| e.get("detail"))
            .map(|m| {
                m.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| m.to_string())
            })
            .or_else(|| e.as_str().map(str::to_string))
    });
    let msg = found.unwrap_or_else(|| text.trim().to_string());
    let mut msg: String = msg.chars().take(500).collect();
    if msg.is_empty() {
        msg = "(no message)".to_string();
    }
    msg
}

/// What a finished reply leaves for the figures besides the [`Generation`].
struct Reply {
    usage: Option<super::decode::Usage>,
    text: String,
}

impl Reply {
    fn of(decoder: Decoder) -> Self {
        Self {
            usage: decoder.usage,
            text: decoder.text,
        }
    }
}

/// The server reported no usage: count the prompt and the reply with the tokenizer, when one
/// is set (`super::count`); without one the figures stay as they are (the reply's pieces).
fn count_on_client(shared: &Shared, request: &ChatRequest, text: &str, f: &mut Figures) {
    let Some(counter) = &shared.counter else {
        return;
    };
    if let Some(p) = counter.prompt(request) {
        f.prompt_tokens = p;
        f.evaluated_tokens = p;
    }
    if let Some(g) = counter.text(text) {
        f.generated_tokens = g;
    }
}

async fn attempt_once(
    shared: &Shared,
    payload: &str,
    session: &str,
    tx: &UnboundedSender<EngineEvent>,
    started: Instant,
) -> Result<(Generation, Reply), Failure> {
    let url = &shared.endpoint.chat;
    let rb = shared
        .http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .header(SESSION_HEADER, session)
        .body(payload.to_string());
    let resp = with_auth(shared, rb)
        .send()
        .await
        .map_err(|e| transport(shared, url, e))?;
    let status = resp.status();
    if !status.is_success() {
        let after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let error = match resp.bytes().await {
            Ok(bytes) => RemoteError::Status {
                url: url.clone(),
                status: status.as_u16(),
                message: error_message(&bytes),
            },
            Err(source) => RemoteError::UnreadableBody {
                url: url.clone(),
                status: status.as_u16(),
                source,
            },
        };
        return Err(match status.as_u16() {
            429 | 500 | 502 | 503 | 504 => Failure::Retry { error, after },
            _ => Failure::Fatal(error),
        });
    }
    let sse = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let mut decoder = Decoder::new(shared.settings.output, &shared.learned);
    let malformed = |detail: String| RemoteError::Malformed {
        url: url.clone(),
        detail,
    };
    if !sse {
        // A server that ignored `stream: true`: one whole response.
        let bytes = resp.bytes().await.map_err(|e| transport(shared, url, e))?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Failure::Fatal(malformed(format!("{e}: {}", snippet(&bytes)))))?;
        send_all(tx, decoder.chunk(&v, &shared.learned));
        send_all(tx, decoder.finish());
        return Ok((generation(&decoder, started), Reply::of(decoder)));
    }
    let mut stream = resp.bytes_stream();
    let mut sse_decoder = super::sse::SseDecoder::default();
    let mut done = false;
    let mut saw_done = false;
    while !done {
        let datas = match stream.next().await {
            Some(Ok(bytes)) => sse_decoder.push(&bytes),
            Some(Err(e)) => {
                let error = match transport(shared, url, e) {
                    Failure::Retry { error, .. } | Failure::Fatal(error) => error,
                };
                let error = match error {
                    RemoteError::Unreachable { url, detail } => {
                        RemoteError::Dropped { url, detail }
                    }
                    other => other,
                };
                return Err(Failure::Fatal(error));
            }
            None => {
                done = true;
                sse_decoder.finish()
            }
        };
        for data in datas {
            let data = data.trim();
            if data == "[DONE]" {
                (done, saw_done) = (true, true);
                break;
            }
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(data).map_err(|e| {
                Failure::Fatal(malformed(format!("{e}: {}", snippet(data.as_bytes()))))
            })?;
            if let Some(err) = v.get("error") {
                return Err(Failure::Fatal(RemoteError::Status {
                    url: url.clone(),
                    status: err.get("code").and_then(Value::as_u64).unwrap_or(500) as u16,
                    message: error_message(data.as_bytes()),
                }));
            }
            send_all(tx, decoder.chunk(&v, &shared.learned));
        }
    }
    if !saw_done && decoder.finish.is_none() {
        let detail = "the stream ended before the reply finished".to_string();
        let error = RemoteError::Dropped {
            url: url.clone(),
            detail,
        };
        return Err(if decoder.delivered {
            Failure::Fatal(error)
        } else {
            Failure::Retry { error, after: None }
        });
    }
    send_all(tx, decoder.finish());
    Ok((generation(&decoder, started), Reply::of(decoder)))
}

fn send_all(tx: &UnboundedSender<EngineEvent>, events: Vec<EngineEvent>) {
    for e in events {
        let _ = tx.send(e);
    }
}

fn snippet(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(200).collect()
}

fn generation(decoder: &Decoder, started: Instant) -> Generation {
    let mut g = Generation::empty(
        decoder.stop_reason(),
        figures(decoder.usage, decoder.deltas, started, decoder.first_output),
    );
    g.sampled = decoder.sampled();
    g.prompt_tokens.clone_from(&decoder.prompt_token_ids);
    g
}

/// Figures from the server's counts (reused = its cached prompt tokens) and the client's clock
/// (prompt reading lasts until the first output arrives).
fn figures(
    usage: Option<super::decode::Usage>,
    deltas: usize,
    started: Instant,
    first_output: Option<Instant>,
) -> Figures {
    let u = usage.unwrap_or_default();
    let now = Instant::now();
    let first = first_output.unwrap_or(now);
    Figures {
        prompt_tokens: u.prompt,
        reused_tokens: u.cached,
        evaluated_tokens: u.prompt.saturating_sub(u.cached),
        reuse: if u.cached > 0 {
            Reuse::Extended
        } else {
            Reuse::Fresh
        },
        generated_tokens: if usage.is_some() {
            u.completion
        } else {
            deltas
        },
        prefill_seconds: first.duration_since(started).as_secs_f64(),
        decode_seconds: now.duration_since(first).as_secs_f64(),
        dropped_pin: None,
        draft: None,
    }
}

/// The configured model name, or the first one the server lists (asked once).
pub(crate) async fn model_name(shared: &Shared) -> Result<String, RemoteError> {
    shared
        .model
        .get_or_try_init(|| async {
            let names = list_models(shared).await?;
            names
                .into_iter()
                .next()
                .ok_or_else(|| RemoteError::NoModel {
                    url: shared.endpoint.models.clone(),
                })
        })
        .await
        .cloned()
}

/// The ids the server lists at `/v1/models`.
pub(crate) async fn list_models(shared: &Shared) -> Result<Vec<String>, RemoteError> {
    let url = &shared.endpoint.models;
    let resp = with_auth(shared, shared.http.get(url))
        .send()
        .await
        .map_err(|e| match transport(shared, url, e) {
            Failure::Retry { error, .. } | Failure::Fatal(error) => error,
        })?;
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|source| RemoteError::UnreadableBody {
            url: url.clone(),
            status: status.as_u16(),
            source,
        })?;
    if !status.is_success() {
        return Err(RemoteError::Status {
            url: url.clone(),
            status: status.as_u16(),
            message: error_message(&bytes),
        });
    }
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| RemoteError::Malformed {
        url: url.clone(),
        detail: format!("{e}: {}", snippet(&bytes)),
    })?;
    let ids = v
        .get("data")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_in_their_common_forms() {
        assert_eq!(
            error_message(br#"{"error": {"message": "bad key", "type": "auth"}}"#),
            "bad key"
        );
        assert_eq!(error_message(br#"{"detail": "Not Found"}"#), "Not Found");
        assert_eq!(error_message(br#"{"error": "overloaded"}"#), "overloaded");
        assert_eq!(error_message(b"  plain text "), "plain text");
        assert_eq!(error_message(b""), "(no message)");
    }
}
