//! Harbor task directories as a batch's tasks: a folder of tasks, each a folder with
//! `instruction.md` (the task text), `task.toml` (the agent's and the verifier's time limits,
//! the environment's cpus and memory), `environment/Dockerfile` (the task's image) and
//! `tests/` (the verifier, `tests/test.sh`, which writes a reward to
//! `/logs/verifier/reward.txt` or `reward.json`).
//!
//! The network is the task's to decide, off unless it allows it: `[agent] network_mode` (for
//! the verifier, `[verifier] network_mode`), then `[environment] network_mode`, then
//! `[environment] allow_internet`. The agent and the verifier share one sandbox, whose
//! network is the agent's.
//!
//! Owns: reading such a folder into [`BatchTask`]s ([`read_tasks`]), an attempt's preparation
//! ([`HarborTask::prepare`]: the task's image, its repository, limits and network), and the
//! verifier run after the agent ([`verify`]): the tests are copied into the sandbox's `/tests`
//! only then (the agent never sees them), `/logs` is emptied first, `bash /tests/test.sh` runs
//! in the same sandbox, and the reward is read back. Does not own: building images or starting
//! the sandbox (`crate::sandbox`), or running the attempt (`super::batch`).

use super::kind::{BatchTask, PrepareError, TaskKind};
use super::sources::{SourceError, TaskRepo};
use super::verify::Verified;
use crate::config::Settings;
use crate::launch::check::{run_check, CheckSpec};
use crate::launch::SessionOptions;
use crate::sandbox::{ExecRequest, Sandbox, SandboxError, SandboxExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the tests are copied to and the logs written, as Harbor's tasks expect.
pub const TESTS_DIR: &str = "/tests";
pub const LOGS_DIR: &str = "/logs";

/// The verifier's time limit when `task.toml` gives none.
const DEFAULT_VERIFIER_SECS: u64 = 600;

/// What a Harbor task adds to a task line.
#[derive(Debug, Clone, PartialEq)]
pub struct HarborTask {
    /// The task's folder.
    pub dir: PathBuf,
    /// `[agent] timeout_sec`.
    pub agent_timeout_secs: Option<u64>,
    /// `[verifier] timeout_sec`.
    pub verifier_timeout_secs: Option<u64>,
    /// `[environment] cpus`.
    pub cpus: Option<f64>,
    /// `[environment] memory_mb` (or `memory`, as "2G").
    pub memory_mb: Option<u64>,
    /// Whether the agent's sandbox has the network.
    pub agent_network: Network,
    /// Whether the verifier asks for the network (it runs in the agent's sandbox, with the
    /// agent's network).
    pub verifier_network: Network,
}

/// A sandbox with or without the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Network {
    #[default]
    Off,
    On,
}

impl Network {
    /// The Docker network mode of a sandbox with this network.
    pub fn docker_mode(self) -> &'static str {
        match self {
            Self::Off => "none",
            Self::On => "bridge",
        }
    }

    /// A `network_mode` as Harbor's tasks write it: the modes that reach out are on;
    /// `none` and anything not known are off.
    fn of_mode(mode: &str) -> Self {
        match mode.trim().to_ascii_lowercase().as_str() {
            "bridge" | "host" | "default" | "public" | "internet" | "online" | "enabled" => {
                Self::On
            }
            _ => Self::Off,
        }
    }

    /// The network `section` (`agent` or `verifier`) of `task.toml` gets: its own
    /// `network_mode`, then the environment's, then `allow_internet`; off when none says.
    fn of_task(toml: &toml::Value, section: &str) -> Self {
        let env = toml.get("environment");
        fn mode(t: Option<&toml::Value>) -> Option<&str> {
            t?.get("network_mode")?.as_str()
        }
        if let Some(m) = mode(toml.get(section)).or_else(|| mode(env)) {
            return Self::of_mode(m);
        }
        match env
            .and_then(|e| e.get("allow_internet"))
            .and_then(toml::Value::as_bool)
        {
            Some(true) => Self::On,
            _ => Self::Off,
        }
    }
}

impl HarborTask {
    pub fn dockerfile(&self) -> PathBuf {
        self.dir.join("environment/Dockerfile")
    }
    pub fn environment(&self) -> PathBuf {
        self.dir.join("environment")
    }

    /// The agent's wall time: the run's when it set one of its own (`run_sets`: a flag or a
    /// preset), as Leaf's run limit overrides a task's; else the task's `[agent]
    /// timeout_sec`; else `run`, the defaults'.
    pub fn agent_wall_time(&self, run_sets: bool, run: Option<u64>) -> Option<u64> {
        if run_sets {
            run
        } else {
            self.agent_timeout_secs.or(run)
        }
    }
}

impl HarborTask {
    /// An attempt's sandbox: the image built from the task's environment (cached by its
    /// files), the repository the image holds at its WORKDIR (copied out, and worked on there;
    /// an empty one at the default workdir when the image sets none), the agent's wall time
    /// (the run's when it set one, as Leaf does, else `task.toml`'s), its cpus and memory, the
    /// network when the task allows it, and empty `/tests` and `/logs` for the verifier.
    pub async fn prepare(
        &self,
        run_wall_time: bool,
        settings: &mut Settings,
        opts: &mut SessionOptions,
    ) -> Result<TaskRepo, PrepareError> {
        use crate::sandbox::image::{task_image, ImageBuild, TaskImage};
        let b = ImageBuild {
            dockerfile: self.dockerfile(),
            context: self.environment(),
        };
        let network = settings
            .sandbox
            .build_network
            .clone()
            .unwrap_or_else(|| "default".into());
        let TaskImage { image, workdir } =
            task_image(&b, &network)
                .await
                .map_err(|source| PrepareError::HarborImage {
                    task: self.dir.clone(),
                    source,
                })?;
        let s = &mut settings.sandbox;
        s.image = Some(image.clone());
        // Built here and tagged here: no registry holds it under another name.
        s.image_registry = None;
        s.dockerfile = None;
        s.devcontainer = false;
        s.setup = None;
        s.workdir.clone_from(&workdir);
        s.scratch_dirs = vec![TESTS_DIR.to_string(), LOGS_DIR.to_string()];
        if let Some(c) = self.cpus {
            s.cpus = Some(c);
        }
        if let Some(m) = self.memory_mb {
            s.memory = Some(crate::sandbox::settings::ByteSize(m << 20));
        }
        opts.wall_time = self.agent_wall_time(run_wall_time, opts.wall_time);
        s.network = Some(self.agent_network.docker_mode().to_string());
        match workdir {
            Some(w) => {
                let repo = super::kind::extract(&image, &w, "the image's repository").await?;
                settings.sandbox.repo_as_is = true;
                Ok(repo)
            }
            None => {
                let tmp = tempfile::Builder::new()
                    .prefix("lilypad-task-")
                    .tempdir()
                    .map_err(|source| PrepareError::HarborWorkspace {
                        task: self.dir.clone(),
                        source,
                    })?;
                Ok(TaskRepo::in_temp(tmp.path().to_path_buf(), tmp))
            }
        }
    }
}

/// Whether `path` is a folder of Harbor tasks (a folder holding a `*/task.toml`).
pub fn is_task_folder(path: &Path) -> bool {
    path.is_dir()
        && std::fs::read_dir(path)
            .is_ok_and(|rd| rd.flatten().any(|e| e.path().join("task.toml").is_file()))
}

fn bad(dir: &Path, why: impl Into<String>) -> SourceError {
    SourceError::Harbor {
        dir: dir.to_path_buf(),
        why: why.into(),
    }
}

/// Seconds from a TOML number (integer or float).
fn secs(v: Option<&toml::Value>) -> Option<u64> {
    match v? {
        toml::Value::Integer(i) => u64::try_from(*i).ok(),
        toml::Value::Float(f) if *f >= 0.0 => Some(f.ceil() as u64),
        _ => None,
    }
}

fn memory_mb(env: Option<&toml::Value>) -> Option<u64> {
    let env = env?;
    if let Some(m) = secs(env.get("memory_mb")) {
        return Some(m);
    }
    let text = env.get("memory")?.as_str()?.trim().to_ascii_uppercase();
    let (num, unit) = text.split_at(text.find(|c: char| c.is_ascii_alphabetic())?);
    let n: f64 = num.trim().parse().ok()?;
    let mb = match unit.trim_end_matches('B').trim_end_matches('I') {
        "G" => n * 1024.0,
        "M" => n,
        _ => return None,
    };
    Some(mb.round() as u64)
}

/// One task folder.
fn read_task(dir: &Path) -> Result<BatchTask, SourceError> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| bad(dir, format!("{name}: {e}")))
    };
    let instruction = read("instruction.md")?;
    let toml: toml::Value = read("task.toml")?
        .parse()
        .map_err(|e| bad(dir, format!("task.toml: {e}")))?;
    let harbor = HarborTask {
        dir: dir.to_path_buf(),
        agent_timeout_secs: secs(toml.get("agent").and_then(|a| a.get("timeout_sec"))),
        verifier_timeout_secs: secs(toml.get("verifier").and_then(|a| a.get("timeout_sec"))),
        cpus: toml
            .get("environment")
            .and_then(|e| e.get("cpus"))
            .and_then(|c| c.as_float().or(c.as_integer().map(|i| i as f64))),
        memory_mb: memory_mb(toml.get("environment")),
        agent_network: Network::of_task(&toml, "agent"),
        verifier_network: Network::of_task(&toml, "verifier"),
    };
    if !harbor.dockerfile().is_file() {
        return Err(bad(dir, "no environment/Dockerfile"));
    }
    if !dir.join("tests/test.sh").is_file() {
        return Err(bad(dir, "no tests/test.sh"));
    }
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(why) = super::attempts::bad_instance_id(&id) {
        return Err(bad(
            dir,
            format!("the folder's name cannot be an id: {why}"),
        ));
    }
    Ok(BatchTask {
        instance_id: id,
        task: instruction,
        kind: TaskKind::Harbor(harbor),
    })
}

/// The tasks of a folder of Harbor tasks, in name order (folders without `task.toml` are
/// not tasks).
pub fn read_tasks(folder: &Path) -> Result<Vec<BatchTask>, SourceError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| bad(folder, e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("task.toml").is_file())
        .collect();
    dirs.sort();
    let dirs = dirs
        .iter()
        .map(|d| std::fs::canonicalize(d).map_err(|e| bad(d, e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    dirs.iter().map(|d| read_task(d)).collect()
}

async fn shell(sandbox: &dyn Sandbox, command: String) -> Result<(), SandboxError> {
    sandbox
        .exec(ExecRequest {
            command,
            cwd: sandbox.workdir().to_string(),
            timeout: Duration::from_secs(120),
            keep_bytes: 4096,
            stream: None,
        })
        .await
        .map(|_| ())
}

/// Files below `dir`, relative, sorted; a folder that cannot be read is an error, never
/// missing tests.
fn files(dir: &Path) -> Result<Vec<PathBuf>, SandboxError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let unread = |d: &Path| {
        let d = d.display().to_string();
        move |e| SandboxError::io("reading", d, e)
    };
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(unread(&d))? {
            let p = e.map_err(unread(&d))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                out.push(rel.to_path_buf());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Run the task's verifier in `sandbox` after the agent (see the module docs).
pub async fn verify(sandbox: &dyn Sandbox, task: &HarborTask) -> Result<Verified, SandboxError> {
    // Whatever the agent left where the verifier reads and writes is not the verifier's.
    shell(
        sandbox,
        format!(
            "rm -rf {TESTS_DIR}/* {TESTS_DIR}/.[!.]* {LOGS_DIR}/* {LOGS_DIR}/.[!.]* 2>/dev/null; \
             mkdir -p {TESTS_DIR} {LOGS_DIR}/verifier {LOGS_DIR}/agent"
        ),
    )
    .await?;
    let tests = task.dir.join("tests");
    let rels = files(&tests)?;
    let mut dirs: Vec<String> = rels
        .iter()
        .filter_map(|r| r.parent().filter(|p| !p.as_os_str().is_empty()))
        .map(|p| format!("'{TESTS_DIR}/{}'", p.display()))
        .collect();
    dirs.dedup();
    if !dirs.is_empty() {
        shell(sandbox, format!("mkdir -p {}", dirs.join(" "))).await?;
    }
    for rel in &rels {
        let data = std::fs::read(tests.join(rel))
            .map_err(|e| SandboxError::io("reading", tests.join(rel).display().to_string(), e))?;
        sandbox
            .write(&format!("{TESTS_DIR}/{}", rel.display()), &data)
            .await?;
    }
    let spec = CheckSpec {
        command: format!("bash {TESTS_DIR}/test.sh"),
        timeout: Duration::from_secs(task.verifier_timeout_secs.unwrap_or(DEFAULT_VERIFIER_SECS)),
    };
    let run = run_check(sandbox, &spec).await?;
    let text = |name: &str| {
        let path = format!("{LOGS_DIR}/verifier/{name}");
        async move { sandbox.read(&path).await.ok() }
    };
    let reward = match text("reward.txt").await {
        Some(t) => String::from_utf8_lossy(&t).trim().parse::<f64>().ok(),
        None => text("reward.json")
            .await
            .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
            .and_then(|v| v["reward"].as_f64()),
    };
    Ok(Verified { run, reward })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_toml_limits_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().join("hello-1");
        std::fs::create_dir_all(t.join("environment")).unwrap();
        std::fs::create_dir_all(t.join("tests")).unwrap();
        std::fs::write(t.join("instruction.md"), "Say hello.\n").unwrap();
        std::fs::write(
            t.join("task.toml"),
            "version = \"1.0\"\n[agent]\ntimeout_sec = 120.5\n[verifier]\ntimeout_sec = 60\n\
             [environment]\ncpus = 2\nmemory = \"2G\"\n",
        )
        .unwrap();
        std::fs::write(t.join("environment/Dockerfile"), "FROM x\n").unwrap();
        std::fs::write(t.join("tests/test.sh"), "true\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("not-a-task")).unwrap();
        assert!(is_task_folder(tmp.path()));
        let tasks = read_tasks(tmp.path()).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].instance_id, "hello-1");
        assert_eq!(tasks[0].task, "Say hello.\n");
        let TaskKind::Harbor(h) = &tasks[0].kind else {
            panic!("not a Harbor task: {:?}", tasks[0].kind)
        };
        assert_eq!(h.agent_timeout_secs, Some(121));
        assert_eq!(h.verifier_timeout_secs, Some(60));
        assert_eq!(h.cpus, Some(2.0));
        assert_eq!(h.memory_mb, Some(2048));
        assert_eq!(
            (h.agent_network, h.verifier_network),
            (Network::Off, Network::Off)
        );
        // The run's own wall time holds over the task's, shorter or longer; the task's holds
        // over the defaults.
        assert_eq!(h.agent_wall_time(true, Some(10_800)), Some(10_800));
        assert_eq!(h.agent_wall_time(true, Some(60)), Some(60));
        assert_eq!(h.agent_wall_time(false, Some(10_800)), Some(121));
        std::fs::remove_file(t.join("tests/test.sh")).unwrap();
        assert!(read_tasks(tmp.path()).is_err());
    }

    #[test]
    fn the_task_decides_the_network_and_the_default_is_off() {
        let net = |text: &str, section: &str| {
            Network::of_task(&text.parse::<toml::Value>().unwrap(), section)
        };
        assert_eq!(net("", "agent"), Network::Off);
        assert_eq!(
            net("[environment]\nallow_internet = true\n", "agent"),
            Network::On
        );
        assert_eq!(
            net("[environment]\nallow_internet = false\n", "agent"),
            Network::Off
        );
        // The section's own mode first, then the environment's, then allow_internet.
        let t = "[agent]\nnetwork_mode = \"none\"\n[verifier]\nnetwork_mode = \"bridge\"\n\
                 [environment]\nallow_internet = true\n";
        assert_eq!(net(t, "agent"), Network::Off);
        assert_eq!(net(t, "verifier"), Network::On);
        let t = "[environment]\nnetwork_mode = \"bridge\"\nallow_internet = false\n";
        assert_eq!(net(t, "agent"), Network::On);
        assert_eq!(
            net("[agent]\nnetwork_mode = \"something-else\"\n", "agent"),
            Network::Off
        );
        assert_eq!(Network::On.docker_mode(), "bridge");
        assert_eq!(Network::Off.docker_mode(), "none");
    }
}
