//! The one door of `lilypad serve` (src/serve/door.rs), driven by one table: every model
//! endpoint goes through every rule (the key, the body's form, the key's limits, the queue
//! bound, the drain), so that an endpoint added to the table and skipping a rule fails here.
//! Every refusal is in OpenAI's error form with `X-Request-Id`, and every request leaves one
//! audit line naming its endpoint and one count in `lilypad:requests`. Then the roles: an
//! ordinary key gets 403 from the operator's endpoints before any file is read, and no answer
//! quotes a file's bytes.

use crate::remote_common::{self, key_line, metric, serve_with_config, wait_until, Answer, Peer};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A model endpoint and a body it takes.
struct Door {
    label: &'static str,
    path: &'static str,
    body: &'static str,
}

/// Every model endpoint. A new one goes here, and then through every rule below.
const MODEL_ENDPOINTS: [Door; 4] = [
    Door {
        label: "chat_completions",
        path: "/v1/chat/completions",
        body: r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}"#,
    },
    Door {
        label: "completions",
        path: "/v1/completions",
        body: r#"{"prompt": "hi", "max_tokens": 3}"#,
    },
    Door {
        label: "tokenize",
        path: "/tokenize",
        body: r#"{"prompt": "hi"}"#,
    },
    Door {
        label: "detokenize",
        path: "/detokenize",
        body: r#"{"tokens": [1, 2]}"#,
    },
];

/// `method path` with raw `body` bytes and the given `Content-Type` (none when `None`).
fn raw(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> Answer {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n");
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(c) = content_type {
        head.push_str(&format!("Content-Type: {c}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

/// A JSON request to `door` with `token`.
fn ask(port: u16, door: &Door, token: Option<&str>) -> Answer {
    raw(
        port,
        "POST",
        door.path,
        token,
        Some("application/json"),
        door.body.as_bytes(),
    )
}

/// `a` is a refusal with `status`, in OpenAI's form with error code `code`, and an id.
fn refused(a: &Answer, status: u16, code: &str, what: &str) {
    assert_eq!(a.status, status, "{what}: {}", a.body);
    let body = a.json();
    assert_eq!(body["error"]["code"], code, "{what}: {}", a.body);
    assert!(body["error"]["message"].is_string(), "{what}: {}", a.body);
    assert!(
        a.header("x-request-id").is_some(),
        "{what}: no X-Request-Id"
    );
}

fn keys_file(dir: &Path) -> PathBuf {
    let path = dir.join("keys.jsonl");
    let lines = [
        key_line("team", "tok-team", r#", "max_parallel_requests": 1"#),
        key_line("ops", "tok-ops", r#", "admin": true"#),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// A slow scripted server: every reply takes seconds (so requests can be held in flight).
fn slow_server(dir: &Path, max_queue: usize) -> Peer {
    // About 100 pieces x 100 ms: ten seconds in flight.
    let turn = format!("{}\n</think>\n\nslow", "x".repeat(300));
    let turns: Vec<&str> = std::iter::repeat_n(turn.as_str(), 50).collect();
    let script = remote_common::script(dir, &turns);
    let keys = keys_file(dir);
    let audit = dir.join("audit");
    serve_with_config(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--keys",
            keys.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[("LILYPAD_SCRIPT_DELAY_MS", "100")],
        &format!("[serve]\nmax_queue = {max_queue}\n"),
    )
}

/// A chat request of `token` held in flight on its own thread until the reply ends.
fn hold(port: u16, token: &'static str) -> std::thread::JoinHandle<Answer> {
    std::thread::spawn(move || remote_common::chat(port, Some(token), "hold", &[]))
}

/// Audit lines by endpoint.
fn audited(dir: &Path) -> HashMap<String, usize> {
    let mut by = HashMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("audit")) else {
        return by;
    };
    for e in entries {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            *by.entry(v["endpoint"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    by
}

#[test]
fn every_model_endpoint_goes_through_every_rule_of_the_door() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = slow_server(dir.path(), 2);
    let port = server.port();
    let mut sent: HashMap<&str, usize> = HashMap::new();
    for door in &MODEL_ENDPOINTS {
        let what = door.label;
        // The key.
        refused(&ask(port, door, None), 401, "invalid_api_key", what);
        refused(
            &ask(port, door, Some("tok-nobody")),
            401,
            "invalid_api_key",
            what,
        );
        // The body's form.
        let a = raw(
            port,
            "POST",
            door.path,
            Some("tok-ops"),
            Some("text/plain"),
            door.body.as_bytes(),
        );
        refused(&a, 415, "invalid_request_error", what);
        let a = raw(
            port,
            "POST",
            door.path,
            Some("tok-ops"),
            Some("application/json"),
            b"{\"prompt\": \"\xff\xfe\"}",
        );
        refused(&a, 400, "invalid_request_error", what);
        *sent.entry(door.label).or_default() += 4;
    }
    // The key's own limit: one request of `team` in flight, the next of any endpoint is 429.
    let held = hold(port, "tok-team");
    wait_until(&server, "team's request in flight", || {
        metric(port, "lilypad:num_requests_running", &[("key_id", "team")]) >= 1.0
    });
    for door in &MODEL_ENDPOINTS {
        let a = ask(port, door, Some("tok-team"));
        refused(&a, 429, "rate_limit_exceeded", door.label);
        assert!(a.header("retry-after").is_some(), "{}", door.label);
        *sent.entry(door.label).or_default() += 1;
    }
    // The queue bound: exactly `max_queue` (2) in flight; then every endpoint is 503, and
    // readiness says busy by the same rule.
    assert_eq!(remote_common::http_status(port, "/health/ready"), Some(200));
    let held2 = hold(port, "tok-ops");
    wait_until(&server, "two requests in flight", || {
        remote_common::http_status(port, "/health/ready") == Some(503)
    });
    for door in &MODEL_ENDPOINTS {
        let a = ask(port, door, Some("tok-ops"));
        refused(&a, 503, "server_busy", door.label);
        assert!(a.header("retry-after").is_some(), "{}", door.label);
        *sent.entry(door.label).or_default() += 1;
    }
    // The drain: SIGTERM with requests in flight; every endpoint is 503 until they end.
    server.terminate();
    let mut probes = 0;
    wait_until(&server, "the drain", || {
        probes += 1;
        ask(port, &MODEL_ENDPOINTS[2], Some("tok-ops"))
            .body
            .contains("server_draining")
    });
    *sent.entry("tokenize").or_default() += probes;
    for door in &MODEL_ENDPOINTS {
        let a = ask(port, door, Some("tok-ops"));
        refused(&a, 503, "server_draining", door.label);
        assert!(a.header("retry-after").is_some(), "{}", door.label);
        *sent.entry(door.label).or_default() += 1;
    }
    let (a, b) = (held.join().unwrap(), held2.join().unwrap());
    assert_eq!((a.status, b.status), (200, 200), "{} {}", a.body, b.body);
    *sent.entry("chat_completions").or_default() += 2;
    assert!(server.wait_exit(Duration::from_secs(60)).is_some());
    // One audit line per request, naming its endpoint.
    let lines = audited(dir.path());
    for door in &MODEL_ENDPOINTS {
        assert_eq!(
            lines.get(door.label).copied().unwrap_or(0),
            sent[door.label],
            "audit lines of {}: {lines:?}",
            door.label
        );
    }
}

#[test]
fn requests_are_counted_by_endpoint_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = slow_server(dir.path(), 8);
    let port = server.port();
    for door in &MODEL_ENDPOINTS {
        refused(&ask(port, door, None), 401, "invalid_api_key", door.label);
        ask(port, door, Some("tok-ops"));
    }
    for door in &MODEL_ENDPOINTS {
        let count = |code: &str| {
            metric(
                port,
                "lilypad:requests",
                &[("endpoint", door.label), ("code", code)],
            )
        };
        assert_eq!(count("401"), 1.0, "{}", door.label);
        let answered = metric(port, "lilypad:requests", &[("endpoint", door.label)]);
        assert_eq!(answered, 2.0, "{}", door.label);
        assert_eq!(
            metric(
                port,
                "lilypad:requests_rejected",
                &[("endpoint", door.label), ("reason", "unauthorized")]
            ),
            1.0,
            "{}",
            door.label
        );
    }
    let lines = audited(dir.path());
    for door in &MODEL_ENDPOINTS {
        assert_eq!(lines.get(door.label), Some(&2), "{lines:?}");
    }
}

#[test]
fn an_ordinary_key_cannot_reach_the_operators_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_file(dir.path());
    let audit = dir.path().join("audit");
    let server = serve_with_config(
        &[
            "--model",
            remote_common::tiny_model().to_str().unwrap(),
            "--weight-updates",
            "--keys",
            keys.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[],
        "",
    );
    let port = server.port();
    let body = br#"{"model_path": "/etc/passwd"}"#;
    for path in ["/update_weights", "/update_weights_from_disk"] {
        let a = raw(port, "POST", path, Some("tok-team"), None, body);
        refused(&a, 403, "permission_denied", path);
        assert!(!a.body.contains("GGUF"), "nothing was read: {}", a.body);
    }
    // The operator's key passes the door; the answer says the file is no GGUF file, and
    // quotes none of its bytes.
    let a = raw(port, "POST", "/update_weights", Some("tok-ops"), None, body);
    assert_eq!(a.status, 400, "{}", a.body);
    assert!(a.body.contains("not a GGUF file"), "{}", a.body);
    assert!(!a.body.contains("[114"), "{}", a.body);
    assert!(!a.body.contains("root"), "{}", a.body);
    // Each attempt is audited with the key, the path and the outcome.
    let text: String = std::fs::read_dir(&audit)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["endpoint"] == "update_weights")
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    let by = |key: &str| {
        lines
            .iter()
            .filter(|v| v["key_id"] == key)
            .collect::<Vec<_>>()
    };
    assert!(by("team").iter().all(|v| v["status"] == 403), "{text}");
    let ops = by("ops");
    assert_eq!(ops.len(), 1, "{text}");
    assert_eq!(ops[0]["status"], 400, "{text}");
    assert_eq!(ops[0]["model_path"], "/etc/passwd", "{text}");
}

/// Read from `s` until the server closes the connection (or 20 s pass): what came.
fn until_closed(s: &mut std::net::TcpStream) -> Option<String> {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(String::from_utf8_lossy(&got).into_owned())
            }
            // Still open after 20 s.
            Err(_) => return None,
        }
    }
}

#[test]
fn slow_or_idle_connections_are_closed_after_the_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let script = remote_common::script(dir.path(), &["x\n</think>\n\nhi"]);
    let server = serve_with_config(
        &["--engine", &format!("script:{}", script.display())],
        &[],
        "[serve]\nread_timeout_secs = 1\n",
    );
    let port = server.port();
    let connect = || std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    // Headers that never end.
    let mut s = connect();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    assert!(
        until_closed(&mut s).is_some(),
        "half-sent headers kept open"
    );
    // A body that never comes whole: 408 in OpenAI's form.
    let mut s = connect();
    s.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mess",
    )
    .unwrap();
    let got = until_closed(&mut s).expect("a half-sent body kept open");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("\"error\""), "{got}");
    // A keep-alive connection left idle after its answer.
    let mut s = connect();
    s.write_all(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let got = until_closed(&mut s).expect("an idle keep-alive connection kept open");
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    // The server goes on serving.
    assert_eq!(remote_common::http_status(port, "/health/live"), Some(200));
}
