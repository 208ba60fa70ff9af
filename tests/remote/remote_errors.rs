//! The endpoint engine's failure handling, against a loopback socket that answers with exact
//! bytes (a server that is down, overloaded, refuses the key, stalls, breaks the stream or
//! speaks something else): retries with backoff on 429/5xx, no retry once output arrived or
//! on other statuses, and an error that says what happened.

use crate::remote_common::{self, client, collect_stream, Collected};
use lilypad::engine::remote::{ChatRequest, OutputStyle};
use lilypad::engine::{SamplingParams, StopReason};
use lilypad::protocol::Message;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A loopback server that answers the n-th connection with `replies[n]` (the last one
/// repeats), then closes it. `None` stalls without answering.
struct Canned {
    base: String,
    hits: Arc<AtomicUsize>,
}

fn canned(replies: Vec<Option<String>>) -> Canned {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let reply = replies[n.min(replies.len() - 1)].clone();
            read_request(&mut s);
            match reply {
                Some(r) => {
                    let _ = s.write_all(r.as_bytes());
                }
                None => std::thread::sleep(Duration::from_secs(5)),
            }
        }
    });
    Canned { base, hits }
}

/// Read the headers and the body (by Content-Length).
fn read_request(s: &mut std::net::TcpStream) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    let _ = s.read_exact(&mut body);
}

fn http(status: &str, headers: &str, body: &str) -> Option<String> {
    Some(format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ))
}

fn sse(events: &[&str]) -> Option<String> {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    http("200 OK", "Content-Type: text/event-stream\r\n", &body)
}

const HELLO: &str =
    r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm"},"finish_reason":null}]}"#;
const FINISH: &str =
    r#"{"choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":"stop"}]}"#;
const USAGE: &str = r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}}"#;

fn ask(base: &str, retries: u32) -> Collected {
    let engine = client(base, |s| {
        s.retries = retries;
        s.backoff_ms = 10;
        s.read_timeout_secs = 1;
        s.model_name = Some("m".into());
    });
    collect_stream(engine.chat(ChatRequest {
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_tokens: 16,
        sampling: SamplingParams::greedy(),
        report: Default::default(),
        session: None,
    }))
}

#[test]
fn unreachable_server_is_named() {
    let port = remote_common::free_port();
    let r = ask(&format!("http://127.0.0.1:{port}"), 1);
    let err = r.failed.expect("failed");
    assert!(err.contains("cannot reach the server"), "{err}");
    assert!(err.contains(&port.to_string()), "{err}");
}

#[test]
fn overload_is_retried_then_the_reply_streams_with_server_figures() {
    let c = canned(vec![
        http(
            "503 Service Unavailable",
            "",
            r#"{"error":{"message":"busy"}}"#,
        ),
        http("429 Too Many Requests", "Retry-After: 0\r\n", "slow down"),
        sse(&[HELLO, FINISH, USAGE, "[DONE]"]),
    ]);
    let r = ask(&c.base, 3);
    assert_eq!(c.hits.load(Ordering::SeqCst), 3);
    let g = r.done.expect("done");
    assert_eq!((r.reasoning.as_str(), r.content.as_str()), ("hm", "hello"));
    assert_eq!(g.stop, StopReason::EndOfGeneration);
    let f = g.figures;
    assert_eq!(
        (f.prompt_tokens, f.reused_tokens, f.evaluated_tokens),
        (11, 4, 7)
    );
    assert_eq!(f.generated_tokens, 2);
}

#[test]
fn retries_run_out_with_the_servers_message() {
    let c = canned(vec![http(
        "503 Service Unavailable",
        "",
        r#"{"error":{"message":"no capacity"}}"#,
    )]);
    let err = ask(&c.base, 2).failed.expect("failed");
    assert_eq!(c.hits.load(Ordering::SeqCst), 3, "one try and two retries");
    assert!(
        err.contains("HTTP 503") && err.contains("no capacity"),
        "{err}"
    );
}

#[test]
fn other_statuses_are_not_retried() {
    let c = canned(vec![http(
        "401 Unauthorized",
        "Content-Type: application/json\r\n",
        r#"{"detail":"Invalid API key"}"#,
    )]);
    let err = ask(&c.base, 3).failed.expect("failed");
    assert_eq!(c.hits.load(Ordering::SeqCst), 1);
    assert!(
        err.contains("HTTP 401") && err.contains("Invalid API key"),
        "{err}"
    );
}

#[test]
fn a_refusal_whose_reason_breaks_off_says_so() {
    // The body is announced as 100 bytes, and the connection closes after 5.
    let broken =
        "HTTP/1.1 401 Unauthorized\r\nContent-Length: 100\r\nConnection: close\r\n\r\nshort";
    let c = canned(vec![Some(broken.to_string())]);
    let err = ask(&c.base, 3).failed.expect("failed");
    assert_eq!(c.hits.load(Ordering::SeqCst), 1, "a 401 is not retried");
    assert!(
        err.contains("HTTP 401") && err.contains("could not be read"),
        "{err}"
    );
    let models = client(&c.base, |_| {}).list_models();
    let err = models.expect_err("a broken list of models").to_string();
    assert!(
        err.contains("/v1/models") && err.contains("could not be read"),
        "{err}"
    );
}

#[test]
fn malformed_events_are_reported() {
    let c = canned(vec![sse(&[HELLO, "this is not json"])]);
    let r = ask(&c.base, 0);
    let err = r.failed.expect("failed");
    assert!(
        err.contains("not an OpenAI chat-completions reply"),
        "{err}"
    );
    assert!(err.contains("this is not json"), "{err}");
    assert_eq!(
        r.reasoning, "hm",
        "what came before the bad event was delivered"
    );
}

#[test]
fn a_stream_that_breaks_off_is_an_error_not_an_answer() {
    let c = canned(vec![sse(&[HELLO])]);
    let r = ask(&c.base, 2);
    assert_eq!(c.hits.load(Ordering::SeqCst), 1, "no retry after output");
    let err = r.failed.expect("failed");
    assert!(err.contains("broke in the middle of the reply"), "{err}");
}

#[test]
fn a_stalled_server_times_out() {
    let c = canned(vec![None]);
    let r = ask(&c.base, 0);
    let err = r.failed.expect("failed");
    assert!(err.contains("did not answer within 1 s"), "{err}");
}

#[test]
fn a_server_that_ignores_streaming_still_works_and_raw_text_stays_raw() {
    let whole = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"let me think</think>\n\ndone"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":16}}"#;
    let c = canned(vec![http(
        "200 OK",
        "Content-Type: application/json\r\n",
        whole,
    )]);
    let engine = client(&c.base, |s| s.model_name = Some("m".into()));
    let r = collect_stream(engine.chat(ChatRequest {
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_tokens: 16,
        sampling: SamplingParams::greedy(),
        report: Default::default(),
        session: None,
    }));
    assert_eq!(r.pieces, "let me think</think>\n\ndone", "{r:?}");
    assert_eq!(r.done.expect("done").stop, StopReason::TokenCap);
    assert_eq!(engine.output_style(), OutputStyle::Raw);
}
