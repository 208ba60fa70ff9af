//! The Kubernetes sandbox: one hardened pod per session (kube-rs), the workspace uploaded as a
//! tar through exec, every command and file operation through exec, and the session patch
//! computed on the host from a tar of the pod's workspace.
//!
//! Objects (see [`objects`]): a session ConfigMap owning a deny-all NetworkPolicy
//! and the pod; one delete removes all. Configuration comes from a kubeconfig (`KUBECONFIG`,
//! `~/.kube/config`, or an explicit file and context) or the in-cluster service account. The
//! RBAC it needs is in docs/kube-rbac.yaml. Leftovers (expired sessions, or dead sessions of
//! this host) are swept by label at start.
//!
//! Exec over the websocket protocol of older clusters cannot close stdin, so every upload
//! carries its size and the reader stops after that many bytes.

mod objects;

use super::ops::{Backend, RawExit, Remote};
use crate::sandbox::output::{pump, Collector};
use crate::sandbox::workspace::Workspace;
use crate::sandbox::{ExecOutput, ExecRequest, Resolved, Sandbox, SandboxError, SandboxKind};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, AttachParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
pub use objects::sweep_leftovers;
use objects::{delete_session, CONTAINER};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// Where the workspace appears inside the pod.
pub const WORKSPACE: &str = "/workspace";

/// Kubernetes sandbox settings (a `[sandbox.kube]`-style config section; every field optional).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubeSettings {
    pub image: String,
    /// `IfNotPresent`, `Always` or `Never`.
    pub image_pull_policy: String,
    /// Namespace; `None`: the kubeconfig context's (or the in-cluster) namespace.
    pub namespace: Option<String>,
    /// A kubeconfig file; `None`: `KUBECONFIG`, `~/.kube/config`, then in-cluster.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// Limits.
    pub cpu: String,
    pub memory: String,
    /// Requests (what the scheduler reserves).
    pub cpu_request: String,
    pub memory_request: String,
    pub ephemeral_storage: String,
    pub workspace_size: String,
    pub tmp_size: String,
    /// User and group id the sandbox runs as.
    pub uid: i64,
    /// The pod is stopped by the cluster after this long, whatever happens to Lilypad.
    pub active_deadline_secs: i64,
    /// Seconds to wait for the pod to be ready (image pulls included).
    pub ready_timeout_secs: u64,
}

impl Default for KubeSettings {
    fn default() -> Self {
        Self {
            image: "debian:bookworm-slim".into(),
            image_pull_policy: "IfNotPresent".into(),
            namespace: None,
            kubeconfig: None,
            context: None,
            cpu: "1".into(),
            memory: "2Gi".into(),
            cpu_request: "50m".into(),
            memory_request: "64Mi".into(),
            ephemeral_storage: "4Gi".into(),
            workspace_size: "2Gi".into(),
            tmp_size: "512Mi".into(),
            uid: 1000,
            active_deadline_secs: 4 * 3600,
            ready_timeout_secs: 180,
        }
    }
}

pub(crate) fn engine_err(context: impl Into<String>) -> impl FnOnce(kube::Error) -> SandboxError {
    let context = context.into();
    move |e| match &e {
        kube::Error::Api(s) if s.code == 403 => SandboxError::Unavailable {
            what: format!("Kubernetes refused {context}: {}", s.message),
            hint: "grant the sandbox's identity the Role in docs/kube-rbac.yaml in this namespace"
                .into(),
        },
        _ => SandboxError::Engine {
            engine: "kubernetes",
            context,
            message: e.to_string(),
        },
    }
}

/// A client and namespace from the settings (see the module docs).
pub async fn connect(s: &KubeSettings) -> Result<(Client, String), SandboxError> {
    let unavailable = |what: String| SandboxError::Unavailable {
        what,
        hint: "point KUBECONFIG (or --kubeconfig/--kube-context) at a cluster you may create pods \
               in; for the test cluster run `sudo scripts/k8s-up.sh`"
            .into(),
    };
    let opts = KubeConfigOptions {
        context: s.context.clone(),
        ..Default::default()
    };
    let config = match (&s.kubeconfig, &s.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                unavailable(format!("cannot read kubeconfig {}: {e}", path.display()))
            })?;
            Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| unavailable(e.to_string()))?
        }
        (None, Some(_)) => Config::from_kubeconfig(&opts)
            .await
            .map_err(|e| unavailable(e.to_string()))?,
        (None, None) => Config::infer()
            .await
            .map_err(|e| unavailable(format!("no Kubernetes configuration found: {e}")))?,
    };
    let url = config.cluster_url.to_string();
    let ns = s
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config).map_err(|e| unavailable(format!("{url}: {e}")))?;
    client
        .apiserver_version()
        .await
        .map_err(|e| unavailable(format!("cannot reach the Kubernetes API at {url}: {e}")))?;
    Ok((client, ns))
}

/// Exec into the session's pod.
pub(crate) struct KubeBackend {
    pods: Api<Pod>,
    name: String,
}

#[async_trait]
impl Backend for KubeBackend {
    async fn exec(
        &self,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        out: &mut Collector,
        err: &mut Collector,
        deadline: Instant,
    ) -> Result<RawExit, SandboxError> {
        let ap = AttachParams::default()
            .container(CONTAINER)
            .stdin(stdin.is_some())
            .stdout(true)
            .stderr(true);
        let mut proc = self
            .pods
            .exec(&self.name, argv, &ap)
            .await
            .map_err(engine_err(format!("exec in pod {}", self.name)))?;
        let mut so = proc.stdout();
        let mut se = proc.stderr();
        let status = proc.take_status();
        let writer = match (stdin, proc.stdin()) {
            (Some(data), Some(mut w)) => Some(tokio::spawn(async move {
                let _ = w.write_all(&data).await;
                let _ = w.flush().await;
                // Kept open: closing it would not reach the process on this protocol.
                std::future::pending::<()>().await;
            })),
            _ => None,
        };
        let finished = pump(&mut so, &mut se, out, err, deadline).await;
        if let Some(w) = writer {
            w.abort();
        }
        if !finished {
            proc.abort();
            return Ok(RawExit::Deadline);
        }
        let Some(status) = status else {
            return Ok(RawExit::Exited(-1));
        };
        let st = match tokio::time::timeout_at(deadline.into(), status).await {
            Ok(st) => st,
            Err(_) => {
                proc.abort();
                return Ok(RawExit::Deadline);
            }
        };
        Ok(RawExit::Exited(exit_code(st)))
    }

    async fn recycle(&self) -> Result<(), SandboxError> {
        // As the sandbox user: every process it can signal except PID 1 (the pod's keeper).
        let mut out = Collector::new(1024);
        let mut err = Collector::new(1024);
        let argv = vec!["sh".into(), "-c".into(), "kill -9 -1".into()];
        self.exec(
            argv,
            None,
            &mut out,
            &mut err,
            Instant::now() + Duration::from_secs(30),
        )
        .await
        .map(|_| ())
    }
}

/// The exit code from an exec's final status: none or Success means 0.
fn exit_code(st: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>) -> i64 {
    let Some(st) = st else { return 0 };
    if st.status.as_deref() == Some("Success") {
        return 0;
    }
    st.details
        .and_then(|d| d.causes)
        .into_iter()
        .flatten()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))
        .and_then(|c| c.message)
        .and_then(|m| m.parse().ok())
        .unwrap_or(-1)
}

/// See the module docs.
pub struct KubeSandbox {
    ws: Workspace,
    remote: Remote<KubeBackend>,
    client: Client,
    namespace: String,
    name: String,
    session: String,
    settings: KubeSettings,
    closed: AtomicBool,
    execs: AtomicU64,
}

impl std::fmt::Debug for KubeSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeSandbox")
            .field("namespace", &self.namespace)
            .field("pod", &self.name)
            .finish()
    }
}

impl KubeSandbox {
    /// Create the session's objects, wait for the pod, upload the workspace.
    pub async fn start(ws: Workspace, s: &KubeSettings) -> Result<Self, SandboxError> {
        let (client, ns) = connect(s).await?;
        let swept = sweep_leftovers(&client, &ns).await?;
        if swept > 0 {
            tracing::info!(swept, "deleted leftover Lilypad sessions");
        }
        let session = crate::sandbox::session_id();
        let name = format!("lilypad-{session}");
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        let cm = cms
            .create(
                &PostParams::default(),
                &objects::config_map(&name, &session, s.active_deadline_secs)?,
            )
            .await
            .map_err(engine_err("creating the session ConfigMap"))?;
        match Self::start_pod(ws, s, &client, &ns, &name, &session, &cm).await {
            Ok(sb) => Ok(sb),
            Err(e) => {
                let _ = delete_session(&client, &ns, &name).await;
                Err(e)
            }
        }
    }

    async fn start_pod(
        ws: Workspace,
        s: &KubeSettings,
        client: &Client,
        ns: &str,
        name: &str,
        session: &str,
        cm: &ConfigMap,
    ) -> Result<Self, SandboxError> {
        let nps: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
        nps.create(
            &PostParams::default(),
            &objects::network_policy(name, session, cm)?,
        )
        .await
        .map_err(engine_err("creating the NetworkPolicy"))?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        pods.create(&PostParams::default(), &objects::pod(name, session, cm, s)?)
            .await
            .map_err(engine_err("creating the sandbox pod"))?;
        let ready = Duration::from_secs(s.ready_timeout_secs);
        objects::wait_ready(&pods, name, &s.image, ready).await?;
        let backend = KubeBackend {
            pods,
            name: name.to_string(),
        };
        let remote = Remote::new(backend).await?;
        let sb = Self {
            ws,
            remote,
            client: client.clone(),
            namespace: ns.to_string(),
            name: name.to_string(),
            session: session.to_string(),
            settings: s.clone(),
            closed: AtomicBool::new(false),
            execs: AtomicU64::new(0),
        };
        sb.upload().await?;
        Ok(sb)
    }

    async fn upload(&self) -> Result<(), SandboxError> {
        let tar = crate::sandbox::tarball::pack(self.ws.work_dir())?;
        let script = format!("head -c {} | tar -x -f - -C {WORKSPACE}", tar.len());
        let argv = vec!["sh".into(), "-c".into(), script];
        let mut out = Collector::new(4096);
        let mut err = Collector::new(4096);
        let deadline = Instant::now() + Duration::from_secs(600);
        match self
            .remote
            .backend
            .exec(argv, Some(tar), &mut out, &mut err, deadline)
            .await?
        {
            RawExit::Exited(0) => Ok(()),
            other => Err(SandboxError::Helper {
                helper: "upload",
                code: if let RawExit::Exited(c) = other {
                    c
                } else {
                    -1
                },
                stderr: String::from_utf8_lossy(&err.finish().head).into_owned(),
            }),
        }
    }

    /// The pod's name (also the session's ConfigMap and NetworkPolicy name).
    pub fn pod_name(&self) -> &str {
        &self.name
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Stop every process in the sandbox except the pod's PID 1, keeping the workspace (the
    /// last resort of a timeout, also useful to stop left-over servers).
    pub async fn kill_all(&self) -> Result<(), SandboxError> {
        self.remote.backend.recycle().await
    }

    /// The shell commands run with.
    pub fn shell(&self) -> String {
        self.remote.shell()
    }
}

#[async_trait]
impl Sandbox for KubeSandbox {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Kube
    }
    fn root(&self) -> &str {
        WORKSPACE
    }
    fn workdir(&self) -> &str {
        WORKSPACE
    }
    fn describe(&self) -> String {
        format!(
            "kube sandbox: pod {}/{}, workspace at {WORKSPACE}",
            self.namespace, self.name
        )
    }
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, SandboxError> {
        let n = self.execs.fetch_add(1, Ordering::Relaxed);
        self.remote
            .exec(req, &format!("{}-{n}", self.session))
            .await
    }
    async fn resolve(&self, path: &str) -> Result<Resolved, SandboxError> {
        self.remote.resolve(path).await
    }
    async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        self.remote.read(path).await
    }
    async fn write(&self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        self.remote.write(path, data).await
    }
    async fn list_files(&self, dir: &str) -> Result<Vec<String>, SandboxError> {
        let mut files = self.remote.list_files(WORKSPACE, dir).await?;
        files.sort();
        Ok(files)
    }
    async fn export_patch(&self) -> Result<Vec<u8>, SandboxError> {
        let argv = vec![
            "tar".into(),
            "-c".into(),
            "-f".into(),
            "-".into(),
            "-C".into(),
            WORKSPACE.into(),
            ".".into(),
        ];
        let limit = 4usize << 30;
        let mut out = Collector::new(limit);
        let mut err = Collector::new(4096);
        let deadline = Instant::now() + Duration::from_secs(600);
        let raw = self
            .remote
            .backend
            .exec(argv, None, &mut out, &mut err, deadline)
            .await?;
        if raw != RawExit::Exited(0) || out.overflowed() {
            return Err(SandboxError::Patch(format!(
                "downloading the workspace failed ({raw:?}): {}",
                String::from_utf8_lossy(&err.finish().head)
            )));
        }
        let tree = tempfile::Builder::new()
            .prefix("lilypad-pod-ws-")
            .tempdir()
            .map_err(|e| SandboxError::io("creating", "a temporary directory", e))?;
        let skipped = crate::sandbox::tarball::unpack(&out.finish().head, tree.path())?;
        if skipped > 0 {
            tracing::warn!(
                skipped,
                "unsafe entries in the pod's workspace archive were skipped"
            );
        }
        self.ws.diff(tree.path())
    }
    async fn close(&self) -> Result<(), SandboxError> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        delete_session(&self.client, &self.namespace, &self.name).await
    }
}

impl Drop for KubeSandbox {
    fn drop(&mut self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // Not closed: delete from a fresh runtime and client (the caller's runtime, which
        // drives the client's connection, may be shutting down).
        let (s, ns, name) = (
            self.settings.clone(),
            self.namespace.clone(),
            self.name.clone(),
        );
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let (client, _) = connect(&s).await.ok()?;
                delete_session(&client, &ns, &name).await.ok()
            })
        })
        .join();
    }
}
