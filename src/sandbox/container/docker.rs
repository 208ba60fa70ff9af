//! The Docker runtime: one hardened container per session (bollard), with the workspace copy
//! bind-mounted at `/workspace`; [`DockerSandbox`] is the [`ContainerSandbox`] on it.
//!
//! Owns: the container's settings and hardening, connecting (the API version is negotiated,
//! so older daemons, API 1.41 on Debian 12, work), exec through the Docker API, restarting a
//! stuck container, removing it, and the label sweep of dead sessions' leftovers.
//!
//! Does not own: the file and command logic over exec, the exec counter, closing and clean-up
//! on drop (the generic [`ContainerSandbox`]).
//!
//! The container: network `none`, every capability dropped, `no-new-privileges`, read-only
//! root with a size-limited tmpfs `/tmp`, a non-root user (the owner of the workspace copy, or
//! uid 1000 when Lilypad runs as root), pids, memory (no swap) and CPU limits, an init process
//! (reaps zombies), no environment from the host, and labels naming the session, host and
//! owning process. Leftovers of dead sessions on this host are removed at start. The patch and
//! the turn records are computed straight from the bind-mounted copy.

use super::runtime::{ContainerRuntime, Files, RawExit};
use super::ContainerSandbox;
use crate::sandbox::image::reference::find_digest;
use crate::sandbox::machine::{host_name, pid_alive};
use crate::sandbox::output::Collector;
use crate::sandbox::workspace::Workspace;
use crate::sandbox::{RuntimeError, SandboxError, SandboxKind};
use async_trait::async_trait;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    RestartContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::time::Instant;
use tokio::io::AsyncWriteExt;

pub use super::WORKSPACE;

/// The Docker sandbox (see the module docs).
pub type DockerSandbox = ContainerSandbox<DockerRuntime>;

/// Label every Lilypad container carries.
pub const LABEL: &str = "dev.lilypad.sandbox";
const LABEL_SESSION: &str = "dev.lilypad.session";
const LABEL_HOST: &str = "dev.lilypad.host";
const LABEL_PID: &str = "dev.lilypad.pid";

/// Docker sandbox settings (a `[sandbox.docker]`-style config section; every field optional).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerSettings {
    /// Image to run; one the engine lacks is pulled when a session starts
    /// (`crate::sandbox::image::pull`).
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
    /// Build the image from this Dockerfile instead of using `image` (see `crate::sandbox::image`).
    pub build: Option<crate::sandbox::image::ImageBuild>,
    /// Without `build`: take the image from the repository's devcontainer.json if it has one.
    pub devcontainer: bool,
    /// A command run once on the image, with the network, and committed (`sandbox.setup`).
    pub setup: Option<String>,
    /// Docker network mode while building and setting up (`default`: the engine's bridge).
    pub build_network: String,
    pub setup_timeout_secs: u64,
    /// Where the workspace is mounted and commands run (default [`WORKSPACE`]): an image's own
    /// repository directory (`/testbed`), so that what the image installed there (an editable
    /// package, say) sees the session's files.
    pub workdir: Option<String>,
    /// Empty directories mounted writable (tmpfs, like /tmp) besides /tmp.
    pub scratch_dirs: Vec<String>,
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
            build: None,
            devcontainer: false,
            setup: None,
            build_network: "default".into(),
            setup_timeout_secs: 3600,
            workdir: None,
            scratch_dirs: Vec::new(),
        }
    }
}

/// The labels that let the leftover sweep find a container of this process (`role`: the
/// value of [`LABEL`]; the image builder's setup containers carry them too).
pub(crate) fn owner_labels(role: &str) -> HashMap<String, String> {
    HashMap::from([
        (LABEL.to_string(), role.to_string()),
        (LABEL_HOST.to_string(), host_name()),
        (LABEL_PID.to_string(), std::process::id().to_string()),
    ])
}

fn runtime_err(context: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> SandboxError {
    let context = context.into();
    move |e| SandboxError::Runtime {
        runtime: "docker",
        context,
        source: RuntimeError::from(e),
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

/// Docker's answer when two clients remove the same container at once: 409 with this text.
fn is_removal_in_progress(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            message,
        } if message.contains("already in progress")
    )
}

/// A connection to the Docker engine. Outside the sandbox module it is only handed back to the
/// sandbox's own functions (the image build, the sweep) and asked the little its methods
/// answer: bollard's client and types stay inside this module.
#[derive(Debug, Clone)]
pub struct DockerClient(pub(in crate::sandbox) Docker);

impl DockerClient {
    /// The working directory `image`'s config names (`None`: it names none).
    pub async fn image_workdir(&self, image: &str) -> Result<Option<String>, SandboxError> {
        let i = self
            .0
            .inspect_image(image)
            .await
            .map_err(runtime_err(format!("inspecting image {image}")))?;
        Ok(i.config.and_then(|c| c.working_dir))
    }
}

/// Connect to Docker (`DOCKER_HOST` or the local socket) and negotiate the API version.
pub async fn connect() -> Result<DockerClient, SandboxError> {
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
    Ok(DockerClient(docker))
}

/// How often a process sweeps as it starts sandboxes: the first start sweeps, then one a
/// minute at most (a batch or `tasks mine` starts one a second; the dead sessions a sweep
/// finds do not come that often).
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// True when this sandbox start should sweep (see [`SWEEP_EVERY`]), and notes that it did.
fn sweep_due() -> bool {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    // A poisoned lock only means a panic elsewhere mid-update; the time is still valid.
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let due = last.is_none_or(|t| t.elapsed() >= SWEEP_EVERY);
    if due {
        *last = Some(std::time::Instant::now());
    }
    due
}

/// Remove the containers of dead Lilypad sessions on this host (label sweep).
pub async fn sweep_leftovers(docker: &DockerClient) -> Result<usize, SandboxError> {
    let docker = &docker.0;
    let filters = HashMap::from([("label".to_string(), vec![LABEL.to_string()])]);
    let opts = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let list = docker
        .list_containers(Some(opts))
        .await
        .map_err(runtime_err("listing containers"))?;
    let host = host_name();
    let mut removed = 0;
    for c in list {
        let labels = c.labels.unwrap_or_default();
        let ours = labels.get(LABEL_HOST) == Some(&host);
        let dead = labels
            .get(LABEL_PID)
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| !pid_alive(p));
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
        // Gone already, or another process (a second sweep, the owner's own close) is
        // removing it: either way it will not be left behind.
        Err(e) if is_not_found(&e) || is_removal_in_progress(&e) => Ok(()),
        Err(e) => Err(runtime_err(format!("removing container {id}"))(e)),
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

/// One session's container (see the module docs).
pub struct DockerRuntime {
    docker: Docker,
    id: String,
    user: String,
    image: String,
    /// The image's digest: its repository digest when it has one, else its id.
    image_digest: Option<String>,
    workdir: String,
}

impl std::fmt::Debug for DockerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerRuntime")
            .field("container", &self.id)
            .field("image", &self.image)
            .finish()
    }
}

/// The digest of `image` as Docker inspected it: the repository digest of its own repository
/// (the one a registry serves it under), else the first one, else the image's id (an image
/// built or loaded here, never pushed or pulled).
fn image_digest(image: &str, i: &bollard::models::ImageInspect) -> Option<String> {
    let repo = image.split('@').next().unwrap_or(image);
    // The repository is the reference without a tag (a `:` after the last `/`).
    let repo = match repo.rfind(':') {
        Some(c) if c > repo.rfind('/').unwrap_or(0) => &repo[..c],
        _ => repo,
    };
    let digests = i.repo_digests.iter().flatten();
    let own = digests
        .clone()
        .find(|d| d.split('@').next() == Some(repo))
        .or_else(|| digests.clone().next());
    own.and_then(|d| find_digest(d))
        .or_else(|| i.id.as_deref().and_then(find_digest))
        .map(str::to_string)
}

/// The hardened container (see the module docs) for `ws`, running as `user`.
fn container_body(
    ws: &Workspace,
    s: &DockerSettings,
    session: &str,
    user: &str,
) -> ContainerCreateBody {
    let workdir = s.workdir.as_deref().unwrap_or(WORKSPACE);
    let labels = HashMap::from([
        (LABEL.to_string(), "1".to_string()),
        (LABEL_SESSION.to_string(), session.to_string()),
        (LABEL_HOST.to_string(), host_name()),
        (LABEL_PID.to_string(), std::process::id().to_string()),
    ]);
    let host_config = HostConfig {
        binds: Some(vec![format!("{}:{workdir}:rw", ws.work_dir().display())]),
        network_mode: Some(s.network.clone()),
        cap_drop: Some(vec!["ALL".into()]),
        security_opt: Some(vec!["no-new-privileges".into()]),
        readonly_rootfs: Some(true),
        tmpfs: Some(
            std::iter::once("/tmp".to_string())
                .chain(s.scratch_dirs.iter().cloned())
                .map(|d| (d, format!("rw,nosuid,nodev,size={},mode=1777", s.tmp_size)))
                .collect(),
        ),
        pids_limit: Some(s.pids),
        memory: Some(s.memory_bytes),
        memory_swap: Some(s.memory_bytes),
        nano_cpus: Some((s.cpus * 1e9) as i64),
        init: Some(true),
        privileged: Some(false),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(s.image.clone()),
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            "while :; do sleep 3600; done".into(),
        ]),
        entrypoint: Some(vec![]),
        user: Some(user.to_string()),
        working_dir: Some(workdir.into()),
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
    }
}

#[async_trait]
impl ContainerRuntime for DockerRuntime {
    const KIND: SandboxKind = SandboxKind::Docker;
    type Settings = DockerSettings;

    async fn create(
        ws: &Workspace,
        s: &DockerSettings,
        session: &str,
    ) -> Result<Self, SandboxError> {
        let client = connect().await?;
        if sweep_due() {
            let swept = sweep_leftovers(&client).await?;
            if swept > 0 {
                tracing::info!(swept, "removed containers of dead Lilypad sessions");
            }
        }
        let docker = client.0;
        let image_digest = match docker.inspect_image(&s.image).await {
            Ok(i) => image_digest(&s.image, &i),
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
            Err(e) => return Err(runtime_err(format!("inspecting image {}", s.image))(e)),
        };
        let user = pick_user(ws, s.user.as_deref())?;
        let name = format!("lilypad-{session}");
        let opts = CreateContainerOptionsBuilder::default().name(&name).build();
        let created = docker
            .create_container(Some(opts), container_body(ws, s, session, &user))
            .await
            .map_err(runtime_err(format!("creating container from {}", s.image)))?;
        let id = created.id;
        if let Err(e) = docker.start_container(&id, None).await {
            // The start error is the one to report; a failed removal is swept later.
            let _ = remove(&docker, &id).await;
            return Err(runtime_err(format!("starting container from {}", s.image))(
                e,
            ));
        }
        Ok(Self {
            docker,
            id,
            user,
            image: s.image.clone(),
            image_digest,
            workdir: s.workdir.clone().unwrap_or_else(|| WORKSPACE.into()),
        })
    }

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
            .map_err(runtime_err("creating exec"))?;
        let started = self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(runtime_err("starting exec"))?;
        let StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        else {
            return Err(SandboxError::Runtime {
                runtime: "docker",
                context: "starting exec".into(),
                source: RuntimeError::Protocol("Docker did not attach the exec's streams"),
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
                    Some(Err(e)) => return Err(runtime_err("reading exec output")(e)),
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
        // The stream can end a moment before Docker records the exit code.
        for _ in 0..50 {
            let info = self
                .docker
                .inspect_exec(&created.id)
                .await
                .map_err(runtime_err("inspecting exec"))?;
            if info.running != Some(true) {
                return Ok(RawExit::Exited(info.exit_code.unwrap_or(-1)));
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Ok(RawExit::Exited(-1))
    }

    /// A restart: every process stops, the bind-mounted workspace stays.
    async fn recycle(&self) -> Result<(), SandboxError> {
        let opts = RestartContainerOptionsBuilder::default().t(0).build();
        self.docker
            .restart_container(&self.id, Some(opts))
            .await
            .map_err(runtime_err("restarting the container"))
    }

    /// Nothing to copy: the workspace copy is bind-mounted.
    async fn copy_in(&self, _ws: &Workspace) -> Result<(), SandboxError> {
        Ok(())
    }

    async fn current_files(&self, ws: &Workspace) -> Result<Files, SandboxError> {
        Ok(Files::Shared(ws.work_dir().to_path_buf()))
    }

    async fn remove(&self) -> Result<(), SandboxError> {
        remove(&self.docker, &self.id).await
    }

    fn remove_detached(&self) -> BoxFuture<'static, Result<(), SandboxError>> {
        let id = self.id.clone();
        Box::pin(async move { remove(&connect().await?.0, &id).await })
    }

    fn describe(&self, ws: &Workspace) -> String {
        format!(
            "docker sandbox: container {} ({}), network off, workspace {} at {}",
            &self.id[..12.min(self.id.len())],
            self.image,
            ws.work_dir().display(),
            self.workdir
        )
    }

    fn workdir(&self) -> &str {
        &self.workdir
    }

    fn image_digest(&self) -> Option<&str> {
        self.image_digest.as_deref()
    }
}

impl DockerSandbox {
    /// The container's id.
    pub fn container_id(&self) -> &str {
        &self.runtime().id
    }

    /// The workspace copy on the host, bind-mounted as the container's workspace.
    pub fn host_workspace(&self) -> &std::path::Path {
        self.ws.work_dir()
    }
}

/// What `lilypad doctor` says about Docker: the daemon's version and whether the image is there.
pub async fn probe(s: &DockerSettings) -> Result<String, SandboxError> {
    let d = connect().await?.0;
    let v = d
        .version()
        .await
        .map_err(runtime_err("reading the version"))?;
    let image = match d.inspect_image(&s.image).await {
        Ok(_) => format!("image {} present", s.image),
        Err(_) => format!("image {} missing: the first session pulls it", s.image),
    };
    Ok(format!(
        "docker: engine {} (API {}), {image}",
        v.version.unwrap_or_default(),
        v.api_version.unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_client_error_is_boxed_in_the_seam_and_said_as_it_was() {
        let e = bollard::errors::Error::DockerResponseServerError {
            status_code: 500,
            message: "the engine is shutting down".into(),
        };
        let said = e.to_string();
        let err = runtime_err("listing containers")(e);
        assert_eq!(
            err.to_string(),
            format!("docker: listing containers: {said}")
        );
        let source = err.source().expect("the runtime's error");
        assert!(matches!(
            source.downcast_ref::<RuntimeError>(),
            Some(RuntimeError::Docker(_))
        ));
        // Boxed: the client's error does not size every `Result` of the sandbox seam.
        assert!(std::mem::size_of::<RuntimeError>() <= 3 * std::mem::size_of::<usize>());
    }

    #[test]
    fn the_digest_is_the_images_own_repository_digest_else_its_id() {
        let d = |c: &str| format!("sha256:{}", c.repeat(64));
        let inspect = |digests: Vec<String>| bollard::models::ImageInspect {
            repo_digests: Some(digests),
            id: Some(d("c")),
            ..Default::default()
        };
        let both = inspect(vec![
            format!("other/x@{}", d("a")),
            format!("mirror.example.com:5000/hub/x@{}", d("b")),
        ]);
        let image = "mirror.example.com:5000/hub/x:latest";
        assert_eq!(image_digest(image, &both), Some(d("b")));
        let pinned = format!("mirror.example.com:5000/hub/x@{}", d("b"));
        assert_eq!(image_digest(&pinned, &both), Some(d("b")));
        assert_eq!(
            image_digest("third/x:1", &both),
            Some(d("a")),
            "else the first"
        );
        assert_eq!(image_digest("local:1", &inspect(Vec::new())), Some(d("c")));
    }
}
