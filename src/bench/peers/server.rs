//! `llama-server` as a child process on 127.0.0.1, and its `/completion` endpoint: a prompt
//! given as token ids (the engine's own tokenisation, so both sides read the same tokens), with
//! `cache_prompt` on and one predicted token, so the server reads the prompt, reusing what its
//! slot holds, and samples once. The figures read back are the server's own: `timings.prompt_n`
//! (tokens it evaluated), `timings.cache_n` / `tokens_cached` and `timings.prompt_ms`. Also
//! slot 0's save, restore and erase (`/slots/0?action=...`), for the resume comparison.
//!
//! The child is killed when the [`Server`] is dropped.

use super::PeerError;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to load its model.
const READY_SECONDS: u64 = 180;

/// A running llama-server.
pub struct Server {
    child: Child,
    url: String,
    log: PathBuf,
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
}

/// The server's figures for one `/completion` request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion {
    /// Prompt tokens the server evaluated.
    pub prompt_n: usize,
    /// Prompt tokens it took from its cache.
    pub cache_n: usize,
    /// Its prompt-processing time, ms.
    pub prompt_ms: f64,
    /// Tokens its slot holds after the request (`tokens_cached`).
    pub tokens_cached: usize,
}

/// What a slot action did: tokens saved, restored or erased, bytes written or read, and the
/// server's own time for it (ms; 0 for `erase`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Slot {
    pub tokens: u64,
    pub bytes: u64,
    pub ms: f64,
}

#[derive(Deserialize)]
struct SlotTimings {
    save_ms: Option<f64>,
    restore_ms: Option<f64>,
}

#[derive(Deserialize)]
struct SlotResponse {
    n_saved: Option<i64>,
    n_restored: Option<i64>,
    n_erased: Option<i64>,
    n_written: Option<i64>,
    n_read: Option<i64>,
    timings: Option<SlotTimings>,
}

#[derive(Deserialize)]
struct Timings {
    prompt_n: i64,
    #[serde(default)]
    cache_n: i64,
    prompt_ms: f64,
}

#[derive(Deserialize)]
struct Response {
    timings: Timings,
    #[serde(default)]
    tokens_cached: i64,
}

/// The arguments llama-server starts with (`extra` appended: the settings under test).
pub fn args(model: &Path, port: u16, threads: u32, ctx: u32, extra: &[String]) -> Vec<String> {
    let mut a: Vec<String> = [
        "-m",
        &model.display().to_string(),
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "-c",
        &ctx.to_string(),
        "-t",
        &threads.to_string(),
        "-tb",
        &threads.to_string(),
        "-b",
        "512",
        "-ub",
        "512",
        "-ngl",
        "0",
        "-np",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().cloned());
    a
}

impl Server {
    /// Start `program` on `model` and wait until it answers `/health`; its log goes to `log`.
    pub fn start(
        program: &Path,
        model: &Path,
        threads: u32,
        ctx: u32,
        extra: &[String],
        log: &Path,
    ) -> Result<Server, PeerError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(PeerError::Port)?
            .port();
        let spawn_err = |source| PeerError::Spawn {
            program: program.to_path_buf(),
            source,
        };
        // A fresh connection per request: the server drops an idle kept-alive one after a few
        // seconds, and a turn of the other side can take longer than that.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|source| PeerError::Http {
                url: format!("http://127.0.0.1:{port}"),
                source,
            })?;
        let log_file = std::fs::File::create(log).map_err(spawn_err)?;
        let child = Command::new(program)
            .args(args(model, port, threads, ctx, extra))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(spawn_err)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PeerError::Runtime)?;
        let mut server = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log: log.to_path_buf(),
            rt,
            client,
        };
        server.wait_ready(program)?;
        Ok(server)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }

    fn wait_ready(&mut self, program: &Path) -> Result<(), PeerError> {
        let t = Instant::now();
        let url = format!("{}/health", self.url);
        let mut last = String::from("no answer");
        while t.elapsed() < Duration::from_secs(READY_SECONDS) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(PeerError::Failed {
                    program: program.to_path_buf(),
                    tail: self.log_tail(),
                });
            }
            let answer = self
                .rt
                .block_on(async { self.client.get(&url).send().await.map(|r| r.status()) });
            match answer {
                Ok(s) if s.is_success() => return Ok(()),
                Ok(s) => last = format!("status {s}"),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(PeerError::NotReady {
            url,
            seconds: READY_SECONDS,
            last: format!("{last}\n{}", self.log_tail()),
        })
    }

    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Read `tokens` as the prompt (reusing the slot's cache) and predict one token.
    pub fn complete(&self, tokens: &[u32]) -> Result<Completion, PeerError> {
        let body = serde_json::json!({
            "prompt": tokens,
            "n_predict": 1,
            "cache_prompt": true,
            "temperature": 0.0,
        });
        let bytes = self.post("/completion", &body)?;
        let r: Response = serde_json::from_slice(&bytes).map_err(|source| PeerError::Answer {
            answer: String::from_utf8_lossy(&bytes).into_owned(),
            source,
        })?;
        let n = |x: i64| x.max(0) as usize;
        Ok(Completion {
            prompt_n: n(r.timings.prompt_n),
            cache_n: n(r.timings.cache_n),
            prompt_ms: r.timings.prompt_ms,
            tokens_cached: n(r.tokens_cached),
        })
    }

    /// Slot 0's `save`, `restore` or `erase` (`POST /slots/0?action=...`; the server must run
    /// with `--slot-save-path`, where `file` is written and read).
    pub fn slot(&self, action: &str, file: &str) -> Result<Slot, PeerError> {
        let body = serde_json::json!({ "filename": file });
        let bytes = self.post(&format!("/slots/0?action={action}"), &body)?;
        let r: SlotResponse =
            serde_json::from_slice(&bytes).map_err(|source| PeerError::Answer {
                answer: String::from_utf8_lossy(&bytes).into_owned(),
                source,
            })?;
        let n = |x: Option<i64>| x.unwrap_or(0).max(0) as u64;
        Ok(Slot {
            tokens: n(r.n_saved.or(r.n_restored).or(r.n_erased)),
            bytes: n(r.n_written.or(r.n_read)),
            ms: r
                .timings
                .map_or(0.0, |t| t.save_ms.or(t.restore_ms).unwrap_or(0.0)),
        })
    }

    /// POST `body` to `path`; the answer's bytes.
    fn post(&self, path: &str, body: &serde_json::Value) -> Result<Vec<u8>, PeerError> {
        let url = format!("{}{path}", self.url);
        let http = |source| PeerError::Http {
            url: url.clone(),
            source,
        };
        let bytes = self.rt.block_on(async {
            self.client
                .post(&url)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await
        });
        // A server that closed the connection has usually died: its log says why.
        let bytes = bytes.map_err(|e| match self.log_tail() {
            t if t.is_empty() => http(e),
            t => PeerError::Failed {
                program: PathBuf::from("llama-server"),
                tail: format!("{e} ({url}); its log ends:\n{t}"),
            },
        })?;
        Ok(bytes.to_vec())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_slot_on_the_cpu_with_the_settings_under_test_last() {
        let a = args(
            Path::new("/m.gguf"),
            8080,
            1,
            4096,
            &["--ctx-checkpoints".into(), "64".into()],
        )
        .join(" ");
        assert_eq!(
            a,
            "-m /m.gguf --host 127.0.0.1 --port 8080 -c 4096 -t 1 -tb 1 -b 512 -ub 512 -ngl 0 -np 1 --ctx-checkpoints 64"
        );
    }
}
