//! Reading one answer as a client must find it: a whole body (an OpenAI error with its
//! `type`, or exactly `n` choices indexed 0 to n - 1) or a stream of server-sent events (each
//! choice finished once, then exactly one `[DONE]` and nothing after it, or one error event
//! naming the status its type has in `serve`).
//!
//! Owns: those forms. Does not own: sending requests (`clients.rs`).

use super::clients::{Seen, Shape};
use std::collections::BTreeSet;

/// The status an error event of a stream stands for (the one `serve` gives that error type).
fn status_of(kind: &str) -> Option<u16> {
    match kind {
        "engine_unavailable" => Some(503),
        "engine_error" => Some(500),
        "upstream_error" => Some(502),
        "invalid_request_error" | "context_length_exceeded" => Some(400),
        _ => None,
    }
}

pub(super) fn error_seen(kind: &str) -> Seen {
    match status_of(kind) {
        Some(status) => Seen::Answer {
            status,
            error: Some(kind.to_string()),
        },
        None => Seen::Broken(format!("a stream's error of unknown type {kind:?}")),
    }
}

pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A whole answer: an error with its type, or exactly `n` choices indexed 0 to n - 1.
pub(super) fn whole(status: u16, body: &[u8], shape: Shape) -> Seen {
    let v: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return Seen::Broken(format!("{status} with a body that is not JSON")),
    };
    if status != 200 {
        let error = v["error"]["type"].as_str().map(str::to_string);
        if error.is_none() {
            return Seen::Broken(format!("{status} without an OpenAI error"));
        }
        return Seen::Answer { status, error };
    }
    let indexes: Vec<u64> = v["choices"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["index"].as_u64()).collect())
        .unwrap_or_default();
    let want: Vec<u64> = (0..shape.n as u64).collect();
    let mut got = indexes.clone();
    got.sort_unstable();
    if got != want {
        return Seen::Broken(format!("choices indexed {indexes:?} for n = {}", shape.n));
    }
    Seen::Answer {
        status,
        error: None,
    }
}

/// What a stream's events have said so far.
pub(super) struct Events {
    n: usize,
    /// Data events read.
    pub(super) data: usize,
    /// `[DONE]` events read.
    pub(super) done: usize,
    finished: BTreeSet<u64>,
    /// The type of the error event, if one came.
    pub(super) error: Option<String>,
}

impl Events {
    pub(super) fn new(n: usize) -> Self {
        Self {
            n,
            data: 0,
            done: 0,
            finished: BTreeSet::new(),
            error: None,
        }
    }

    /// One event (`data: ...` lines; comments are skipped); `Err` when it breaks the form.
    pub(super) fn read(&mut self, event: &str) -> Result<(), String> {
        for line in event.lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if self.done > 0 {
                return Err(format!("an event after [DONE]: {data}"));
            }
            if data == "[DONE]" {
                self.done += 1;
                continue;
            }
            self.data += 1;
            let v: serde_json::Value =
                serde_json::from_str(data).map_err(|_| format!("an event not JSON: {data}"))?;
            if let Some(kind) = v["error"]["type"].as_str() {
                if self.error.replace(kind.to_string()).is_some() {
                    return Err("two error events".into());
                }
                continue;
            }
            for c in v["choices"].as_array().into_iter().flatten() {
                if c["finish_reason"].is_string() {
                    let i = c["index"].as_u64().unwrap_or(u64::MAX);
                    if i >= self.n as u64 || !self.finished.insert(i) {
                        return Err(format!("choice {i} finished twice or out of range"));
                    }
                }
            }
        }
        Ok(())
    }

    /// The stream ended: one [DONE] after every choice's end, or after one error.
    pub(super) fn verdict(self) -> Seen {
        if self.done != 1 {
            return Seen::Broken(format!("{} [DONE] events", self.done));
        }
        if let Some(kind) = &self.error {
            return error_seen(kind);
        }
        if self.finished.len() != self.n {
            return Seen::Broken(format!(
                "{} of {} choices finished before [DONE]",
                self.finished.len(),
                self.n
            ));
        }
        Seen::Answer {
            status: 200,
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_whole_with_every_choice_finished_then_one_done() {
        let mut e = Events::new(2);
        let fin = |i| format!(r#"data: {{"choices":[{{"index":{i},"finish_reason":"stop"}}]}}"#);
        e.read(&fin(0)).unwrap();
        e.read(&fin(1)).unwrap();
        e.read("data: [DONE]").unwrap();
        assert_eq!(
            e.verdict(),
            Seen::Answer {
                status: 200,
                error: None
            }
        );

        let mut twice = Events::new(2);
        twice.read(&fin(0)).unwrap();
        assert!(twice.read(&fin(0)).is_err());

        let mut short = Events::new(2);
        short.read(&fin(0)).unwrap();
        short.read("data: [DONE]").unwrap();
        assert!(matches!(short.verdict(), Seen::Broken(_)));

        let mut failed = Events::new(1);
        failed
            .read(r#"data: {"error":{"type":"engine_unavailable"}}"#)
            .unwrap();
        failed.read("data: [DONE]").unwrap();
        assert!(failed.read("data: [DONE]").is_err());
    }
}
