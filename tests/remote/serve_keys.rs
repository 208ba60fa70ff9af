//! `lilypad serve --keys FILE` as a platform team runs it (a real server process, scripted
//! engine): unknown tokens get 401, a key over its `max_parallel_requests` or
//! `tokens_per_minute` gets 429 with `Retry-After`, waiting requests go in by their key's
//! priority, SIGHUP reads the file again (a broken file keeps the keys in use), and `/metrics`
//! counts each request under its key's id.

use crate::remote_common::{self, chat, key_line, metric, serve_with_config, wait_until, Peer};
use std::path::{Path, PathBuf};

/// A reply of about `n` pieces: reasoning, then `text`.
fn reply(n: usize, text: &str) -> String {
    format!("{}\n</think>\n\n{text}", "x".repeat(n))
}

fn keys_file(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("keys.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// `lilypad serve` over `turns` with the keys file `keys`, pieces `delay_ms` apart, and extra
/// `[serve]` TOML.
fn server(dir: &Path, turns: &[&str], keys: &Path, delay_ms: &str, serve: &str) -> Peer {
    let script = remote_common::script(dir, turns);
    serve_with_config(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--keys",
            keys.to_str().unwrap(),
            "--api-key-env",
            "LILYPAD_TEST_SERVE_KEY",
        ],
        &[
            ("LILYPAD_SCRIPT_DELAY_MS", delay_ms),
            ("LILYPAD_TEST_SERVE_KEY", "the-single-token"),
        ],
        &format!("[serve]\n{serve}\n"),
    )
}

fn content(a: &remote_common::Answer) -> String {
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn unknown_tokens_are_refused_and_metrics_carry_the_key_id() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_file(dir.path(), &[key_line("team-a", "tok-a", "")]);
    let turns = [reply(3, "one").as_str(), reply(3, "two").as_str()].map(str::to_string);
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let server = server(dir.path(), &turns, &keys, "0", "");
    let port = server.port();

    let refused = chat(port, Some("tok-unknown"), "hi", &[]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(refused.json()["error"]["type"], "invalid_api_key");
    assert_eq!(chat(port, None, "hi", &[]).status, 401);

    assert_eq!(content(&chat(port, Some("tok-a"), "hi", &[])), "one");
    // The single --api-key-env token still works, as the key `default`.
    assert_eq!(
        content(&chat(port, Some("the-single-token"), "hi", &[])),
        "two"
    );

    let success = |key| {
        metric(
            port,
            "lilypad:request_success",
            &[("key_id", key), ("finished_reason", "stop")],
        )
    };
    assert_eq!(success("team-a"), 1.0);
    assert_eq!(success("default"), 1.0);
    assert_eq!(
        metric(
            port,
            "lilypad:requests_rejected",
            &[("key_id", "unknown"), ("reason", "unauthorized")]
        ),
        2.0
    );
    assert!(metric(port, "lilypad:prompt_tokens", &[("key_id", "team-a")]) > 0.0);
}

#[test]
fn a_key_over_its_parallel_requests_gets_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_file(
        dir.path(),
        &[key_line(
            "one-at-a-time",
            "tok-p",
            r#", "max_parallel_requests": 1"#,
        )],
    );
    let long = reply(60, "long");
    let short = reply(2, "short");
    let server = server(dir.path(), &[&long, &short], &keys, "25", "");
    let port = server.port();
    let first = std::thread::spawn(move || chat(port, Some("tok-p"), "first", &[]));
    wait_until(&server, "the first request to be taken", || {
        metric(
            port,
            "lilypad:num_requests_running",
            &[("key_id", "one-at-a-time")],
        ) + metric(
            port,
            "lilypad:num_requests_waiting",
            &[("key_id", "one-at-a-time")],
        ) == 1.0
    });
    let over = chat(port, Some("tok-p"), "second", &[]);
    assert_eq!(over.status, 429, "{}", over.body);
    assert_eq!(over.json()["error"]["type"], "rate_limit_exceeded");
    let retry: u64 = over
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(content(&first.join().unwrap()), "long");
    // The place was given back.
    assert_eq!(content(&chat(port, Some("tok-p"), "third", &[])), "short");
    assert_eq!(
        metric(
            port,
            "lilypad:requests_rejected",
            &[("key_id", "one-at-a-time"), ("reason", "rate_limited")]
        ),
        1.0
    );
}

#[test]
fn a_key_over_its_tokens_per_minute_gets_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    // The scripted engine counts a prompt character as a token: one request is over 50.
    let keys = keys_file(
        dir.path(),
        &[
            key_line("thrifty", "tok-t", r#", "tokens_per_minute": 50"#),
            key_line("other", "tok-o", ""),
        ],
    );
    let (a, b) = (reply(2, "a"), reply(2, "b"));
    let server = server(dir.path(), &[&a, &b], &keys, "0", "");
    let port = server.port();
    let first = chat(port, Some("tok-t"), "hello", &[]);
    assert_eq!(content(&first), "a");
    assert!(first.json()["usage"]["total_tokens"].as_u64().unwrap() > 50);
    let over = chat(port, Some("tok-t"), "again", &[]);
    assert_eq!(over.status, 429, "{}", over.body);
    assert_eq!(over.json()["error"]["type"], "rate_limit_exceeded");
    let retry: u64 = over
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Another key is not held back.
    assert_eq!(content(&chat(port, Some("tok-o"), "hello", &[])), "b");
}

#[test]
fn waiting_requests_go_in_by_their_keys_priority() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_file(
        dir.path(),
        &[
            key_line("batch", "tok-low", r#", "priority": 0"#),
            key_line("interactive", "tok-high", r#", "priority": 5"#),
        ],
    );
    let (first, second, third) = (reply(60, "first"), reply(2, "second"), reply(2, "third"));
    // One request generates at a time; the scripted engine plays its turns in the order the
    // requests reach it.
    let server = server(
        dir.path(),
        &[&first, &second, &third],
        &keys,
        "25",
        "parallel = 1",
    );
    let port = server.port();
    let waiting = |key| metric(port, "lilypad:num_requests_waiting", &[("key_id", key)]);
    let running = |key| metric(port, "lilypad:num_requests_running", &[("key_id", key)]);
    let a = std::thread::spawn(move || chat(port, Some("tok-low"), "a", &[]));
    wait_until(&server, "the first to generate", || running("batch") == 1.0);
    let low = std::thread::spawn(move || chat(port, Some("tok-low"), "b", &[]));
    wait_until(&server, "the low-priority one to wait", || {
        waiting("batch") == 1.0
    });
    let high = std::thread::spawn(move || chat(port, Some("tok-high"), "c", &[]));
    wait_until(&server, "the high-priority one to wait", || {
        waiting("interactive") == 1.0
    });
    assert_eq!(content(&a.join().unwrap()), "first");
    assert_eq!(
        content(&high.join().unwrap()),
        "second",
        "the later, higher-priority request went in first"
    );
    assert_eq!(content(&low.join().unwrap()), "third");
}

#[test]
fn sighup_reads_the_keys_file_again_and_a_broken_one_keeps_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_file(dir.path(), &[key_line("a", "tok-a", "")]);
    let turns: Vec<String> = (0..6).map(|i| reply(2, &format!("r{i}"))).collect();
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let server = server(dir.path(), &turns, &keys, "0", "");
    let port = server.port();
    assert_eq!(chat(port, Some("tok-b"), "hi", &[]).status, 401);

    keys_file(
        dir.path(),
        &[key_line("a", "tok-a", ""), key_line("b", "tok-b", "")],
    );
    server.hangup();
    wait_until(&server, "the new key to be read", || {
        server.log().contains("SIGHUP: read 2 keys")
    });
    assert_eq!(chat(port, Some("tok-b"), "hi", &[]).status, 200);

    std::fs::write(
        &keys,
        format!("{}\n{{not json\n", key_line("c", "tok-c", "")),
    )
    .unwrap();
    server.hangup();
    wait_until(&server, "the broken file to be refused", || {
        server.log().contains("the keys in use stay")
    });
    let log = server.log();
    assert!(log.contains("line 2"), "the bad line is named:\n{log}");
    assert_eq!(chat(port, Some("tok-b"), "hi", &[]).status, 200);
    assert_eq!(chat(port, Some("tok-c"), "hi", &[]).status, 401);
}
