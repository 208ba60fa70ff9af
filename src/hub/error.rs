//! What can go wrong pulling or finding a model, said in plain words.

use std::path::PathBuf;
use thiserror::Error;

/// Errors of the Hub client and its cache.
#[derive(Debug, Error)]
pub enum HubError {
    #[error("`{given}` is not a model name: expected ORG/NAME or ORG/NAME:TAG")]
    BadName { given: String },
    #[error("{name} is not pulled: run `lilypad pull {name}`{}", .why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default())]
    NotPulled { name: String, why: Option<String> },
    #[error("HF_HUB_OFFLINE is set and {name} is not in the cache at {cache}")]
    Offline { name: String, cache: PathBuf },
    #[error("no cache directory: set HF_HUB_CACHE or HF_HOME")]
    NoCache,
    #[error("{repo} at {revision} has no GGUF file{}; its files: {}", .tag.as_deref().map(|t| format!(" for tag {t}")).unwrap_or_default(), .files.join(", "))]
    NoGguf {
        repo: String,
        revision: String,
        tag: Option<String>,
        files: Vec<String>,
    },
    #[error("split file {file} lacks part {missing} in {repo}")]
    SplitIncomplete {
        repo: String,
        file: String,
        missing: String,
    },
    #[error("repository {repo} was not found on {endpoint} (or it is private: set HF_TOKEN)")]
    RepoNotFound { repo: String, endpoint: String },
    #[error("{repo} has no revision `{revision}`")]
    RevisionNotFound { repo: String, revision: String },
    #[error("{repo} has no file {file}")]
    EntryNotFound { repo: String, file: String },
    #[error("{repo} is gated: accept its conditions on its Hub page, then set HF_TOKEN to a token of that account (HTTP {status})")]
    Gated { repo: String, status: u16 },
    #[error("the Hub refused {url} (HTTP {status}): set HF_TOKEN (or write the token to $HF_HOME/token); the repository may be gated, private, or not exist")]
    Unauthorized { url: String, status: u16 },
    #[error("{url} answered HTTP {status}{}", .message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        message: Option<String>,
    },
    #[error("request to {url} failed: {source}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("download from {url} was interrupted: {why}")]
    Interrupted { url: String, why: String },
    #[error("{url} did not send {header}")]
    MissingHeader { url: String, header: &'static str },
    #[error("{url} answered with JSON that cannot be read: {source}")]
    Json {
        url: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{file}: sha256 {actual} does not match the Hub's {expected}; the download was deleted"
    )]
    HashMismatch {
        file: String,
        expected: String,
        actual: String,
    },
    #[error("{file}: downloaded {actual} bytes, the Hub said {expected}")]
    SizeMismatch {
        file: String,
        expected: u64,
        actual: u64,
    },
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl HubError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
