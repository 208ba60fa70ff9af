//! The Docker sandbox: one hardened container per session (bollard), with the workspace copy
//! bind-mounted at `/workspace`.
//!
//! The container: network `none`, every capability dropped, `no-new-privileges`, read-only
//! root with a size-limited tmpfs `/tmp`, a non-root user (the owner of the workspace copy, or
//! uid 1000 when Lilypad runs as root), pids, memory (no swap) and CPU limits, an init process
//! (reaps zombies), no environment from the host, and labels naming the session, host and
//! owning process. Leftovers of dead sessions on this host are removed at start; the
//! session's container is removed by [`Sandbox::close`] (or, as a fallback, on drop).
//!
//! The API version is negotiated, so older engines (API 1.41 on Debian 12) work.

use super::ops::{Backend, RawExit, Remote};
use crate::sandbox::output::Collector;
use crate::sandbox::workspace::Workspace;
use crate::sandbox::{ExecOutput, ExecRequest, Resolved, Sandbox, SandboxError, SandboxKind};
use async_trait::async_trait;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    RestartContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use tokio::io::AsyncWriteExt;

/// Label every Lilypad container carries.
pub const LABEL: &str = "dev.lilypad.sandbox";
const LABEL_SESSION: &str = "dev.lilypad.session";
const LABEL_HOST: &str = "dev.lilypad.host";
const LABEL_PID: &str = "dev.lilypad.pid";

/// Where the workspace appears inside the container.
pub const WORKSPACE: &str = "/workspace";

/// Docker sandbox settings (a `[sandbox.docker]`-style config section; every field optional).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerSettings {
    /// Image to run (must already be on the engine: it is never pulled implicitly).
    pub image: String,
    /// `none` (default) or another Docker network mode, if the user really wants one.
    pub network: String,
    pub memory_bytes: i64,
    pub cpus: f64,
    pub pids: i64,
    /// Size of the tmpfs at /tmp (Docker's `size=` syntax, e.g. `512m`).
    pub tmp_size: String,
    /// `uid:gid` to run as; `None`: the workspace owner, or 1000:1000 when that is root.
    pub user: Option<String>,
}

impl Default for DockerSettings {
    fn default() -> Self {
        Self {
            image: "debian:bookworm-slim".into(),
            network: "none".into(),
            memory_bytes: 2 << 30,
            cpus: 2.0,
            pids: 512,
            tmp_size: "512m".into(),
            user: None,
        }
    }
}

fn engine_err(context: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> SandboxError {
    let context = context.into();
    move |e| SandboxError::Engine {
        engine: "docker",
        context,
        message: e.to_string(),
    }
}

fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// Exec and life-cycle of one container.
pub(crate) struct DockerBackend {
    docker: Docker,
    id: String,
    user: String,
}

#[async_trait]
impl Backend for DockerBackend {
    async fn exec(
        &self,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        out: &mut Collector,
        err: &mut Collector,
        deadline: Instant,
    ) -> Result<RawExit, SandboxError> {
        let opts = CreateExecOptions::<String> {
            attach_stdin: Some(stdin.is_some()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            cmd: Some(argv),
            user: Some(self.user.clone()),
            ..Default::default()
        };
        let created = self
            .docker
            .create_exec(&self.id, opts)
            .await
            .map_err(engine_err("creating exec"))?;
        let started = self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(engine_err("starting exec"))?;
        let StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        else {
            return Err(SandboxError::Engine {
                engine: "docker",
                context: "starting exec".into(),
                message: "the engine did not attach the exec's streams".into(),
            });
        };
        let writer = stdin.map(|data| {
            tokio::spawn(async move {
                // Errors here show up as the helper's exit code (it reads a fixed size).
                let _ = input.write_all(&data).await;
                let _ = input.shutdown().await;
            })
        });
        let sleep = tokio::time::sleep_until(deadline.into());
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                item = output.next() => match item {
                    Some(Ok(LogOutput::StdOut { message })) => out.push(&message),
                    Some(Ok(LogOutput::StdErr { message })) => err.push(&message),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(engine_err("reading exec output")(e)),
                    None => break,
                },
                _ = &mut sleep => {
                    if let Some(w) = writer { w.abort(); }
                    return Ok(RawExit::Deadline);
                }
            }
        }
        if let Some(w) = writer {
            w.abort();
        }
        // The stream can end a moment before the engine records the exit code.
        for _ in 0..50 {
            let info = self
                .docker
                .inspect_exec(&created.id)
                .await
                .map_err(engine_err("inspecting exec"))?;
            if info.running != Some(true) {
                return Ok(RawExit::Exited(info.exit_code.unwrap_or(-1)));
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Ok(RawExit::Exited(-1))
    }

    async fn recycle(&self) -> Result<(), SandboxError> {
        let opts = RestartContainerOptionsBuilder::default().t(0).build();
        self.docker
            .restart_container(&self.id, Some(opts))
            .await
            .map_err(engine_err("restarting the container"))
    }
}

/// See the module docs.
pub struct DockerSandbox {
    ws: Workspace,
    remote: Remote<DockerBackend>,
    session: String,
    image: String,
    closed: AtomicBool,
    execs: AtomicU64,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("container", &self.remote.backend.id)
            .field("image", &self.image)
            .finish()
    }
}

/// Connect to the engine (`DOCKER_HOST` or the local socket) and negotiate the API version.
pub async fn connect() -> Result<Docker, SandboxError> {
    let where_ =
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    let unavailable = |e: bollard::errors::Error| SandboxError::Unavailable {
        what: format!("cannot reach a Docker engine at {where_}: {e}"),
        hint: "start Docker (without systemd: `sudo scripts/docker-up.sh`), make sure you may use \
               its socket, or set DOCKER_HOST"
            .into(),
    };
    let docker = Docker::connect_with_local_defaults().map_err(unavailable)?;
    let docker = docker.negotiate_version().await.map_err(unavailable)?;
    docker.ping().await.map_err(unavailable)?;
    Ok(docker)
}

/// Remove the containers of dead Lilypad sessions on this host (label sweep).
pub async fn sweep_leftovers(docker: &Docker) -> Result<usize, SandboxError> {
    let filters = HashMap::from([("label".to_string(), vec![LABEL.to_string()])]);
    let opts = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let list = docker
        .list_containers(Some(opts))
        .await
        .map_err(engine_err("listing containers"))?;
    let host = crate::sandbox::host_name();
    let mut removed = 0;
    for c in list {
        let labels = c.labels.unwrap_or_default();
        let ours = labels.get(LABEL_HOST) == Some(&host);
        let dead = labels
            .get(LABEL_PID)
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| !crate::sandbox::pid_alive(p));
        if ours && dead {
            if let Some(id) = c.id {
                remove(docker, &id).await?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

async fn remove(docker: &Docker, id: &str) -> Result<(), SandboxError> {
    let opts = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(id, Some(opts)).await {
        Ok(()) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(engine_err(format!("removing container {id}"))(e)),
    }
}

/// The user to run as: the workspace copy's owner, or 1000:1000 (after handing the copy to
/// it) when that owner is root.
fn pick_user(ws: &Workspace, wanted: Option<&str>) -> Result<String, SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let dir = ws.work_dir();
    let meta = std::fs::metadata(dir)
        .map_err(|e| SandboxError::io("inspecting", dir.display().to_string(), e))?;
    let user = match wanted {
        Some(u) => u.to_string(),
        None if meta.uid() != 0 => format!("{}:{}", meta.uid(), meta.gid()),
        None => "1000:1000".into(),
    };
    let mut ids = user.split(':').map(|s| s.parse::<u32>().ok());
    if let (Some(Some(uid)), gid) = (ids.next(), ids.next()) {
        if uid != meta.uid() && meta.uid() == 0 {
            chown_tree(dir, uid, gid.flatten().unwrap_or(uid))?;
        }
    }
    Ok(user)
}

fn chown_tree(dir: &std::path::Path, uid: u32, gid: u32) -> Result<(), SandboxError> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        std::os::unix::fs::lchown(&p, Some(uid), Some(gid))
            .map_err(|e| SandboxError::io("handing over", p.display().to_string(), e))?;
        if p.is_dir() && !p.is_symlink() {
            let rd = std::fs::read_dir(&p)
                .map_err(|e| SandboxError::io("reading", p.display().to_string(), e))?;
            stack.extend(rd.flatten().map(|e| e.path()));
        }
    }
    Ok(())
}

impl DockerSandbox {
    /// Start a container for this workspace.
    pub async fn start(ws: Workspace, s: &DockerSettings) -> Result<Self, SandboxError> {
        let docker = connect().await?;
        let swept = sweep_leftovers(&docker).await?;
        if swept > 0 {
            tracing::info!(swept, "removed containers of dead Lilypad sessions");
        }
        match docker.inspect_image(&s.image).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {
                return Err(SandboxError::Unavailable {
                    what: format!("the image {} is not on the Docker engine", s.image),
                    hint: format!(
                        "pull it (`docker pull {}`), choose another with --image, or build the \
                         registry-free test images with `sudo scripts/docker-up.sh`",
                        s.image
                    ),
                })
            }
            Err(e) => return Err(engine_err(format!("inspecting image {}", s.image))(e)),
        }
        let user = pick_user(&ws, s.user.as_deref())?;
        let session = crate::sandbox::session_id();
        let labels = HashMap::from([
            (LABEL.to_string(), "1".to_string()),
            (LABEL_SESSION.to_string(), session.clone()),
            (LABEL_HOST.to_string(), crate::sandbox::host_name()),
            (LABEL_PID.to_string(), std::process::id().to_string()),
        ]);
        let host_config = HostConfig {
            binds: Some(vec![format!("{}:{WORKSPACE}:rw", ws.work_dir().display())]),
            network_mode: Some(s.network.clone()),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(true),
            tmpfs: Some(HashMap::from([(
                "/tmp".to_string(),
                format!("rw,nosuid,nodev,size={},mode=1777", s.tmp_size),
            )])),
            pids_limit: Some(s.pids),
            memory: Some(s.memory_bytes),
            memory_swap: Some(s.memory_bytes),
            nano_cpus: Some((s.cpus * 1e9) as i64),
            init: Some(true),
            privileged: Some(false),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(s.image.clone()),
            cmd: Some(vec![
                "sh".into(),
                "-c".into(),
                "while :; do sleep 3600; done".into(),
            ]),
            entrypoint: Some(vec![]),
            user: Some(user.clone()),
            working_dir: Some(WORKSPACE.into()),
            env: Some(vec![
                "HOME=/tmp".into(),
                "LANG=C.UTF-8".into(),
                "TERM=dumb".into(),
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            ]),
            labels: Some(labels),
            network_disabled: Some(s.network == "none"),
            host_config: Some(host_config),
            ..Default::default()
        };
        let name = format!("lilypad-{session}");
        let opts = CreateContainerOptionsBuilder::default().name(&name).build();
        let created = docker
            .create_container(Some(opts), body)
            .await
            .map_err(engine_err(format!("creating container from {}", s.image)))?;
        let id = created.id;
        if let Err(e) = docker.start_container(&id, None).await {
            let _ = remove(&docker, &id).await;
            return Err(engine_err(format!("starting container from {}", s.image))(
                e,
            ));
        }
        let backend = DockerBackend {
            docker: docker.clone(),
            id: id.clone(),
            user,
        };
        let remote = match Remote::new(backend).await {
            Ok(r) => r,
            Err(e) => {
                let _ = remove(&docker, &id).await;
                return Err(e);
            }
        };
        Ok(Self {
            ws,
            remote,
            session,
            image: s.image.clone(),
            closed: AtomicBool::new(false),
            execs: AtomicU64::new(0),
        })
    }

    /// The container's id.
    pub fn container_id(&self) -> &str {
        &self.remote.backend.id
    }

    /// The workspace copy on the host, bind-mounted as the container's workspace.
    pub fn host_workspace(&self) -> &std::path::Path {
        self.ws.work_dir()
    }

    /// Stop every process in the sandbox, keeping the workspace: the container is restarted
    /// (the last resort of a timeout, also useful to stop left-over servers).
    pub async fn kill_all(&self) -> Result<(), SandboxError> {
        self.remote.backend.recycle().await
    }

    /// The shell commands run with (`/bin/bash -lc`, or `sh -c` for images without bash).
    pub fn shell(&self) -> String {
        self.remote.shell()
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Docker
    }
    fn root(&self) -> &str {
        WORKSPACE
    }
    fn workdir(&self) -> &str {
        WORKSPACE
    }
    fn describe(&self) -> String {
        format!(
            "docker sandbox: container {} ({}), network off, workspace {} at {WORKSPACE}",
            &self.remote.backend.id[..12.min(self.remote.backend.id.len())],
            self.image,
            self.ws.work_dir().display()
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
        self.ws.diff(self.ws.work_dir())
    }
    async fn close(&self) -> Result<(), SandboxError> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        remove(&self.remote.backend.docker, &self.remote.backend.id).await
    }
}

impl Drop for DockerSandbox {
    fn drop(&mut self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // Not closed (an early return or a panic): remove the container from a fresh runtime
        // and connection, since the caller's runtime may be shutting down.
        let id = self.remote.backend.id.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let docker = connect().await.ok()?;
                remove(&docker, &id).await.ok()
            })
        })
        .join();
    }
}
