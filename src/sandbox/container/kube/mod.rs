//! The Kubernetes runtime: one hardened pod per session (kube-rs), the workspace uploaded as a
//! tar through exec, every command and file operation through exec, and the session patch
//! and the turn records computed on the host from a tar of the pod's workspace (`.git` left
//! out); [`KubeSandbox`] is the [`ContainerSandbox`] on it.
//!
//! Owns: connecting (a kubeconfig: `KUBECONFIG`, `~/.kube/config`, or an explicit file and
//! context; or the in-cluster service account), exec into the pod, the upload and download of
//! the workspace, and `kill -9 -1` as the last resort of a timeout (it spares only the pod's
//! PID 1). The RBAC it needs is in docs/kube-rbac.yaml.
//!
//! Does not own: the session's objects and the sweep of leftovers (expired sessions, or dead
//! sessions of this host) (`objects`), the settings (`settings`), the file and command
//! logic over exec (the generic [`ContainerSandbox`]).
//!
//! Invariant: exec over the websocket protocol of older clusters cannot close stdin, so every
//! upload carries its size and the reader stops after that many bytes.

mod objects;
pub mod pool;
mod settings;

pub use super::WORKSPACE;
pub use objects::sweep_leftovers;
pub use settings::KubeSettings;

use super::runtime::{ContainerRuntime, Files, RawExit};
use super::ContainerSandbox;
use crate::sandbox::output::{pump, Collector};
use crate::sandbox::tarball;
use crate::sandbox::workspace::Workspace;
use crate::sandbox::{PatchError, RuntimeError, SandboxError, SandboxKind};
use async_trait::async_trait;
use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use objects::{delete_session, runtime_err, CONTAINER};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// The Kubernetes sandbox (see the module docs).
pub type KubeSandbox = ContainerSandbox<KubeRuntime>;

/// Deadline of the workspace's upload and download.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

/// Largest workspace the patch export downloads.
const DOWNLOAD_LIMIT: usize = 4 << 30;

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

impl KubeRuntime {
    /// Connect, sweep leftovers first when `sweep`, create the session's objects and wait for
    /// the pod; no workspace is needed yet (it is copied in by the sandbox's start).
    pub async fn create_pod(
        s: &KubeSettings,
        session: &str,
        sweep: bool,
    ) -> Result<Self, SandboxError> {
        let (client, ns) = connect(s).await?;
        if sweep {
            let swept = sweep_leftovers(&client, &ns).await?;
            if swept > 0 {
                tracing::info!(swept, "deleted leftover Lilypad sessions");
            }
        }
        let name = format!("lilypad-{session}");
        let (pods, image_digest) = objects::create_session(&client, &ns, &name, session, s).await?;
        Ok(Self {
            client,
            pods,
            image_digest,
            namespace: ns,
            name,
            settings: s.clone(),
        })
    }
}

/// One session's pod (see the module docs).
pub struct KubeRuntime {
    client: Client,
    pods: Api<Pod>,
    namespace: String,
    /// The pod's name, also the session's ConfigMap and NetworkPolicy name.
    name: String,
    /// The digest of the image the pod runs (its container status's `imageID`).
    image_digest: Option<String>,
    /// To connect again when the sandbox is dropped unclosed.
    settings: KubeSettings,
}

impl std::fmt::Debug for KubeRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeRuntime")
            .field("namespace", &self.namespace)
            .field("pod", &self.name)
            .finish()
    }
}

#[async_trait]
impl ContainerRuntime for KubeRuntime {
    const KIND: SandboxKind = SandboxKind::Kube;
    type Settings = KubeSettings;

    /// Connect, sweep leftovers, create the session's objects and wait for the pod.
    async fn create(
        _ws: &Workspace,
        s: &KubeSettings,
        session: &str,
    ) -> Result<Self, SandboxError> {
        Self::create_pod(s, session, true).await
    }

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
            .map_err(runtime_err(format!("exec in pod {}", self.name)))?;
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

    /// As the sandbox user: every process it can signal except PID 1 (the pod's keeper).
    async fn recycle(&self) -> Result<(), SandboxError> {
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

    /// Upload the workspace copy as a tar (sized: see the module docs).
    async fn copy_in(&self, ws: &Workspace) -> Result<(), SandboxError> {
        // A pod seeded from its image has the repository already; only a `.git` Lilypad made
        // for a directory without one is not in the image.
        let tar = match self.settings.seed_from_image {
            true if ws.made_git() => tarball::pack_only(ws.work_dir(), ".git")?,
            true => return Ok(()),
            false => tarball::pack(ws.work_dir())?,
        };
        let script = format!(
            "head -c {} | tar -x -f - -C {}",
            tar.len(),
            self.settings.workdir()
        );
        let argv = vec!["sh".into(), "-c".into(), script];
        let mut out = Collector::new(4096);
        let mut err = Collector::new(4096);
        let deadline = Instant::now() + TRANSFER_TIMEOUT;
        match self
            .exec(argv, Some(tar), &mut out, &mut err, deadline)
            .await?
        {
            RawExit::Exited(0) => Ok(()),
            other => Err(SandboxError::Helper {
                helper: "upload",
                code: match other {
                    RawExit::Exited(c) => c,
                    RawExit::Deadline => -1,
                },
                stderr: String::from_utf8_lossy(&err.finish().head).into_owned(),
            }),
        }
    }

    /// Download the pod's workspace (without `.git`, and without the directories that were
    /// wholly ignored at the start: an image's build output) as a tar and unpack it safely.
    async fn current_files(&self, ws: &Workspace) -> Result<Files, SandboxError> {
        // `.git` and the rest stay behind where tar can leave them out (GNU tar; busybox's
        // cannot). The ignored directories come as arguments, matched literally.
        let script = format!(
            "cd {} || exit 2; if tar -c -f /dev/null --exclude=./.git /dev/null \
             2>/dev/null; then exec tar -c -f - --no-wildcards --exclude=./.git \"$@\" .; \
             else exec tar -c -f - .; fi",
            self.settings.workdir()
        );
        let mut argv = vec!["sh".into(), "-c".into(), script, "sh".into()];
        argv.extend(
            ws.ignored_at_start()
                .iter()
                .filter_map(|d| d.to_str())
                .map(|d| format!("--exclude=./{d}")),
        );
        let mut out = Collector::new(DOWNLOAD_LIMIT);
        let mut err = Collector::new(4096);
        let deadline = Instant::now() + TRANSFER_TIMEOUT;
        let raw = self.exec(argv, None, &mut out, &mut err, deadline).await?;
        if raw != RawExit::Exited(0) || out.overflowed() {
            return Err(SandboxError::Patch(PatchError::Download {
                exit: format!("{raw:?}"),
                stderr: String::from_utf8_lossy(&err.finish().head).into_owned(),
            }));
        }
        let tree = tempfile::Builder::new()
            .prefix("lilypad-pod-ws-")
            .tempdir()
            .map_err(|e| SandboxError::io("creating", "a temporary directory", e))?;
        let skipped = tarball::unpack(&out.finish().head, tree.path())?;
        if skipped > 0 {
            tracing::warn!(
                skipped,
                "unsafe entries in the pod's workspace archive were skipped"
            );
        }
        Ok(Files::Downloaded(tree))
    }

    async fn remove(&self) -> Result<(), SandboxError> {
        delete_session(&self.client, &self.namespace, &self.name).await
    }

    fn remove_detached(&self) -> BoxFuture<'static, Result<(), SandboxError>> {
        let (s, ns, name) = (
            self.settings.clone(),
            self.namespace.clone(),
            self.name.clone(),
        );
        Box::pin(async move {
            let (client, _) = connect(&s).await?;
            delete_session(&client, &ns, &name).await
        })
    }

    fn describe(&self, _ws: &Workspace) -> String {
        format!(
            "kube sandbox: pod {}/{}, workspace at {}",
            self.namespace,
            self.name,
            self.settings.workdir()
        )
    }

    fn workdir(&self) -> &str {
        self.settings.workdir()
    }

    fn image_digest(&self) -> Option<&str> {
        self.image_digest.as_deref()
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

impl KubeSandbox {
    /// The pod's name (also the session's ConfigMap and NetworkPolicy name).
    pub fn pod_name(&self) -> &str {
        &self.runtime().name
    }

    pub fn namespace(&self) -> &str {
        &self.runtime().namespace
    }
}

/// What `lilypad doctor` says about Kubernetes: the cluster's version and the namespace.
pub async fn probe(s: &KubeSettings) -> Result<String, SandboxError> {
    let (client, ns) = connect(s).await?;
    let v = client
        .apiserver_version()
        .await
        .map_err(|e| SandboxError::Runtime {
            runtime: "kubernetes",
            context: "reading the version".into(),
            source: RuntimeError::from(e),
        })?;
    Ok(format!("kube: cluster {}, namespace {ns}", v.git_version))
}
