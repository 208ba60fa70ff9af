//! The `[serve]` settings, the errors of starting a server, and the check of its listening
//! address. Does not own the server's state (`server.rs`) or its routes (`mod.rs`).

use super::audit::AuditError;
use super::keys::KeysError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use thiserror::Error;

/// Settings of `lilypad serve` (the `[serve]` section of the config file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// Address and port to listen on.
    pub listen: String,
    /// Allow a non-loopback listening address (then set `api_key_env` too).
    pub allow_remote: bool,
    /// Environment variable holding the token clients must send (`Authorization: Bearer`).
    pub api_key_env: Option<String>,
    /// Name of the served model in `/v1/models` (default: the model file's name).
    pub model_name: Option<String>,
    /// Requests that may be in flight (generating or waiting for a sequence); more are turned
    /// away with 503.
    pub max_queue: usize,
    /// Generations at once (each choice of a request is one); the others wait, higher key
    /// priority first (default: the engine's `sequences` times the replicas).
    pub parallel: Option<usize>,
    /// API keys with their limits and priorities, JSON Lines (`--keys FILE`); re-read on
    /// SIGHUP.
    pub keys_file: Option<PathBuf>,
    /// Directory of the audit trail, one JSON line per request (`--audit DIR`).
    pub audit_dir: Option<PathBuf>,
    /// Audit lines hold the request's messages too (`--audit-content`).
    pub audit_content: bool,
    /// Remove audit files of days older than this.
    pub audit_retention_days: Option<u32>,
    /// Engines behind the one front end (`--replicas N`), each with its own context (default:
    /// one per GPU device, one on a CPU-only build).
    pub replicas: Option<usize>,
    /// Seconds a client has to send a request's headers, and then its body; a keep-alive
    /// connection idle this long is closed.
    pub read_timeout_secs: u64,
    /// The most choices one request may ask for (`"n"`, see `choices.rs`).
    pub max_n: usize,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_string(),
            allow_remote: false,
            api_key_env: None,
            model_name: None,
            max_queue: 64,
            parallel: None,
            keys_file: None,
            audit_dir: None,
            audit_content: false,
            audit_retention_days: None,
            replicas: None,
            read_timeout_secs: 30,
            max_n: 16,
        }
    }
}

/// Errors of starting the server.
#[derive(Debug, Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr} is not a valid listening address (use HOST:PORT, e.g. 127.0.0.1:8080)")]
    BadAddress { addr: String },
    #[error("refusing to listen on {addr}: it is not a loopback address; pass --allow-remote (and protect it with --api-key-env NAME) to serve other machines")]
    NotLoopback { addr: String },
    #[error("environment variable {name} (from --api-key-env) is not set or empty")]
    MissingKey { name: String },
    #[error(transparent)]
    Keys(#[from] KeysError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

/// Check a listening address: valid, and loopback unless `allow_remote`.
pub fn check_listen(addr: &str, allow_remote: bool) -> Result<std::net::SocketAddr, ServeError> {
    let parsed: std::net::SocketAddr = addr.parse().map_err(|_| ServeError::BadAddress {
        addr: addr.to_string(),
    })?;
    if !parsed.ip().is_loopback() && !allow_remote {
        return Err(ServeError::NotLoopback {
            addr: addr.to_string(),
        });
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_unless_told_otherwise() {
        assert!(check_listen("127.0.0.1:8080", false).is_ok());
        assert!(check_listen("[::1]:8080", false).is_ok());
        let err = check_listen("0.0.0.0:8080", false).unwrap_err().to_string();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(check_listen("0.0.0.0:8080", true).is_ok());
        assert!(check_listen("localhost", false).is_err());
    }
}
