//! The contained host sandbox: each of the model's commands runs under bubblewrap (`bwrap`,
//! Debian's `bubblewrap`), the way Codex contains commands on Linux.
//!
//! Each command gets: the host's file system read-only (`--ro-bind / /`, so the toolchain
//! works), the workspace copy writable, the session's own `/tmp` (a host directory that
//! persists between commands; also `HOME`), a fresh `/dev` and `/proc`, an empty `/run` (no
//! engine, agent or bus sockets), its own network namespace (only `lo`, down), PID, IPC and UTS
//! namespaces, no capabilities, `no_new_privs`, a new session (no controlling terminal), and it
//! dies with Lilypad. The user's secrets are out of sight: credential directories and files in
//! the home directory are covered (an empty tmpfs or `/dev/null`), the agent socket too, and the
//! environment is the user's minus every variable whose name holds TOKEN, KEY, SECRET,
//! PASSWORD (and a few more, see [`passed_env`]).
//!
//! Not contained (no cgroups without privileges): memory, CPU, process count and disk use;
//! and background processes end with the command that started them (the PID namespace goes
//! with its first process).
//!
//! Owns: finding a working `bwrap` ([`containment`]), the mounts, namespaces and environment
//! of a command ([`Jail::command`]). Does not own: running and timing out the command, file
//! operations (`super`).

use serde::{Deserialize, Serialize};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Host sandbox settings (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostSettings {
    /// Run the model's commands without bubblewrap even where it works (`--uncontained`).
    pub uncontained: bool,
}

/// Whether host commands are contained, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// Under this `bwrap` (its version line).
    Bwrap { program: PathBuf, version: String },
    /// Not contained, and why.
    Uncontained { why: String },
}

/// Paths below the home directory that hold credentials (covered inside the sandbox).
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gh",
    ".netrc",
    ".gnupg",
    ".docker",
    ".kube",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gcloud",
    ".azure",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
    ".password-store",
    ".local/share/keyrings",
    ".vault-token",
];

/// Words in an environment variable's name that keep it out of the sandbox.
const SECRET_WORDS: &[&str] = &["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Variables that point at the user's agents, sessions, engines and repositories.
const DROPPED_VARS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DOCKER_HOST",
    "KUBECONFIG",
];

/// Whether commands on the host are contained with these settings: a `bwrap` on `PATH` that
/// can create the namespaces this machine allows (checked once per process by running it).
pub fn containment(s: &HostSettings) -> Containment {
    if s.uncontained {
        return Containment::Uncontained {
            why: "--uncontained was given".into(),
        };
    }
    static FOUND: OnceLock<Containment> = OnceLock::new();
    FOUND.get_or_init(find).clone()
}

fn find() -> Containment {
    let Some(program) = which("bwrap") else {
        return Containment::Uncontained {
            why: "bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)".into(),
        };
    };
    let version = std::process::Command::new(&program)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // The same namespaces and mounts a command gets, around `true`.
    let out = std::process::Command::new(&program)
        .args(BASE_ARGS)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--",
        ])
        .arg(if Path::new("/bin/true").exists() {
            "/bin/true"
        } else {
            "true"
        })
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Containment::Bwrap { program, version },
        Ok(o) => Containment::Uncontained {
            why: format!(
                "{} cannot create its namespaces here: {} (unprivileged user namespaces may be \
                 disabled: kernel.unprivileged_userns_clone, or an AppArmor profile)",
                program.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        },
        Err(e) => Containment::Uncontained {
            why: format!("{} cannot be run: {e}", program.display()),
        },
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Namespaces and privileges of every contained command.
const BASE_ARGS: &[&str] = &[
    "--die-with-parent",
    "--new-session",
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
];

/// What one session's commands are contained with.
#[derive(Debug, Clone)]
pub struct Jail {
    program: PathBuf,
    /// The workspace copy (bound writable at its own path).
    workspace: PathBuf,
    /// The session's `/tmp` on the host.
    tmp: PathBuf,
    /// Paths covered: directories with an empty tmpfs, anything else with `/dev/null`.
    hidden: Vec<(PathBuf, bool)>,
    env: Vec<(OsString, OsString)>,
}

impl Jail {
    /// A jail for a workspace at `workspace` with its `/tmp` at `tmp`, hiding the secrets of
    /// `home` (the user's home directory) and of this process's environment, and the git
    /// directory of `origin` (the user's repository: its config may hold credentials).
    pub fn new(
        program: PathBuf,
        workspace: &Path,
        tmp: &Path,
        home: Option<&Path>,
        origin: &Path,
    ) -> Self {
        let covered = |p: &Path| {
            ["/tmp", "/run", "/var/run", "/proc", "/dev"]
                .iter()
                .any(|c| p.starts_with(c))
                || p.starts_with(workspace)
        };
        let mut candidates: Vec<PathBuf> = home
            .map(|h| HOME_SECRETS.iter().map(|s| h.join(s)).collect())
            .unwrap_or_default();
        if let Some(sock) = std::env::var_os("SSH_AUTH_SOCK") {
            candidates.push(PathBuf::from(sock));
        }
        candidates.extend(git_dirs(origin));
        let mut hidden: Vec<(PathBuf, bool)> = Vec::new();
        for c in candidates {
            // A symlink is covered where it leads (a mount lands on the target anyway).
            let Ok(real) = std::fs::canonicalize(&c) else {
                continue;
            };
            if covered(&real) || hidden.iter().any(|(h, _)| real.starts_with(h)) {
                continue;
            }
            hidden.push((real.clone(), real.is_dir()));
        }
        Self {
            program,
            workspace: workspace.to_path_buf(),
            tmp: tmp.to_path_buf(),
            hidden,
            env: passed_env(home),
        }
    }

    /// The paths covered inside the sandbox.
    pub fn hidden(&self) -> impl Iterator<Item = &Path> {
        self.hidden.iter().map(|(p, _)| p.as_path())
    }

    /// `bwrap ... -- ARGV` starting in `cwd` with the jail's environment plus `extra_env`.
    pub fn command(
        &self,
        argv: &[&OsStr],
        cwd: &str,
        extra_env: &[(&str, &OsStr)],
    ) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(BASE_ARGS)
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        for run in ["/run", "/var/run"] {
            let p = Path::new(run);
            if p.is_dir() && !p.is_symlink() {
                cmd.args(["--tmpfs", run]);
            }
        }
        cmd.arg("--bind").arg(&self.tmp).arg("/tmp");
        for (path, is_dir) in &self.hidden {
            if *is_dir {
                cmd.arg("--tmpfs").arg(path);
            } else {
                cmd.arg("--ro-bind").arg("/dev/null").arg(path);
            }
        }
        cmd.arg("--bind").arg(&self.workspace).arg(&self.workspace);
        cmd.arg("--chdir").arg(cwd).arg("--clearenv");
        let set = |cmd: &mut tokio::process::Command, k: &OsStr, v: &OsStr| {
            cmd.arg("--setenv").arg(k).arg(v);
        };
        for (k, v) in &self.env {
            set(&mut cmd, k.as_os_str(), v.as_os_str());
        }
        for (k, v) in extra_env {
            set(&mut cmd, OsStr::new(k), v);
        }
        cmd.arg("--").args(argv);
        // bwrap itself needs a directory that exists on the host to start from.
        cmd.current_dir(&self.workspace).env_clear();
        cmd
    }
}

/// The git directories of the repository at `origin`: its `.git`, and for a linked worktree
/// (a `.git` file naming its git directory) that directory and the main repository's.
fn git_dirs(origin: &Path) -> Vec<PathBuf> {
    let dot_git = origin.join(".git");
    let mut dirs = vec![dot_git.clone()];
    if let Ok(text) = std::fs::read_to_string(&dot_git) {
        if let Some(dir) = text.trim().strip_prefix("gitdir:") {
            let dir = origin.join(dir.trim());
            if let Some(common) = dir
                .parent()
                .filter(|p| p.file_name() == Some(OsStr::new("worktrees")))
                .and_then(Path::parent)
            {
                dirs.push(common.to_path_buf());
            }
            dirs.push(dir);
        }
    }
    dirs
}

/// The environment a contained command gets: this process's, minus secrets (names holding
/// [`SECRET_WORDS`]), [`DROPPED_VARS`] and git's own variables (which could point git at the
/// user's repository), with `HOME` and `TMPDIR` at the session's `/tmp`. Toolchains that live
/// in the user's home (rustup's `~/.rustup` and `~/.cargo`) stay reachable, read-only.
pub fn passed_env(home: Option<&Path>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let name = k.to_string_lossy().to_ascii_uppercase();
            !SECRET_WORDS.iter().any(|w| name.contains(w))
                && !DROPPED_VARS.contains(&name.as_str())
                && !name.starts_with("GIT_")
                && !name.starts_with("LILYPAD_")
        })
        .filter(|(k, _)| !matches!(k.to_str(), Some("HOME" | "TMPDIR" | "TERM" | "LANG")))
        .collect();
    if let Some(h) = home {
        for (var, dir) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            if std::env::var_os(var).is_none() && h.join(dir).is_dir() {
                env.push((var.into(), h.join(dir).into()));
            }
        }
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env.extend([
        ("HOME".into(), "/tmp".into()),
        ("TMPDIR".into(), "/tmp".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("TERM".into(), "dumb".into()),
    ]);
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_passed() {
        // Names are checked, values are not: a variable named innocently passes.
        let keep = |name: &str| {
            let n = name.to_ascii_uppercase();
            !SECRET_WORDS.iter().any(|w| n.contains(w)) && !DROPPED_VARS.contains(&n.as_str())
        };
        for name in [
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "OPENAI_API_KEY",
            "PGPASSWORD",
            "db_password",
            "SSH_AUTH_SOCK",
        ] {
            assert!(!keep(name), "{name}");
        }
        for name in ["PATH", "PYTHONPATH", "CARGO_HOME", "VIRTUAL_ENV"] {
            assert!(keep(name), "{name}");
        }
    }
}
