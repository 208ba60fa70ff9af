//! New weights without a restart: `POST /update_weights` (and SGLang's name for it,
//! `POST /update_weights_from_disk`) with `{"model_path": "F.gguf"}`, and
//! `GET /get_weight_version`. Open only when the server was started with `--weight-updates`
//! (a trainer's server); an update is the operator's (a key with `"admin": true`, or the
//! `--api-key-env` token), refused to other keys at the door before anything is read, and
//! audited with the path, the version and the outcome.
//!
//! Every generating request holds a read share of [`Weights::gate`] from before it is routed
//! until its generation ends; an update first names the new version (the caller's
//! `weight_version`, else the file's SHA-256, read while requests still run), then takes the
//! gate whole: requests in flight finish on the old weights, and requests that come meanwhile
//! wait (the gate is fair: once an update waits, new readers queue behind it). With the gate
//! held, the new engines are loaded beside the old ones (so that a file that does not load
//! leaves the old weights serving), put in their place, and the old engines stopped. The new
//! engines start with no memory, so no conversation read with the old weights is reused.
//! `GET /v1/models` names the version in force (`weight_version`).
//!
//! Owns: the routes, the gate and the version in force. Does not own: loading engines or
//! hashing files ([`WeightLoader`], given by the binary), where requests go (`replicas.rs`).

use super::api;
use super::door::{self, Admitted, Endpoint};
use super::replicas::Replica;
use super::server::Server;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Extensions, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// An error of a [`WeightLoader`], shown to the caller with its sources.
pub type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// Loads engines for a weight file: what `lilypad serve` gives the server when updates are on.
pub trait WeightLoader: Send + Sync {
    /// The version of the weights in `path` when the caller names none: `sha256:<hex>`.
    fn version(&self, path: &Path) -> Result<String, LoadError>;
    /// The replicas for the weights in `path`, as many as the server runs (at least one).
    fn load(&self, path: &Path) -> Result<Vec<Replica>, LoadError>;
}

/// The weights in force.
#[derive(Debug, Clone, Default)]
struct Current {
    path: Option<PathBuf>,
    /// `None` until known (the first file's hash is computed after the server starts).
    version: Option<String>,
    /// Updates done.
    updates: u64,
}

/// The weight gate, the version in force and the loader.
pub struct Weights {
    /// Generating requests hold a read share; an update holds it whole.
    pub(crate) gate: Arc<tokio::sync::RwLock<()>>,
    /// Requests holding a share now.
    sharing: Arc<AtomicUsize>,
    /// One update at a time.
    updating: tokio::sync::Mutex<()>,
    current: Mutex<Current>,
    loader: Option<Box<dyn WeightLoader>>,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            gate: Arc::new(tokio::sync::RwLock::new(())),
            sharing: Arc::default(),
            updating: tokio::sync::Mutex::new(()),
            current: Mutex::default(),
            loader: None,
        }
    }
}

impl Weights {
    /// Updates through `loader`, starting from the weights in `path`.
    pub fn updatable(path: PathBuf, loader: Box<dyn WeightLoader>) -> Self {
        Self {
            current: Mutex::new(Current {
                path: Some(path),
                ..Current::default()
            }),
            loader: Some(loader),
            ..Self::default()
        }
    }

    fn current(&self) -> Current {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The version in force, once known.
    pub fn version(&self) -> Option<String> {
        self.current().version
    }

    /// The first weights' version, computed after start: kept unless an update came first.
    pub fn first_version_known(&self, version: String) {
        let mut c = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if c.updates == 0 {
            c.version = Some(version);
        }
    }

    /// A read share of the gate: held by a request from before it is routed until its
    /// generation ends.
    pub(crate) async fn share(&self) -> Share {
        let guard = self.gate.clone().read_owned().await;
        self.sharing.fetch_add(1, Ordering::SeqCst);
        Share {
            _guard: guard,
            sharing: self.sharing.clone(),
        }
    }

    /// The version of `path` by the loader (the first file's, for `lilypad serve` to compute
    /// after start).
    pub fn hash(&self, path: &Path) -> Option<Result<String, LoadError>> {
        self.loader.as_ref().map(|l| l.version(path))
    }
}

/// A request's share of the weight gate, counted while held.
pub(crate) struct Share {
    _guard: tokio::sync::OwnedRwLockReadGuard<()>,
    sharing: Arc<AtomicUsize>,
}

impl Drop for Share {
    fn drop(&mut self) {
        self.sharing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The body of an update, as SGLang takes it.
#[derive(Debug, Deserialize)]
struct UpdateBody {
    model_path: PathBuf,
    /// The name of the new version (default: the file's SHA-256).
    #[serde(default)]
    weight_version: Option<String>,
    /// SGLang's: only `false` (requests in flight always finish).
    #[serde(default)]
    abort_all_requests: bool,
    /// SGLang's: only `null`, `"auto"` or `"gguf"`.
    #[serde(default)]
    load_format: Option<String>,
}

/// SGLang's answer: `{"success": ..., "message": ...}`, 200 or 400.
fn refused(message: impl Into<String>) -> Response {
    let body = serde_json::json!({ "success": false, "message": message.into() });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// A loader's error with its sources, one line.
fn chain(e: &LoadError) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `POST /update_weights` and `POST /update_weights_from_disk`: the operator's (a key with
/// `"admin": true`, see `door.rs`), audited with the path, the version and the outcome.
pub(super) async fn update(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut admitted = match door::enter(
        &server,
        Endpoint::UpdateWeights,
        &extensions,
        &headers,
        body,
    )
    .await
    {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let r = apply(&server, &mut admitted).await;
    admitted.answer(r)
}

/// The update asked by `admitted`, answered.
async fn apply(server: &Arc<Server>, admitted: &mut Admitted) -> Response {
    if server.weights.loader.is_none() {
        return api::error(
            StatusCode::FORBIDDEN,
            "weight_updates_off",
            "weight updates are off: start lilypad serve with --weight-updates (and a model file)"
                .into(),
        );
    }
    let body: UpdateBody = match serde_json::from_str(&admitted.take_body()) {
        Ok(b) => b,
        Err(e) => {
            return refused(format!(
                "the body is not an update ({{\"model_path\": \"F.gguf\"}}): {e}"
            ))
        }
    };
    if let Some(r) = admitted.record() {
        r.model_path = Some(body.model_path.display().to_string());
        r.weight_version.clone_from(&body.weight_version);
    }
    if body.abort_all_requests {
        return refused("abort_all_requests is not supported: requests in flight always finish on the old weights");
    }
    if let Some(f) = body
        .load_format
        .as_deref()
        .filter(|f| !matches!(*f, "auto" | "gguf"))
    {
        return refused(format!(
            "load_format {f:?} is not supported: the weights are a GGUF file"
        ));
    }
    if !body.model_path.is_file() {
        return refused(format!("{} is not a file", body.model_path.display()));
    }
    let _one = server.weights.updating.lock().await;
    let version = match body.weight_version.clone() {
        Some(v) => v,
        None => {
            let (s, path) = (server.clone(), body.model_path.clone());
            match tokio::task::spawn_blocking(move || s.weights.hash(&path)).await {
                Ok(Some(Ok(v))) => v,
                Ok(Some(Err(e))) => {
                    return refused(format!(
                        "reading {}: {}",
                        body.model_path.display(),
                        chain(&e)
                    ))
                }
                Ok(None) | Err(_) => return refused("the weights could not be hashed"),
            }
        }
    };
    // Requests in flight finish; new ones wait from here on.
    let paused = std::time::Instant::now();
    let in_flight = server.weights.sharing.load(Ordering::SeqCst);
    let gate = server.weights.gate.clone().write_owned().await;
    let (s, path) = (server.clone(), body.model_path.clone());
    let loaded = tokio::task::spawn_blocking(move || {
        let loader = s.weights.loader.as_ref().ok_or("weight updates are off")?;
        let fresh = loader.load(&path)?;
        let vocab = |r: &Replica| r.model.engine().vocabulary();
        let (now, new) = (vocab(&s.replicas.renderer()), fresh.first().and_then(vocab));
        if now != new {
            return Err(format!(
                "the new weights have another vocabulary ({} tokens; the served model has {}): a trainer's rounds keep the tokenizer",
                new.map_or("no".into(), |n| n.to_string()),
                now.map_or("no".into(), |n| n.to_string()),
            )
            .into());
        }
        let mut fresh = fresh.into_iter();
        let first = fresh.next().ok_or("the loader gave no replica")?;
        let old = s.replicas.replace(first, fresh.collect());
        // The old engines stop once the last request holding one ends (none is generating).
        drop(old);
        Ok::<_, LoadError>(())
    })
    .await;
    let result = match loaded {
        Ok(r) => r,
        Err(e) => Err(format!("loading stopped: {e}").into()),
    };
    if let Err(e) = result {
        drop(gate);
        tracing::warn!(path = %body.model_path.display(), "weight update refused: {}", chain(&e));
        return refused(format!("the weights in force stay: {}", chain(&e)));
    }
    {
        let mut c = server
            .weights
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        c.path = Some(body.model_path.clone());
        c.version = Some(version.clone());
        c.updates += 1;
    }
    drop(gate);
    if let Some(r) = admitted.record() {
        r.weight_version = Some(version.clone());
    }
    let paused_ms = paused.elapsed().as_millis() as u64;
    tracing::info!(
        path = %body.model_path.display(),
        version = %version,
        paused_ms,
        in_flight,
        "new weights in force"
    );
    let answer = serde_json::json!({
        "success": true,
        "message": format!("{} in force", body.model_path.display()),
        "weight_version": version,
        // Requests that were generating when the update came, and finished on the old weights
        // before it went on.
        "requests_finished_first": in_flight,
        "paused_ms": paused_ms,
    });
    (StatusCode::OK, axum::Json(answer)).into_response()
}

/// `GET /get_weight_version`: `{"weight_version": ...}` (null until known).
pub(super) async fn version(
    State(server): State<Arc<Server>>,
    extensions: Extensions,
    headers: HeaderMap,
) -> Response {
    let admitted = match door::enter(
        &server,
        Endpoint::WeightVersion,
        &extensions,
        &headers,
        Body::empty(),
    )
    .await
    {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let c = server.weights.current();
    let r = axum::Json(serde_json::json!({
        "weight_version": c.version,
        "model_path": c.path,
    }))
    .into_response();
    admitted.answer(r)
}
