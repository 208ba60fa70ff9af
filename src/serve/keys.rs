//! The API keys of `lilypad serve`: the keys file (`--keys FILE`, `[serve] keys_file`), read at
//! start and again on SIGHUP, and the lookup of a bearer token to the key it belongs to.
//!
//! The file is JSON Lines, one key a line (blank lines are skipped):
//! `{"id": "team-a", "sha256": "<hex SHA-256 of the token>", "max_parallel_requests": 4,
//! "tokens_per_minute": 200000, "priority": 1, "admin": false}`. Only `id` and `sha256` are
//! required; a limit left out (or `null`) is no limit, `priority` is 0 unless given (higher is
//! served first), and `"admin": true` gives the key the operator's role (the endpoints that
//! change what every user is served, such as `/update_weights`). The file holds digests only,
//! so it can live in a Kubernetes Secret or a config repository without giving the tokens away.
//!
//! Invariants: a table has at least one key; ids and digests are unique in it, and no id is
//! one of the [`RESERVED_IDS`]; a token is compared by its digest, in constant time over the
//! digest's bytes. The single `--api-key-env` token is the key `default` (no limits, priority
//! 0, admin), accepted beside the file's keys. With no key required at all, every request is
//! `default` too: whoever can reach the port is the operator.
//!
//! Does not own: counting a key's use against its limits (`limits.rs`), the order of waiting
//! requests (`queue.rs`), when the file is re-read (`mod.rs`).

use serde::Deserialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use thiserror::Error;

/// The key id of the `--api-key-env` token, and of every request when no key is required.
pub const DEFAULT_KEY_ID: &str = "default";

/// The key id the metrics and audit give a request whose token no key has.
pub(crate) const UNKNOWN_KEY_ID: &str = "unknown";

/// Ids a keys file may not use: the server's own names in the metrics and the audit trail.
pub const RESERVED_IDS: [&str; 2] = [DEFAULT_KEY_ID, UNKNOWN_KEY_ID];

/// Errors of reading a keys file.
#[derive(Debug, Error)]
pub enum KeysError {
    #[error("cannot read the keys file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("keys file {path}, line {line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("the keys file {path} holds no key: every request would be refused (add a key, or leave --keys out)")]
    Empty { path: PathBuf },
}

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Requests of this key in flight at once (waiting or generating).
    pub max_parallel_requests: Option<u32>,
    /// Prompt and completion tokens in any 60 seconds.
    pub tokens_per_minute: Option<u64>,
}

/// What a key may reach: the model endpoints, or also the operator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The model endpoints (chat, completions, tokenize, ...).
    User,
    /// Also the endpoints that change what every user is served (`/update_weights`).
    Admin,
}

/// Who sent a request: its key's id, limits, priority and role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub id: String,
    pub limits: Limits,
    pub priority: i32,
    pub role: Role,
}

impl Caller {
    /// The caller of the `--api-key-env` token, or of any request when no key is required:
    /// the operator.
    pub fn default_key() -> Self {
        Self {
            id: DEFAULT_KEY_ID.to_string(),
            limits: Limits::default(),
            priority: 0,
            role: Role::Admin,
        }
    }
}

/// One line of the file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    id: String,
    sha256: String,
    #[serde(default)]
    max_parallel_requests: Option<u32>,
    #[serde(default)]
    tokens_per_minute: Option<u64>,
    #[serde(default)]
    priority: i32,
    #[serde(default)]
    admin: bool,
}

/// One key, read.
#[derive(Debug, Clone)]
struct Key {
    digest: [u8; 32],
    caller: Caller,
}

/// The keys of one reading of the file.
#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    keys: Vec<Key>,
}

impl KeyTable {
    /// Read `path`; an error names the line that is wrong.
    pub fn load(path: &Path) -> Result<Self, KeysError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Self, KeysError> {
        let mut keys = Vec::new();
        let mut ids = HashSet::new();
        let mut digests = HashSet::new();
        for (n, raw) in text.lines().enumerate() {
            let bad = |message: String| KeysError::Line {
                path: path.to_path_buf(),
                line: n + 1,
                message,
            };
            if raw.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(raw).map_err(|e| bad(e.to_string()))?;
            if line.id.is_empty() {
                return Err(bad("\"id\" is empty".into()));
            }
            if RESERVED_IDS.contains(&line.id.as_str()) {
                return Err(bad(format!(
                    "the id {:?} is reserved (the server's own name in the metrics and audit); choose another",
                    line.id
                )));
            }
            let digest = parse_digest(&line.sha256).ok_or_else(|| {
                bad("\"sha256\" must be 64 hex digits (the SHA-256 of the token)".into())
            })?;
            if !ids.insert(line.id.clone()) {
                return Err(bad(format!("the id {:?} is used twice", line.id)));
            }
            if !digests.insert(digest) {
                return Err(bad("this sha256 is another key's too".into()));
            }
            if line.max_parallel_requests == Some(0) || line.tokens_per_minute == Some(0) {
                return Err(bad(
                    "a limit of 0 would refuse every request; remove the key or the limit".into(),
                ));
            }
            keys.push(Key {
                digest,
                caller: Caller {
                    id: line.id,
                    limits: Limits {
                        max_parallel_requests: line.max_parallel_requests,
                        tokens_per_minute: line.tokens_per_minute,
                    },
                    priority: line.priority,
                    role: if line.admin { Role::Admin } else { Role::User },
                },
            });
        }
        if keys.is_empty() {
            return Err(KeysError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(Self { keys })
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the table has no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key whose digest is the token's.
    pub fn find(&self, token: &str) -> Option<&Caller> {
        let digest = sha256(token.as_bytes());
        // Every key is compared whole, so the time taken does not say which one matched.
        let mut found = None;
        for k in &self.keys {
            if same(&k.digest, &digest) {
                found = Some(&k.caller);
            }
        }
        found
    }
}

/// The SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn parse_digest(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Equal, compared in constant time.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The keys in use: the file's (replaced whole by [`Self::reload`]) and the `--api-key-env`
/// token.
pub struct KeyStore {
    file: Option<PathBuf>,
    table: RwLock<Arc<KeyTable>>,
    single: Option<String>,
}

impl KeyStore {
    /// Keys from `file` (read now: an error stops the server from starting) and the single
    /// token `single`.
    pub fn new(file: Option<PathBuf>, single: Option<String>) -> Result<Self, KeysError> {
        let table = match &file {
            Some(p) => KeyTable::load(p)?,
            None => KeyTable::default(),
        };
        Ok(Self {
            file,
            table: RwLock::new(Arc::new(table)),
            single,
        })
    }

    /// No key at all: every request is let in as `default`.
    pub fn open() -> Self {
        Self {
            file: None,
            table: RwLock::new(Arc::new(KeyTable::default())),
            single: None,
        }
    }

    /// Whether requests must carry a key.
    pub fn required(&self) -> bool {
        self.file.is_some() || self.single.is_some()
    }

    /// The keys file, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    fn current(&self) -> Arc<KeyTable> {
        match self.table.read() {
            Ok(t) => t.clone(),
            // A writer never panics while holding the lock (it only swaps an Arc).
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Read the file again; on an error the keys in use stay. The number of keys read.
    pub fn reload(&self) -> Result<usize, KeysError> {
        let Some(path) = &self.file else {
            return Ok(0);
        };
        let table = KeyTable::load(path)?;
        let n = table.len();
        match self.table.write() {
            Ok(mut t) => *t = Arc::new(table),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(table),
        }
        Ok(n)
    }

    /// Who holds `token`, or `None` for a token no key has.
    pub fn caller(&self, token: Option<&str>) -> Option<Caller> {
        if !self.required() {
            return Some(Caller::default_key());
        }
        let token = token?;
        if let Some(single) = &self.single {
            if same(single.as_bytes(), token.as_bytes()) {
                return Some(Caller::default_key());
            }
        }
        self.current().find(token).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, token: &str, extra: &str) -> String {
        format!(
            r#"{{"id": "{id}", "sha256": "{}"{extra}}}"#,
            hex(&sha256(token.as_bytes()))
        )
    }

    #[test]
    fn tokens_find_their_keys() {
        let text = format!(
            "{}\n\n{}\n",
            line(
                "a",
                "tok-a",
                r#", "priority": 2, "max_parallel_requests": 1"#
            ),
            line("b", "tok-b", r#", "tokens_per_minute": 50, "admin": true"#)
        );
        let t = KeyTable::parse(Path::new("k"), &text).unwrap();
        assert_eq!(t.len(), 2);
        let a = t.find("tok-a").unwrap();
        assert_eq!((a.id.as_str(), a.priority, a.role), ("a", 2, Role::User));
        assert_eq!(a.limits.max_parallel_requests, Some(1));
        let b = t.find("tok-b").unwrap();
        assert_eq!(b.limits.tokens_per_minute, Some(50));
        assert_eq!((b.priority, b.role), (0, Role::Admin));
        assert!(t.find("tok-c").is_none());
    }

    #[test]
    fn a_bad_line_is_named() {
        let good = line("a", "x", "");
        for (text, says) in [
            (format!("{good}\nnot json"), "line 2"),
            (format!("{good}\n{good}"), "used twice"),
            (r#"{"id": "a", "sha256": "abc"}"#.to_string(), "64 hex"),
            (line("a", "x", r#", "colour": 1"#), "unknown field"),
            (line("a", "x", r#", "tokens_per_minute": 0"#), "limit of 0"),
            (line("default", "x", ""), "reserved"),
            (line("unknown", "x", ""), "reserved"),
            ("\n  \n".to_string(), "holds no key"),
        ] {
            let e = KeyTable::parse(Path::new("keys.jsonl"), &text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says) && e.contains("keys.jsonl"), "{e}");
        }
    }

    #[test]
    fn the_single_token_is_the_default_key() {
        let s = KeyStore::new(None, Some("s3cret".into())).unwrap();
        let single = s.caller(Some("s3cret")).unwrap();
        assert_eq!(
            (single.id.as_str(), single.role),
            (DEFAULT_KEY_ID, Role::Admin)
        );
        assert!(s.caller(Some("other")).is_none());
        assert!(s.caller(None).is_none());
        assert_eq!(
            KeyStore::open().caller(None).unwrap().id,
            DEFAULT_KEY_ID,
            "no key required"
        );
    }

    #[test]
    fn a_bad_reload_keeps_the_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.jsonl");
        std::fs::write(&path, line("a", "tok-a", "")).unwrap();
        let s = KeyStore::new(Some(path.clone()), None).unwrap();
        assert!(s.caller(Some("tok-b")).is_none());
        std::fs::write(&path, "{broken").unwrap();
        assert!(s.reload().is_err());
        assert_eq!(s.caller(Some("tok-a")).unwrap().id, "a");
        std::fs::write(&path, line("b", "tok-b", "")).unwrap();
        assert_eq!(s.reload().unwrap(), 1);
        assert!(s.caller(Some("tok-a")).is_none());
        assert_eq!(s.caller(Some("tok-b")).unwrap().id, "b");
    }
}
