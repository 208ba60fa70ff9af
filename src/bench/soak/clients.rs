//! The soak's clients: each one sends requests one after the other until the soak ends, as
//! one of three keys (the third rate-limited), a mix drawn from its own seed: chat or
//! completions, chat streamed or whole (completions are whole only), one choice or four, and
//! a quarter of the streams hung up after their first three events. Each request carries its
//! own `X-Request-Id`, and what the client saw of it is kept ([`Sent`]): one whole answer with
//! its status, a planned hang-up, or what was wrong.
//!
//! Owns: the requests. Does not own: the forms an answer must have (`answers.rs`), the fault
//! schedule (`schedule.rs`) or the counting (`tally.rs`).

use super::answers::{error_seen, find, whole, Events};
use crate::serve::Endpoint;
use std::time::{Duration, Instant};

/// Tokens of the clients' keys; the third key is rate-limited (`schedule::keys_file`).
pub const CLIENT_KEYS: [(&str, &str); 3] = [
    ("alpha", "soak-token-alpha"),
    ("beta", "soak-token-beta"),
    ("gamma", "soak-token-gamma"),
];

/// Choices asked by a request that asks for several.
pub const CHOICES: usize = 4;

/// Data events a hanging-up client reads before it closes the connection.
const HANG_UP_AFTER: usize = 3;

/// The longest a request may take before it counts as unanswered.
const REQUEST_LIMIT: Duration = Duration::from_secs(120);

/// What a request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub endpoint: Endpoint,
    pub stream: bool,
    pub n: usize,
    /// The client hangs up after the first events (long replies, so that it leaves mid-way).
    pub hang_up: bool,
}

/// What the client saw of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// One whole answer: its status (a stream's error event names the status its type has)
    /// and an error's `type`.
    Answer { status: u16, error: Option<String> },
    /// The client hung up mid-stream as planned; the server counts it as 499.
    HungUp,
    /// Not one whole answer, and why.
    Broken(String),
}

/// One request and what came of it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub id: String,
    pub key: String,
    pub endpoint: Endpoint,
    /// `None` for an operator's request or a probe.
    pub shape: Option<Shape>,
    pub started: Instant,
    pub ended: Instant,
    pub seen: Seen,
    /// For a hang-up: the status the server recorded, once read back (`checks::hang_ups`).
    pub recorded: Option<u16>,
}

impl Sent {
    /// The status the server should have counted and audited (for a hang-up 499, or what the
    /// server recorded where `checks::hang_ups` accepted it); `None` when no whole answer came.
    pub fn code(&self) -> Option<u16> {
        match &self.seen {
            Seen::Answer { status, .. } => Some(*status),
            Seen::HungUp => Some(self.recorded.unwrap_or(499)),
            Seen::Broken(_) => None,
        }
    }
}

/// A small deterministic generator (splitmix64), so that a client's mix follows its seed.
pub(super) struct Mix(u64);

impl Mix {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn shape(&mut self) -> Shape {
        let endpoint = if self.one_in(2) {
            Endpoint::Chat
        } else {
            Endpoint::Completions
        };
        // `/v1/completions` answers whole only (it refuses `stream`).
        let stream = endpoint == Endpoint::Chat && self.one_in(2);
        Shape {
            endpoint,
            stream,
            n: if self.one_in(4) { CHOICES } else { 1 },
            hang_up: stream && self.one_in(4),
        }
    }
}

/// Client `c`: requests until `until`, each answered (or hung up) before the next.
pub async fn client(c: usize, http: reqwest::Client, base: String, until: Instant) -> Vec<Sent> {
    let (key, token) = CLIENT_KEYS[c % CLIENT_KEYS.len()];
    let mut mix = Mix::new(0x50a4_0000 + c as u64);
    let mut sent = Vec::new();
    let mut k = 0usize;
    while Instant::now() < until {
        let shape = mix.shape();
        let id = format!("soak-{c}-{k}");
        let body = body(c, k, shape);
        let path = match shape.endpoint {
            Endpoint::Chat => "/v1/chat/completions",
            _ => "/v1/completions",
        };
        let started = Instant::now();
        let req = http
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .header("x-request-id", &id)
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(REQUEST_LIMIT);
        let seen = ask(req, &id, shape).await;
        let limited = matches!(seen, Seen::Answer { status: 429, .. });
        sent.push(Sent {
            id,
            key: key.to_string(),
            endpoint: shape.endpoint,
            shape: Some(shape),
            started,
            ended: Instant::now(),
            seen,
            recorded: None,
        });
        if limited {
            // Back off a little (not the whole Retry-After: the soak wants the key busy).
            tokio::time::sleep(Duration::from_millis(200 + (mix.next() % 200))).await;
        }
        k += 1;
    }
    sent
}

/// The request's body: each client comes back to a conversation a few times (memory reused,
/// moved when its replica fails) and begins a new one every few requests, as agents begin new
/// tasks (so that a replica that comes back is given new conversations).
fn body(c: usize, k: usize, shape: Shape) -> serde_json::Value {
    let task = format!(
        "client {c}, task {}: list the files and run the tests",
        k / 6
    );
    let max_tokens = if shape.hang_up { 1000 } else { 12 };
    let mut b = match shape.endpoint {
        Endpoint::Chat => serde_json::json!({
            "messages": [{"role": "system", "content": format!("You are soak agent {c}.")},
                         {"role": "user", "content": task}],
        }),
        _ => serde_json::json!({"prompt": format!("Soak agent {c}. {task}\n")}),
    };
    b["model"] = "soak".into();
    b["max_tokens"] = max_tokens.into();
    b["n"] = shape.n.into();
    b["stream"] = shape.stream.into();
    b["temperature"] = 0.8.into();
    if shape.hang_up {
        b["ignore_eos"] = true.into();
    }
    b
}

/// Send `req` and read its answer as a client of `shape` would.
async fn ask(req: reqwest::RequestBuilder, id: &str, shape: Shape) -> Seen {
    let mut resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return Seen::Broken(format!("no answer: {e}")),
    };
    if let Some(wrong) = wrong_id(&resp, id) {
        return Seen::Broken(wrong);
    }
    let status = resp.status().as_u16();
    let streamed = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if status != 200 || !streamed {
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Seen::Broken(format!("{status}, then the body broke: {e}")),
        };
        return whole(status, &bytes, shape);
    }
    if !shape.stream {
        return Seen::Broken("a stream came for a request that did not ask for one".into());
    }
    let mut events = Events::new(shape.n);
    let mut buf = Vec::new();
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(e) => return Seen::Broken(format!("the stream broke: {e}")),
        };
        buf.extend_from_slice(&chunk);
        while let Some(end) = find(&buf, b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            if let Err(wrong) = events.read(&String::from_utf8_lossy(&event)) {
                return Seen::Broken(wrong);
            }
        }
        if shape.hang_up && events.data >= HANG_UP_AFTER && events.done == 0 {
            if let Some(kind) = &events.error {
                return error_seen(kind);
            }
            // Dropping the response closes the connection mid-stream.
            drop(resp);
            return Seen::HungUp;
        }
    }
    events.verdict()
}

fn wrong_id(resp: &reqwest::Response, id: &str) -> Option<String> {
    let got = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok());
    (got != Some(id)).then(|| format!("answered with request id {got:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_every_shape() {
        let mut m = Mix::new(7);
        let shapes: Vec<Shape> = (0..400).map(|_| m.shape()).collect();
        assert!(shapes.iter().any(|s| s.hang_up && s.n == CHOICES));
        assert!(shapes
            .iter()
            .any(|s| !s.stream && s.endpoint == Endpoint::Chat));
        assert!(shapes
            .iter()
            .any(|s| s.n > 1 && s.endpoint == Endpoint::Completions));
        assert!(shapes.iter().all(|s| s.stream || !s.hang_up));
    }
}
