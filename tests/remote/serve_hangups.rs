//! Clients that hang up mid-stream, many at once, against a real `lilypad serve` (scripted
//! engine): the server writes to sockets whose reader has gone, and must treat each as that
//! one request's end, never as the end of the process (a SIGPIPE once killed it within
//! seconds, for everyone).

use crate::remote_common::{self, chat, serve_with_engine_config};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Send a streamed chat request, read until the first chunk has come, and close the socket;
/// whether a chunk came (a server that has gone answers nothing).
fn hang_up_after_first_chunk(port: u16, n: usize) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let body = serde_json::json!({
        "model": "script",
        "messages": [{"role": "user", "content": format!("hang up {n}")}],
        "max_tokens": 4000,
        "stream": true,
    })
    .to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    if s.write_all(head.as_bytes()).is_err() || s.write_all(body.as_bytes()).is_err() {
        return false;
    }
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while !String::from_utf8_lossy(&seen).contains("data: ") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(k) => seen.extend_from_slice(&buf[..k]),
        }
    }
    // Dropping the socket with unread data makes the kernel answer the server's next writes
    // with a reset: the server's writes then fail with a broken pipe.
    drop(s);
    true
}

#[test]
fn clients_hanging_up_mid_stream_never_end_the_server() {
    let dir = tempfile::tempdir().unwrap();
    // Long replies: each stream outlives its client by far.
    let turn = format!("{}\n</think>\n\ndone", "word ".repeat(400));
    let turns: Vec<&str> = std::iter::repeat_n(turn.as_str(), 2000).collect();
    let script = remote_common::script(dir.path(), &turns);
    let mut server = serve_with_engine_config(
        &["--engine", &format!("script:{}", script.display())],
        &[("LILYPAD_SCRIPT_DELAY_MS", "2")],
        "[serve]\nmax_queue = 256\nparallel = 16\n",
        "",
    );
    let port = server.port();
    let until = Instant::now() + Duration::from_secs(8);
    let clients: Vec<_> = (0..16)
        .map(|c| {
            std::thread::spawn(move || {
                let (mut n, mut streamed) = (0, 0);
                while Instant::now() < until {
                    if hang_up_after_first_chunk(port, c * 100_000 + n) {
                        streamed += 1;
                    }
                    n += 1;
                }
                streamed
            })
        })
        .collect();
    let hung_up: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert!(
        hung_up >= 16,
        "only {hung_up} streams began:\n{}",
        server.log()
    );
    // The process lives on, and serves the next request.
    assert!(
        server.wait_exit(Duration::from_millis(500)).is_none(),
        "the server ended after {hung_up} clients hung up:\n{}",
        server.log()
    );
    let answer = chat(port, None, "still there?", &[]);
    assert_eq!(answer.status, 200, "{}\n{}", answer.body, server.log());
}
