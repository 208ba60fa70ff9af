//! llama.cpp's own programs as the baselines of `lilypad bench`: `llama-bench` for prompt
//! processing and generation ([`llama_bench`]), `llama-batched-bench` for several sequences
//! decoded together ([`batched`]), and `llama-server` for the scripted agent session
//! ([`server`]). They are built by scripts/build-llama-tools.sh from the llama.cpp Lilypad links
//! and found in one directory ([`Tools`]: `--llama-tools` or `LILYPAD_LLAMA_TOOLS_DIR`).
//!
//! Owns: finding the programs, running them, and reading their figures. Does not own: Lilypad's
//! side of each comparison, or turning the pair into figures (`super::engine_runs`).

pub mod batched;
pub mod llama_bench;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The directory holding llama.cpp's programs.
#[derive(Debug, Clone)]
pub struct Tools {
    dir: PathBuf,
}

impl Tools {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The program `name` (`llama-bench`, ...), when it is there and executable.
    pub fn find(&self, name: &str) -> Option<PathBuf> {
        let path = self.dir.join(name);
        is_executable(&path).then_some(path)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// What went wrong with a peer program.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("starting {}", program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} failed: {tail}", program.display())]
    Failed { program: PathBuf, tail: String },
    #[error("reading the figures of {}: {what}", program.display())]
    Output { program: PathBuf, what: String },
    /// The program's report is not the JSON it should be.
    #[error("reading the figures of {}: {source}", program.display())]
    Json {
        program: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// llama-server answered something other than the JSON it should (`answer`: its text).
    #[error("reading the figures of llama-server: {source}: {answer}")]
    Answer {
        answer: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("llama-server did not answer on {url} within {seconds} s: {last}")]
    NotReady {
        url: String,
        seconds: u64,
        last: String,
    },
    #[error("a request to llama-server ({url})")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("starting the async runtime for llama-server's client")]
    Runtime(#[source] std::io::Error),
    #[error("finding a free port for llama-server")]
    Port(#[source] std::io::Error),
}

/// The last lines of a program's output, for an error message.
fn tail(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

/// Run `program` with `args` to its end; its output, or an error with its last lines.
fn run(program: &Path, args: &[String]) -> Result<Output, PeerError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| PeerError::Spawn {
            program: program.to_path_buf(),
            source,
        })?;
    if !out.status.success() {
        return Err(PeerError::Failed {
            program: program.to_path_buf(),
            tail: tail(&out),
        });
    }
    Ok(out)
}

/// A report that is not the JSON it should be, as an error naming the program.
fn bad_json(program: &Path) -> impl FnOnce(serde_json::Error) -> PeerError + '_ {
    move |source| PeerError::Json {
        program: program.to_path_buf(),
        source,
    }
}

/// An output that could not be read, as an error naming the program.
fn bad_output(program: &Path, what: impl Into<String>) -> PeerError {
    PeerError::Output {
        program: program.to_path_buf(),
        what: what.into(),
    }
}
