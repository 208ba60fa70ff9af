//! The server under soak: `lilypad serve` as a child process (so that its RSS is its own, a
//! SIGHUP reaches it alone and a failure cannot take the soak down with it), on a free
//! loopback port, with two replicas, a keys file, an audit directory and weight updates open;
//! in a debug build also the test-only fault route (`LILYPAD_TEST_FAULTS=1`).
//!
//! Owns: starting, signalling and reading the process (its log, its VmRSS). Does not own: what
//! is asked of it (`clients.rs`, `schedule.rs`).

use super::SoakError;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The log kept of the server's stderr, at most this many bytes (the newest).
const LOG_CAP: usize = 4 << 20;

/// What the server is started with.
pub struct Launch<'a> {
    /// The `lilypad` program.
    pub lilypad: &'a Path,
    pub model: &'a Path,
    pub keys: &'a Path,
    pub audit: &'a Path,
    /// A directory for the config file.
    pub dir: &'a Path,
    pub replicas: usize,
    /// CPU threads in all.
    pub threads: u32,
    /// Open the test-only fault route (only a debug build has it).
    pub faults: bool,
}

/// A running `lilypad serve`; killed on drop.
pub struct Served {
    child: Child,
    log: Arc<Mutex<String>>,
    /// `http://127.0.0.1:PORT`
    pub base: String,
}

impl Served {
    /// Start the server and wait (up to two minutes) until it listens.
    pub fn start(l: &Launch<'_>) -> Result<Self, SoakError> {
        let config = l.dir.join("soak-config.toml");
        // Small batches, as the other tests of the tiny model use. Few kept conversations per
        // replica, so that the memory they hold (a bounded cache) is full before warm-up ends
        // and RSS growth after it means a leak, not the cache filling.
        // The engine's saved prompt heads go to the soak's own directory, not the person's.
        let heads = toml::Value::String(l.dir.join("heads").to_string_lossy().into_owned());
        let text = format!(
            "[serve]\nmax_queue = 256\n\n[engine]\nbatch = 128\nubatch = 64\nsequences = 8\nconversation_slots = 16\nprefix_cache_dir = {heads}\n"
        );
        std::fs::write(&config, text).map_err(|source| SoakError::Io {
            what: "writing the server's config file",
            source,
        })?;
        let mut cmd = Command::new(l.lilypad);
        cmd.arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--model")
            .arg(l.model)
            .args(["--ctx", "16384", "--listen", "127.0.0.1:0"])
            .args(["--threads", &l.threads.to_string()])
            .args(["--replicas", &l.replicas.to_string()])
            .arg("--keys")
            .arg(l.keys)
            .arg("--audit")
            .arg(l.audit)
            .arg("--weight-updates")
            .env("LILYPAD_LOG", "lilypad=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if l.faults {
            cmd.env("LILYPAD_TEST_FAULTS", "1");
        }
        let mut child = cmd.spawn().map_err(|source| SoakError::Io {
            what: "starting lilypad serve",
            source,
        })?;
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                    l.push_str(&line);
                    l.push('\n');
                    if l.len() > LOG_CAP {
                        let cut = l.len() - LOG_CAP / 2;
                        let cut = (cut..l.len()).find(|&i| l.is_char_boundary(i)).unwrap_or(0);
                        l.drain(..cut);
                    }
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let text = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(pos) = text.find("listening on ") {
                let url = text[pos + "listening on ".len()..]
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim();
                let base = url.trim_end_matches("/v1").to_string();
                return Ok(Self { child, log, base });
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(SoakError::ServerEnded {
                    status: status.to_string(),
                    log: text,
                });
            }
            if Instant::now() > deadline {
                return Err(SoakError::ServerEnded {
                    status: "did not listen within two minutes".into(),
                    log: text,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything it wrote to stderr so far (the newest part of a long log).
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Its exit status, if it has ended.
    pub fn ended(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// Send it SIGHUP (it reads its keys file again).
    pub fn hangup(&self) -> Result<(), SoakError> {
        let pid = libc::pid_t::try_from(self.pid()).map_err(|_| SoakError::Io {
            what: "signalling the server",
            source: std::io::Error::other("the process id does not fit a pid_t"),
        })?;
        // SAFETY: kill(2) takes any pid and signal number and only reports an error; the pid
        // is our own child's, which we have not reaped (it is reaped only on drop).
        let r = unsafe { libc::kill(pid, libc::SIGHUP) };
        if r != 0 {
            return Err(SoakError::Io {
                what: "sending SIGHUP to the server",
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// Its resident set size now, in KiB (`VmRSS` of `/proc/PID/status`).
    pub fn rss_kib(&self) -> Result<u64, SoakError> {
        rss_kib(&PathBuf::from(format!("/proc/{}/status", self.pid())))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `VmRSS` (KiB) of a `/proc/PID/status` file.
fn rss_kib(path: &Path) -> Result<u64, SoakError> {
    let text = std::fs::read_to_string(path).map_err(|source| SoakError::Io {
        what: "reading the server's /proc status",
        source,
    })?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| SoakError::Io {
            what: "reading the server's VmRSS",
            source: std::io::Error::other(format!("no VmRSS line in {}", path.display())),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_our_own_rss() {
        let kib = rss_kib(Path::new("/proc/self/status")).unwrap();
        assert!(kib > 100, "{kib} KiB");
    }
}
