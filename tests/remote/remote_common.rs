//! Shared set-up for the remote-engine and server tests (`tests/remote/remote_*.rs`,
//! `tests/remote/serve_*.rs`): the tiny model with a chat template, `lilypad serve` as a child
//! process on a free loopback port, the Python peers (`scripts/fetch-test-python.sh`), and small
//! helpers. Everything binds and connects to 127.0.0.1 only.

use lilypad::engine::remote::{RemoteEngine, RemoteSettings};
use lilypad::engine::{EngineEvent, Generation, ParsedOutput};
use lilypad::testmodel::{self, TinySpec};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

static MODEL: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();

/// The tiny model with Lilypad's built-in chat template embedded (as the real model's file
/// carries its own), so third-party servers can render prompts for it.
pub fn tiny_model() -> &'static Path {
    &MODEL
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("tiny-chat.gguf");
            let spec = TinySpec {
                chat_template: Some(lilypad::prompt::BUILTIN_TEMPLATE.to_string()),
                ..TinySpec::synthetic()
            };
            testmodel::write(&path, &spec).expect("write tiny model");
            (dir, path)
        })
        .1
}

/// A config file with the engine settings the other model tests use (small batches), plus
/// `extra` TOML; `engine` adds keys to the `[engine]` section.
fn test_config(dir: &Path, extra: &str, engine: &str) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!("{extra}\n[engine]\nbatch = 128\nubatch = 64\n{engine}\n");
    std::fs::write(&path, text).expect("write config");
    path
}

/// A child process whose stderr is collected; killed on drop.
pub struct Peer {
    child: Child,
    log: Arc<Mutex<String>>,
    _dir: Option<tempfile::TempDir>,
    /// `http://127.0.0.1:PORT/v1`
    pub base: String,
}

impl Peer {
    /// Own `child` (killed on drop); `log` collects its output (see [`collect_into`]).
    pub fn new(child: Child, log: Arc<Mutex<String>>, base: String) -> Self {
        Self {
            child,
            log,
            _dir: None,
            base,
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Send the process SIGTERM, as Kubernetes does to stop a pod.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Send the process SIGHUP (`lilypad serve` reads its keys file again).
    pub fn hangup(&self) {
        let status = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Wait up to `limit` for the process to exit; its status, or `None` if it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// The port of [`Self::base`].
    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .expect("a port in the base URL")
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Append a child's output to `log`, line by line, from a thread.
pub fn collect_into(stream: impl Read + Send + 'static, log: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if let Ok(mut l) = log.lock() {
                l.push_str(&line);
                l.push('\n');
            }
        }
    });
}

/// Start `lilypad serve --listen 127.0.0.1:0` with `args` (e.g. `--model F` or
/// `--engine script:F`) and wait until it listens.
pub fn serve(args: &[&str], envs: &[(&str, &str)]) -> Peer {
    serve_with_config(args, envs, "")
}

/// [`serve`] with extra config-file TOML (e.g. a `[serve]` section).
pub fn serve_with_config(args: &[&str], envs: &[(&str, &str)], config: &str) -> Peer {
    serve_with_engine_config(args, envs, config, "")
}

/// [`serve_with_config`] with extra `[engine]` keys.
pub fn serve_with_engine_config(
    args: &[&str],
    envs: &[(&str, &str)],
    config: &str,
    engine: &str,
) -> Peer {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = test_config(dir.path(), config, engine);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lilypad"));
    // Global flags after the subcommand: before it they would be taken for a session's.
    cmd.args(["serve", "--config"])
        .arg(&config)
        .args(["--ctx", "4096", "--threads", "1", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("LILYPAD_LOG", "lilypad=info")
        // Saved prompt heads in this server's own directory, not the user's cache.
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start lilypad serve");
    let stderr = child.stderr.take().expect("stderr is piped");
    let log = Arc::new(Mutex::new(String::new()));
    collect_into(stderr, log.clone());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = log.lock().map(|l| l.clone()).unwrap_or_default();
        if let Some(pos) = text.find("listening on ") {
            let url = text[pos + "listening on ".len()..]
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            return Peer {
                child,
                log,
                _dir: Some(dir),
                base: url,
            };
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("lilypad serve exited with {status}:\n{text}");
        }
        assert!(
            Instant::now() < deadline,
            "lilypad serve did not start:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A free loopback port (for peers that need one given).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` on 127.0.0.1:port with plain HTTP/1.0: the status code, if anything answered.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.split_whitespace().nth(1)?.parse().ok()
}

/// The Python with the peers installed, or `None` (then the test skips loudly; under
/// `LILYPAD_TEST_STRICT=1` it fails instead).
pub fn python() -> Option<PathBuf> {
    match std::env::var_os("LILYPAD_TEST_PYTHON").map(PathBuf::from) {
        Some(p) if p.exists() => Some(p),
        other => {
            let why = match other {
                Some(p) => format!("LILYPAD_TEST_PYTHON={} does not exist", p.display()),
                None => "LILYPAD_TEST_PYTHON is not set".to_string(),
            };
            assert!(
                std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
                "{why}: run `eval \"$(scripts/fetch-test-python.sh)\"` (scripts/test.sh does)"
            );
            eprintln!("SKIPPED: {why}; run `eval \"$(scripts/fetch-test-python.sh)\"` first");
            None
        }
    }
}

/// A remote engine for `base` with quick retries.
pub fn client(base: &str, tweak: impl FnOnce(&mut RemoteSettings)) -> RemoteEngine {
    let mut s = RemoteSettings {
        endpoint: Some(base.to_string()),
        retries: 1,
        backoff_ms: 20,
        read_timeout_secs: 60,
        ..Default::default()
    };
    tweak(&mut s);
    RemoteEngine::new(&s).expect("remote engine")
}

/// Everything one reply delivered.
#[derive(Debug, Default)]
pub struct Collected {
    pub pieces: String,
    pub reasoning: String,
    pub content: String,
    pub calls: Vec<lilypad::protocol::ToolCall>,
    pub done: Option<Generation>,
    pub failed: Option<String>,
    pub order: Vec<&'static str>,
}

/// Read a stream to its end (blocking), with a time limit.
pub fn collect_stream(stream: lilypad::engine::GenerationStream) -> Collected {
    let mut events = stream.events;
    let mut c = Collected::default();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "the stream did not end: {c:?}");
        let ev = match events.try_recv() {
            Ok(ev) => ev,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(_) => panic!("the stream closed without Done or Failed: {c:?}"),
        };
        match ev {
            EngineEvent::Sampled(_) => c.order.push("sampled"),
            EngineEvent::Piece(p) => {
                c.order.push("piece");
                c.pieces.push_str(&p)
            }
            EngineEvent::Parsed(ParsedOutput::Reasoning(r)) => {
                c.order.push("reasoning");
                c.reasoning.push_str(&r)
            }
            EngineEvent::Parsed(ParsedOutput::Content(t)) => {
                c.order.push("content");
                c.content.push_str(&t)
            }
            EngineEvent::Parsed(ParsedOutput::ToolCall(call)) => {
                c.order.push("call");
                c.calls.push(call)
            }
            EngineEvent::Done(g) => {
                c.done = Some(g);
                return c;
            }
            EngineEvent::Failed(e) => {
                c.failed = Some(e.to_string());
                return c;
            }
        }
    }
}

/// Write a script for `--engine script:FILE`.
pub fn script(dir: &Path, turns: &[&str]) -> PathBuf {
    let path = dir.join("script.txt");
    let mut text = String::from("test script\n");
    for t in turns {
        if let Some(rest) = t.strip_prefix("CAP:") {
            text.push_str("=== turn: token_cap ===\n");
            text.push_str(rest);
        } else {
            text.push_str("=== turn ===\n");
            text.push_str(t);
        }
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write script");
    path
}

/// An HTTP answer: status, headers (names lower-cased) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The value of header `name` (lower case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// `method path` on 127.0.0.1:port over HTTP/1.0 with extra `headers` and a JSON `body`.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
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

/// A whole (non-streamed) chat request with `messages` sent with bearer `token` (if any).
pub fn chat(port: u16, token: Option<&str>, user: &str, extra: &[(&str, &str)]) -> Answer {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = extra.to_vec();
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    let body = serde_json::json!({
        "model": "script",
        "messages": [{"role": "user", "content": user}],
        "max_tokens": 1000,
    });
    http_request(
        port,
        "POST",
        "/v1/chat/completions",
        &headers,
        &body.to_string(),
    )
}

/// The sum of the samples of metric family `name` (as `/metrics` on `port` reports it, read by
/// a Prometheus text parser) whose labels include all of `labels`; 0 when there is none.
pub fn metric(port: u16, name: &str, labels: &[(&str, &str)]) -> f64 {
    use openmetrics_parser::openmetrics::parse_openmetrics;
    use openmetrics_parser::OpenMetricsValue;
    let text = http_request(port, "GET", "/metrics", &[], "").body;
    if text.trim() == "# EOF" {
        // No series yet (the parser wants at least one family).
        return 0.0;
    }
    let exposition = parse_openmetrics(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let Some(family) = exposition.families.get(name) else {
        return 0.0;
    };
    family
        .iter_samples()
        .filter(|s| {
            let set = s.get_labelset().unwrap();
            labels
                .iter()
                .all(|(k, v)| set.get_label_value(k) == Some(*v))
        })
        .map(|s| match &s.value {
            OpenMetricsValue::Counter(c) => c.value.as_f64(),
            OpenMetricsValue::Gauge(g) | OpenMetricsValue::Unknown(g) => g.as_f64(),
            OpenMetricsValue::Histogram(h) => h.count.unwrap_or_default() as f64,
            other => panic!("{name}: {other:?}"),
        })
        .sum()
}

/// Wait (up to two minutes) until `ready` holds, polling; panics with `what` and the server's
/// log otherwise.
pub fn wait_until(server: &Peer, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "gave up waiting for {what}:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A keys file line for `token`.
pub fn key_line(id: &str, token: &str, extra: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!(r#"{{"id": "{id}", "sha256": "{hex}"{extra}}}"#)
}
