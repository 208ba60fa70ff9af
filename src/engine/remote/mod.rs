//! The remote engine: a client for any OpenAI-compatible chat-completions server (SGLang, vLLM,
//! llama.cpp's server, llama-cpp-python, `lilypad serve`). It takes messages and tools rather
//! than prompt text (the server renders the template) and streams the reply back as the same
//! [`EngineEvent`]s the in-process engine sends.
//!
//! Two server styles exist, and both are handled (`output` in [`RemoteSettings`]):
//! - servers that parse the output themselves (SGLang with the `qwen3` reasoning parser and the
//!   `qwen3_coder` tool parser, vLLM likewise, `lilypad serve`) send `reasoning_content` (or
//!   `reasoning`) and `tool_calls` deltas: these become [`EngineEvent::Parsed`];
//! - servers that return the raw text send everything as `content`: it becomes
//!   [`EngineEvent::Piece`], so Lilypad's own parser finds reasoning and tool calls.
//!
//! `auto` tells them apart per reply and remembers what it learned (see `decode`).
//!
//! Invariants: every stream ends with exactly one `Done` or `Failed`; cancelling closes the
//! HTTP connection (servers abort a request whose client went away) and ends the stream with
//! `StopReason::Cancelled`; a failed attempt is retried (429, 5xx, connection errors, with
//! backoff) only while nothing of the reply has been delivered. Figures come from the
//! server's `usage` (`prompt_tokens_details.cached_tokens` as reused tokens), or, from a server
//! that sends none, from the checkpoint's `tokenizer.json` when one is set (`count`), and the
//! client's own clock. Does not own: the prompt template (the server's) or the agent's parsing.

mod client;
mod count;
mod decode;
mod request;
mod sse;

pub use count::{find as find_tokenizer, TokenCounter};
pub use request::{message_json, ChatRequest};

use super::stream::GenerationStream;
use super::traits::Engine;
use super::types::{EngineError, GenerateRequest, Prompt, PromptForm};
use super::SequenceId;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// Which server style to expect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStyle {
    /// Find out from the replies (see the module docs).
    #[default]
    Auto,
    /// The server splits reasoning and tool calls (`reasoning_content`, `tool_calls`).
    Parsed,
    /// The server returns the model's raw text as `content`.
    Raw,
}

/// Settings of the remote engine (the `[remote]` section of the config file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteSettings {
    /// The server: `http://host:port`, `http://host:port/v1` or the full
    /// `.../v1/chat/completions` URL. `None`: use the in-process engine.
    pub endpoint: Option<String>,
    /// Name of the environment variable that holds the API key (sent as a bearer token).
    pub api_key_env: Option<String>,
    /// Model name to request; `None`: the first model the server lists at `/v1/models`.
    pub model_name: Option<String>,
    pub output: OutputStyle,
    /// Seconds to open a connection.
    pub connect_timeout_secs: u64,
    /// Seconds to wait for the response headers (prompt reading may come first on some
    /// servers) and then between two pieces of the streamed reply.
    pub read_timeout_secs: u64,
    /// Retries of a request that failed before any output (connection errors, 429, 5xx).
    pub retries: u32,
    /// First retry delay in milliseconds; doubles each retry (capped at 8 s), or follows the
    /// server's `Retry-After`.
    pub backoff_ms: u64,
    /// Extra fields merged into every request body (server-specific options such as
    /// `chat_template_kwargs` or `skip_special_tokens`).
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// A `tokenizer.json` to count tokens with when the server reports no usage (so the
    /// context limit holds); `None`: the reply's pieces are counted and the prompt is not.
    pub tokenizer: Option<std::path::PathBuf>,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        Self {
            endpoint: None,
            api_key_env: None,
            model_name: None,
            output: OutputStyle::Auto,
            connect_timeout_secs: 10,
            read_timeout_secs: 600,
            retries: 3,
            backoff_ms: 500,
            extra_body: serde_json::Map::new(),
            tokenizer: None,
        }
    }
}

/// What went wrong talking to the server, in words a user can act on.
#[derive(Debug, Error)]
pub enum RemoteError {
    #[error("no endpoint configured: pass --endpoint URL or set [remote] endpoint")]
    NoEndpoint,
    #[error("endpoint {url:?} is not an http(s) URL")]
    BadEndpoint { url: String },
    #[error("environment variable {name} (from --api-key-env) is not set")]
    MissingKey { name: String },
    #[error("cannot reach the server at {url}: {detail} (is it running? check --endpoint)")]
    Unreachable { url: String, detail: String },
    #[error("the server at {url} did not answer within {secs} s")]
    Timeout { url: String, secs: u64 },
    #[error("the server at {url} refused the request (HTTP {status}): {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    /// The server answered with a status, but its body (the reason of a refusal, or the list
    /// of models) broke off before it was read.
    #[error(
        "the server at {url} answered HTTP {status}, but its body could not be read: {source}"
    )]
    UnreadableBody {
        url: String,
        status: u16,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "the server at {url} sent something that is not an OpenAI chat-completions reply: {detail}"
    )]
    Malformed { url: String, detail: String },
    #[error("the connection to {url} broke in the middle of the reply: {detail}")]
    Dropped { url: String, detail: String },
    #[error("the server at {url} lists no models at /v1/models; pass --model-name")]
    NoModel { url: String },
    #[error("cannot start the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot start the remote engine's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the remote engine has stopped")]
    Stopped,
    #[error("cannot load the tokenizer {path} (from --tokenizer): {source}")]
    Tokenizer {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl From<RemoteError> for EngineError {
    /// The server behind the engine failed: an upstream failure to the engine's callers.
    fn from(e: RemoteError) -> Self {
        EngineError::Upstream(Box::new(e))
    }
}

/// The endpoint's URLs, derived once from what the user wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `.../v1/chat/completions`
    pub chat: String,
    /// `.../v1/models`
    pub models: String,
}

impl Endpoint {
    /// Accepts `http://h:p`, `http://h:p/v1`, `http://h:p/v1/chat/completions`.
    pub fn parse(url: &str) -> Result<Self, RemoteError> {
        let trimmed = url.trim().trim_end_matches('/');
        let scheme_ok = trimmed.starts_with("http://") || trimmed.starts_with("https://");
        if !scheme_ok || reqwest::Url::parse(trimmed).is_err() {
            return Err(RemoteError::BadEndpoint {
                url: url.to_string(),
            });
        }
        let base = if let Some(b) = trimmed.strip_suffix("/chat/completions") {
            b.to_string()
        } else if trimmed.ends_with("/v1") {
            trimmed.to_string()
        } else {
            format!("{trimmed}/v1")
        };
        Ok(Self {
            chat: format!("{base}/chat/completions"),
            models: format!("{base}/models"),
        })
    }
}

/// The style learned so far (`auto`): 0 unknown, 1 parsed, 2 raw.
#[derive(Debug, Default)]
pub(crate) struct Learned(AtomicU8);

impl Learned {
    pub(crate) fn get(&self) -> Option<OutputStyle> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(OutputStyle::Parsed),
            2 => Some(OutputStyle::Raw),
            _ => None,
        }
    }

    pub(crate) fn set(&self, style: OutputStyle) {
        let v = match style {
            OutputStyle::Parsed => 1,
            OutputStyle::Raw => 2,
            OutputStyle::Auto => 0,
        };
        self.0.store(v, Ordering::Relaxed);
    }
}

/// Everything a request task needs, shared between requests.
pub(crate) struct Shared {
    pub endpoint: Endpoint,
    pub settings: RemoteSettings,
    pub api_key: Option<String>,
    pub http: reqwest::Client,
    pub model: tokio::sync::OnceCell<String>,
    pub learned: Learned,
    /// Counts tokens when the server does not (`settings.tokenizer`).
    pub counter: Option<TokenCounter>,
    /// The `X-Session-ID` of each named sequence ([`Engine::name_sequence`]).
    pub names: std::sync::Mutex<std::collections::HashMap<SequenceId, String>>,
}

/// A client of one OpenAI-compatible server. Cheap to share; owns a small runtime of its own
/// so it works from async and blocking callers alike.
pub struct RemoteEngine {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl RemoteEngine {
    /// A client for `settings.endpoint`; reads the API key from the named variable now.
    pub fn new(settings: &RemoteSettings) -> Result<Self, RemoteError> {
        let url = settings
            .endpoint
            .as_deref()
            .ok_or(RemoteError::NoEndpoint)?;
        let endpoint = Endpoint::parse(url)?;
        let api_key = match &settings.api_key_env {
            Some(name) => Some(
                std::env::var(name)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| RemoteError::MissingKey { name: name.clone() })?,
            ),
            None => None,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(settings.connect_timeout_secs.max(1)))
            .read_timeout(Duration::from_secs(settings.read_timeout_secs.max(1)))
            .user_agent(concat!("lilypad/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(RemoteError::Client)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("lilypad-remote")
            .enable_all()
            .build()
            .map_err(RemoteError::Runtime)?;
        let counter = match &settings.tokenizer {
            Some(path) => Some(TokenCounter::load(path)?),
            None => None,
        };
        let model = tokio::sync::OnceCell::new();
        if let Some(name) = &settings.model_name {
            // A fresh cell accepts its first value: this cannot fail.
            let _ = model.set(name.clone());
        }
        Ok(Self {
            shared: Arc::new(Shared {
                endpoint,
                settings: settings.clone(),
                api_key,
                http,
                model,
                names: Default::default(),
                learned: Learned::default(),
                counter,
            }),
            runtime: Some(runtime),
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.shared.endpoint
    }

    /// The model name in use, once known (configured, or after the first request found it).
    pub fn model_name(&self) -> Option<String> {
        self.shared.model.get().cloned()
    }

    /// The server style in force: the configured one, or what `auto` has learned.
    pub fn output_style(&self) -> OutputStyle {
        match self.shared.settings.output {
            OutputStyle::Auto => self.shared.learned.get().unwrap_or(OutputStyle::Auto),
            s => s,
        }
    }

    /// Send one chat-completions request; the reply streams in as engine events.
    pub fn chat(&self, request: ChatRequest) -> GenerationStream {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        match &self.runtime {
            Some(rt) => {
                rt.spawn(client::run(
                    self.shared.clone(),
                    request,
                    tx,
                    cancel.clone(),
                ));
            }
            None => {
                let _ = tx.send(super::EngineEvent::Failed(RemoteError::Stopped.into()));
            }
        }
        GenerationStream::new(rx, cancel)
    }

    /// Run `f` on the engine's runtime and wait for it (blocking the calling thread).
    fn block_on<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = Result<T, RemoteError>> + Send + 'static,
    ) -> Result<T, RemoteError> {
        let rt = self.runtime.as_ref().ok_or(RemoteError::Stopped)?;
        let (tx, rx) = std::sync::mpsc::channel();
        rt.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().map_err(|_| RemoteError::Stopped)?
    }

    /// The models the server lists (`/v1/models`); blocks.
    pub fn list_models(&self) -> Result<Vec<String>, RemoteError> {
        let shared = self.shared.clone();
        self.block_on(async move { client::list_models(&shared).await })
    }

    /// Ask the server now (blocking) which model to use: checks that it is reachable and takes
    /// the key, and fills in the model name when none was configured, so that errors come at
    /// start rather than at the first turn.
    pub fn connect(&self) -> Result<String, RemoteError> {
        let shared = self.shared.clone();
        self.block_on(async move {
            let names = client::list_models(&shared).await?;
            if let Some(configured) = shared.model.get() {
                if !names.is_empty() && !names.contains(configured) {
                    tracing::warn!(
                        "the server does not list model {configured:?} (it lists {names:?})"
                    );
                }
                return Ok(configured.clone());
            }
            let first = names
                .into_iter()
                .next()
                .ok_or_else(|| RemoteError::NoModel {
                    url: shared.endpoint.models.clone(),
                })?;
            // Another request may have filled it meanwhile: either answer is the server's.
            let _ = shared.model.set(first.clone());
            Ok(shared.model.get().cloned().unwrap_or(first))
        })
    }
}

impl Engine for RemoteEngine {
    fn describe(&self) -> String {
        let model = self
            .model_name()
            .unwrap_or_else(|| "first listed model".to_string());
        let style = match self.output_style() {
            OutputStyle::Auto => "",
            OutputStyle::Parsed => ", server parses",
            OutputStyle::Raw => ", raw text",
        };
        format!("remote: {model} at {}{style}", self.endpoint().chat)
    }

    fn reads(&self) -> PromptForm {
        PromptForm::Chat
    }

    fn name_sequence(&self, sequence: SequenceId, name: &str) {
        let mut names = self.shared.names.lock().unwrap_or_else(|p| p.into_inner());
        names.insert(sequence, name.to_string());
    }

    /// The server keeps its own memory of conversations, so the sequence is not sent; its
    /// name, when it has one, is the request's `X-Session-ID`.
    fn generate(&self, request: GenerateRequest) -> Result<GenerationStream, EngineError> {
        let session = self
            .shared
            .names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&request.sequence)
            .cloned();
        match request.prompt {
            Prompt::Chat { messages, tools } => Ok(self.chat(ChatRequest {
                messages,
                tools,
                max_tokens: request.max_tokens,
                sampling: request.sampling,
                report: request.report,
                session,
            })),
            other => Err(EngineError::PromptForm {
                engine: "a remote server",
                reads: PromptForm::Chat,
                given: other.form(),
            }),
        }
    }
}

impl Drop for RemoteEngine {
    fn drop(&mut self) {
        // Dropping a runtime from inside another one panics; this way never blocks.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_forms() {
        let e = Endpoint::parse("http://gpu:30000").unwrap();
        assert_eq!(e.chat, "http://gpu:30000/v1/chat/completions");
        assert_eq!(e.models, "http://gpu:30000/v1/models");
        assert_eq!(Endpoint::parse("http://gpu:30000/v1/").unwrap(), e);
        assert_eq!(
            Endpoint::parse("http://gpu:30000/v1/chat/completions").unwrap(),
            e
        );
        assert!(Endpoint::parse("gpu:30000").is_err());
        assert!(Endpoint::parse("ftp://gpu").is_err());
    }

    #[test]
    fn missing_key_variable_is_named() {
        let s = RemoteSettings {
            endpoint: Some("http://127.0.0.1:9".into()),
            api_key_env: Some("LILYPAD_TEST_SURELY_UNSET_KEY".into()),
            ..Default::default()
        };
        let err = RemoteEngine::new(&s).err().unwrap().to_string();
        assert!(err.contains("LILYPAD_TEST_SURELY_UNSET_KEY"), "{err}");
    }
}
