//! Writing and reading session logs. Line 1 is a [`SessionHeader`]; every other line is one
//! [`Event`] with its timestamp (`{"ts": ..., "event": "...", ...}`). Each line is written
//! with one `write_all`, then flushed and `fsync`ed, so a crash loses at most the event being
//! written, and a reader skips a torn final line.

use crate::protocol::Event;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SessionError {
    #[error("cannot write session log {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read session log {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a Lilypad session log: {why}")]
    Format { path: PathBuf, why: String },
    #[error("no session {id} in {dir}")]
    NotFound { id: String, dir: PathBuf },
    #[error("no sessions in {dir}")]
    NoSessions { dir: PathBuf },
}

/// What a session was started with: enough to resume it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    pub lilypad: String,
    pub session_id: String,
    pub created: String,
    /// The user's repository.
    pub repo: PathBuf,
    /// `host`, `docker` or `kube`.
    pub sandbox: String,
    /// How the model was reached: `llama:PATH`, `script:PATH`, `remote:URL`.
    pub engine: String,
    /// The first task, for listings.
    pub task: String,
    pub system_prompt: String,
    /// The approval policy the session started with (`read_only=auto,edits=ask,...`), which
    /// a resume keeps (or tightens); absent in logs written before 0.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The harness profile (`name (sha1 ...)`); empty in logs written before profiles.
    #[serde(default)]
    pub harness: String,
    /// What the run needs to be reproduced (model identity, sampling, seed, image, harness
    /// hash, preset); absent in logs written before 0.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The session this one was forked from (`lilypad resume ID --at-turn K`), and at which
    /// turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_turn: Option<u32>,
    /// The project instructions (`AGENTS.md` files) the first message starts with, each with
    /// its SHA-256; empty when none were read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub project_docs: Vec<ProjectDocRecord>,
}

/// One project instructions file a session read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectDocRecord {
    /// Where it was read from.
    pub path: PathBuf,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
}

/// The facts a run is reproduced from, recorded in the session header and the trajectory.
/// Every field is optional so that what is not known (a model without a file, an image
/// without a name) is left out rather than guessed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Provenance {
    /// The Lilypad version that ran the session.
    pub lilypad: String,
    /// The model: a file (name, size, sha256), a served model behind an endpoint, or a script.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelIdentity>,
    /// The sampling parameters of the session's requests (temperature, top_p, top_k, min_p,
    /// greedy, tool grammar), as the engine received them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<serde_json::Value>,
    /// The sampling seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    /// The sandbox image, in words (its name, or what it is built from).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The `sha256:` digest of the image the sandbox ran, where its runtime told it (Docker:
    /// the image's repository digest, else its id; Kubernetes: the container's `imageID`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    /// SHA-256 (hex) of the harness text the model reads: the system prompt, a newline, then
    /// the tool schemas as compact JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness_sha256: Option<String>,
    /// The evaluation preset the run's settings came from (`--preset`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The batch attempt (1-based) this session is, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The limits the run was made under (a headless run's resolved settings, preset or
    /// not); absent in logs written before they were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<RunLimits>,
}

/// The limits a headless run was made under, so that a result says which ones they were.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunLimits {
    /// Model turns at most.
    pub steps: u32,
    /// Context, in tokens.
    pub context: u32,
    /// Tokens one turn may generate at most.
    pub max_turn_tokens: u32,
    /// Wall time of the agent, in seconds (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_time_secs: Option<u64>,
    /// Tries of an attempt that ends in an error, inside one run.
    pub max_attempts: u32,
    /// Attempts (seeds) per task.
    pub seeds: u32,
}

/// Which model a session ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelIdentity {
    /// `llama`, `remote` or `script`.
    pub kind: String,
    /// The model file's name (in-process engine) or the script's path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The file's size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// SHA-256 (hex) of the file's bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The server's URL (remote engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The model name the server serves (remote engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_model: Option<String>,
}

#[derive(Serialize)]
struct LineOut<'a> {
    ts: String,
    #[serde(flatten)]
    event: &'a Event,
}

#[derive(Deserialize)]
struct LineIn {
    ts: String,
    #[serde(flatten)]
    event: Event,
}

/// An open session log.
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    file: File,
}

impl SessionLog {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create `{dir}/{id}.jsonl` and write the header.
    pub fn create(dir: &Path, header: &SessionHeader) -> Result<Self, SessionError> {
        let path = dir.join(format!("{}.jsonl", header.session_id));
        let err = |source| SessionError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(err)?;
        let line = serde_json::to_string(header).map_err(|e| err(e.into()))?;
        let mut log = Self { path, file };
        log.write_line(&line)?;
        Ok(log)
    }

    /// Open an existing log to append to (resume).
    pub fn append_to(path: &Path) -> Result<Self, SessionError> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|source| SessionError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Append one event, durably.
    pub fn append(&mut self, event: &Event) -> Result<(), SessionError> {
        let line = serde_json::to_string(&LineOut {
            ts: super::now_rfc3339(),
            event,
        })
        .map_err(|e| SessionError::Write {
            path: self.path.clone(),
            source: e.into(),
        })?;
        self.write_line(&line)
    }

    fn write_line(&mut self, line: &str) -> Result<(), SessionError> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let res = self
            .file
            .write_all(&bytes)
            .and_then(|()| self.file.flush())
            .and_then(|()| self.file.sync_data());
        res.map_err(|source| SessionError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// Where the session's latest patch is kept.
    pub fn patch_path(&self) -> PathBuf {
        self.path.with_extension("patch")
    }

    /// Keep turn `turn`'s patch (`{id}.turns/{turn}.patch`, replaced atomically).
    pub fn save_turn_patch(&self, turn: u32, patch: &[u8]) -> Result<(), SessionError> {
        let dir = turns_dir(&self.path);
        let path = dir.join(format!("{turn}.patch"));
        let tmp = dir.join(format!("{turn}.patch.tmp"));
        let res = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&tmp, patch))
            .and_then(|()| std::fs::rename(&tmp, &path));
        res.map_err(|source| SessionError::Write { path, source })
    }

    /// Remove the patches of turns after `turn` (the session rewound to it).
    pub fn forget_turns_after(&self, turn: u32) -> Result<(), SessionError> {
        let dir = turns_dir(&self.path);
        let saved = read_turn_patches(&self.path)?;
        for (t, _) in saved.into_iter().filter(|(t, _)| *t > turn) {
            let path = dir.join(format!("{t}.patch"));
            std::fs::remove_file(&path).map_err(|source| SessionError::Write { path, source })?;
        }
        Ok(())
    }

    /// Append one event with the time it was first recorded (copying a log).
    pub fn append_at(&mut self, ts: &str, event: &Event) -> Result<(), SessionError> {
        let line = serde_json::to_string(&LineOut {
            ts: ts.to_string(),
            event,
        })
        .map_err(|e| SessionError::Write {
            path: self.path.clone(),
            source: e.into(),
        })?;
        self.write_line(&line)
    }

    /// Replace the saved session patch atomically.
    pub fn save_patch(&self, patch: &[u8]) -> Result<(), SessionError> {
        let path = self.patch_path();
        let tmp = path.with_extension("patch.tmp");
        let res = std::fs::write(&tmp, patch).and_then(|()| std::fs::rename(&tmp, &path));
        res.map_err(|source| SessionError::Write { path, source })
    }
}

/// Where the patches of a session's recorded turns are kept: `{id}.turns/` beside the log.
pub fn turns_dir(log: &Path) -> PathBuf {
    log.with_extension("turns")
}

/// The saved patches of a session's recorded turns (each against the session's baseline), in
/// turn order; empty when none were saved.
pub fn read_turn_patches(log: &Path) -> Result<Vec<(u32, Vec<u8>)>, SessionError> {
    let dir = turns_dir(log);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(SessionError::Read { path: dir, source }),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let turn = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".patch"))
            .and_then(|n| n.parse::<u32>().ok());
        if let Some(turn) = turn {
            let bytes = std::fs::read(&path).map_err(|source| SessionError::Read {
                path: path.clone(),
                source,
            })?;
            out.push((turn, bytes));
        }
    }
    out.sort_by_key(|(t, _)| *t);
    Ok(out)
}

/// Read a log: its header and its events with their timestamps. A torn last line (a crash
/// mid-write) is skipped; a bad line elsewhere is an error.
pub fn read_log(path: &Path) -> Result<(SessionHeader, Vec<(String, Event)>), SessionError> {
    let file = File::open(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let bad = |why: String| SessionError::Format {
        path: path.to_path_buf(),
        why,
    };
    let first = lines.first().ok_or_else(|| bad("it is empty".into()))?;
    let header: SessionHeader =
        serde_json::from_str(first).map_err(|e| bad(format!("line 1: {e}")))?;
    let mut events = Vec::new();
    let n = lines.len();
    for (i, line) in lines.iter().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<LineIn>(line) {
            Ok(l) => events.push((l.ts, l.event)),
            Err(_) if i + 1 == n => break,
            Err(e) => return Err(bad(format!("line {}: {e}", i + 1))),
        }
    }
    Ok((header, events))
}

/// One line of `lilypad sessions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub created: String,
    pub repo: PathBuf,
    pub task: String,
    pub turns: usize,
    /// How the last task ended, if it did.
    pub last_finish: Option<String>,
}

/// Every readable session in `dir`, oldest first.
pub fn list_sessions(dir: &Path) -> Result<Vec<SessionSummary>, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SessionError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Ok((h, events)) = read_log(&path) else {
            continue;
        };
        let turns = events
            .iter()
            .filter(|(_, e)| matches!(e, Event::TurnFinished { .. }))
            .count();
        let last_finish = events.iter().rev().find_map(|(_, e)| match e {
            Event::TaskFinished { reason, .. } => serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string)),
            _ => None,
        });
        out.push(SessionSummary {
            id: h.session_id,
            path,
            created: h.created,
            repo: h.repo,
            task: h.task,
            turns,
            last_finish,
        });
    }
    out.sort_by(|a, b| (&a.created, &a.id).cmp(&(&b.created, &b.id)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_without_provenance_still_read_and_new_ones_round_trip() {
        let old = r#"{"lilypad":"0.1.0","session_id":"s","created":"t","repo":"/r","sandbox":"host","engine":"script:x","task":"t","system_prompt":"p"}"#;
        let h: SessionHeader = serde_json::from_str(old).unwrap();
        assert_eq!(h.provenance, None);
        assert!(!serde_json::to_string(&h).unwrap().contains("provenance"));
        let mut new = h;
        new.provenance = Some(Provenance {
            lilypad: "0.3.0".into(),
            model: Some(ModelIdentity {
                kind: "llama".into(),
                file: Some("m.gguf".into()),
                size: Some(7),
                sha256: Some("ab".into()),
                ..ModelIdentity::default()
            }),
            seed: Some(4),
            preset: Some("swebench-pro".into()),
            ..Provenance::default()
        });
        let text = serde_json::to_string(&new).unwrap();
        assert!(
            !text.contains("endpoint"),
            "unknown facts are left out: {text}"
        );
        assert_eq!(serde_json::from_str::<SessionHeader>(&text).unwrap(), new);
    }
}
