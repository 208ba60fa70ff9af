//! The tools against the command-line programs a developer would use for the same job, on the
//! same data in the same run:
//! - Glob (`**/*.EXT` through [`Tools::run`] on a host sandbox, and on a Docker sandbox when an
//!   engine answers; output capped and formatted as the model sees it) against
//!   `fd --type f --hidden --glob '*.EXT'` over the same files (the sandbox's workspace copy on
//!   the host), both after a warm-up, medians interleaved;
//! - a Bash round trip (`true`, through [`Tools::run`]: exec, capture, timeout handling, the
//!   result text) in a Docker sandbox against `docker exec CONTAINER SHELL -c true` from the
//!   CLI, and in a Kubernetes sandbox against `kubectl exec POD -- SHELL -c true`, on the same
//!   container or pod.
//!
//! Does not own: starting engines or fetching the tree (scripts/bench-tree.sh fetches a real
//! one; without it a synthetic tree is written). A sandbox kind whose engine does not answer
//! is skipped with a note, not failed.

use super::agent_turns::ratio;
use super::{median, Figure};
use crate::protocol::ToolCall;
use crate::sandbox::{self, KindSettings, Sandbox, SandboxError, SandboxKind, SandboxSpec};
use crate::tools::{ToolLimits, Tools};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ToolsBenchError {
    #[error("opening the {kind} sandbox: {source}")]
    Sandbox {
        kind: SandboxKind,
        #[source]
        source: SandboxError,
    },
    #[error("`{program}` (the baseline) failed: {message}")]
    Baseline { program: String, message: String },
    #[error("`{program}` (the baseline) failed: {source}")]
    BaselineSpawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the tool call failed: {0}")]
    Tool(String),
    #[error("writing the synthetic tree at {path}: {source}")]
    Tree {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Mismatch(String),
}

/// Glob over a tree against fd.
#[derive(Debug, Clone)]
pub struct GlobOutcome {
    pub kind: SandboxKind,
    pub tree: String,
    pub pattern: String,
    pub files_in_tree: usize,
    pub matches: usize,
    pub lilypad: f64,
    pub fd: f64,
    pub fd_program: String,
}

/// A Bash round trip against the engine's CLI.
#[derive(Debug, Clone)]
pub struct ExecOutcome {
    pub kind: SandboxKind,
    pub shell: String,
    pub lilypad: f64,
    pub cli: f64,
    pub cli_program: &'static str,
    pub repeats: usize,
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "bench".into(),
        name: name.into(),
        arguments: args.as_object().cloned().unwrap_or_default(),
    }
}

/// The fd binary: Debian names it `fdfind`.
pub fn fd_program() -> Option<String> {
    ["fdfind", "fd"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(str::to_string)
}

/// Paths a Glob result lists, counting its "... N more files" tail.
fn glob_count(content: &str) -> usize {
    if content == "No files matched." {
        return 0;
    }
    content
        .lines()
        .map(|l| {
            l.strip_prefix("... ")
                .and_then(|r| r.strip_suffix(" more files"))
                .and_then(|n| n.parse().ok())
                .unwrap_or(1)
        })
        .sum()
}

/// Glob `**/*.{ext}` in a `spec.kind` sandbox opened on `spec.repo` (host or docker) against
/// fd over the same files on the host (the sandbox's workspace copy, which the Docker sandbox
/// bind-mounts), `repeats` timed runs of each after a warm-up.
pub async fn glob(
    spec: &SandboxSpec,
    ext: &str,
    repeats: usize,
    fd: &str,
) -> Result<GlobOutcome, ToolsBenchError> {
    let kind = spec.kind();
    let tree = spec.repo.as_path();
    let ws = sandbox::workspace::Workspace::create(tree)
        .map_err(|source| ToolsBenchError::Sandbox { kind, source })?;
    // The directory fd walks: the same files the tool lists.
    let (sb, fd_dir): (std::sync::Arc<dyn sandbox::Sandbox>, String) = match &spec.settings {
        KindSettings::Host(host) => {
            let h = sandbox::host::HostSandbox::new(ws, host)
                .map_err(|source| ToolsBenchError::Sandbox { kind, source })?;
            let dir = h.root().to_string();
            (std::sync::Arc::new(h), dir)
        }
        KindSettings::Docker(docker) => {
            let d = sandbox::docker::DockerSandbox::start(ws, docker)
                .await
                .map_err(|source| ToolsBenchError::Sandbox { kind, source })?;
            let dir = d.host_workspace().display().to_string();
            (std::sync::Arc::new(d), dir)
        }
        KindSettings::Kube(_) => {
            return Err(ToolsBenchError::Mismatch(
                "the Glob bench runs in the host and docker sandboxes".into(),
            ))
        }
    };
    let root = sb.root().to_string();
    let files_in_tree = sb.list_files(&root).await.map(|f| f.len()).unwrap_or(0);
    if files_in_tree == 0 {
        let _ = sb.close().await;
        return Err(ToolsBenchError::Mismatch(format!(
            "{} has no files a session would see (all ignored by its .gitignore files?)",
            tree.display()
        )));
    }
    let tools = Tools::new(sb.clone(), ToolLimits::default());
    let pattern = format!("**/*.{ext}");
    let glob_call = call("Glob", serde_json::json!({ "pattern": pattern }));
    let run_fd = || -> Result<(f64, usize), ToolsBenchError> {
        let t = Instant::now();
        let out = Command::new(fd)
            .args(["--type", "f", "--hidden", "--exclude", ".git", "--glob"])
            .arg(format!("*.{ext}"))
            .arg(&fd_dir)
            .output()
            .map_err(|source| ToolsBenchError::BaselineSpawn {
                program: fd.into(),
                source,
            })?;
        let s = t.elapsed().as_secs_f64();
        if !out.status.success() {
            return Err(ToolsBenchError::Baseline {
                program: fd.into(),
                message: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok((
            s,
            out.stdout
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count(),
        ))
    };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut our_count, mut fd_count) = (0, 0);
    for i in 0..=repeats {
        let t = Instant::now();
        let r = tools.run(&glob_call).await;
        let s = t.elapsed().as_secs_f64();
        if r.is_error {
            let _ = sb.close().await;
            return Err(ToolsBenchError::Tool(r.content));
        }
        our_count = glob_count(&r.content);
        let (fs, n) = run_fd()?;
        fd_count = n;
        // Run 0 warms the page cache for both.
        if i > 0 {
            ours.push(s);
            theirs.push(fs);
        }
    }
    let _ = sb.close().await;
    if our_count != fd_count {
        return Err(ToolsBenchError::Mismatch(format!(
            "Glob found {our_count} files and {fd} {fd_count}: they do not walk the same files"
        )));
    }
    Ok(GlobOutcome {
        kind,
        tree: tree.display().to_string(),
        pattern,
        files_in_tree,
        matches: our_count,
        lilypad: median(&ours),
        fd: median(&theirs),
        fd_program: fd.into(),
    })
}

/// A Bash round trip of `true` in a `spec.kind` sandbox against the engine's CLI exec into the
/// same container or pod, `repeats` of each interleaved after a warm-up.
pub async fn exec_round_trip(
    spec: &SandboxSpec,
    repeats: usize,
) -> Result<ExecOutcome, ToolsBenchError> {
    let kind = spec.kind();
    let ws = sandbox::workspace::Workspace::create(&spec.repo)
        .map_err(|source| ToolsBenchError::Sandbox { kind, source })?;
    // The CLI's arguments that reach the same container or pod (before the shell).
    let (sb, shell, cli_program, mut cli_args): (
        std::sync::Arc<dyn sandbox::Sandbox>,
        String,
        &'static str,
        Vec<String>,
    ) = match &spec.settings {
        KindSettings::Docker(docker) => {
            let d = sandbox::docker::DockerSandbox::start(ws, docker)
                .await
                .map_err(|source| ToolsBenchError::Sandbox { kind, source })?;
            let args = vec!["exec".into(), d.container_id().to_string()];
            let shell = d.shell();
            (std::sync::Arc::new(d), shell, "docker", args)
        }
        KindSettings::Kube(kube) => {
            let k = sandbox::kube::KubeSandbox::start(ws, kube)
                .await
                .map_err(|source| ToolsBenchError::Sandbox { kind, source })?;
            let mut args = Vec::new();
            if let Some(cfg) = &kube.kubeconfig {
                args.push(format!("--kubeconfig={}", cfg.display()));
            }
            if let Some(ctx) = &kube.context {
                args.push(format!("--context={ctx}"));
            }
            args.extend([
                "-n".into(),
                k.namespace().to_string(),
                "exec".into(),
                k.pod_name().to_string(),
                "--".into(),
            ]);
            let shell = k.shell();
            (std::sync::Arc::new(k), shell, "kubectl", args)
        }
        KindSettings::Host(_) => {
            return Err(ToolsBenchError::Mismatch(
                "the round-trip bench is for the docker and kube sandboxes".into(),
            ))
        }
    };
    // The same shell and flags the sandbox runs commands with (`/bin/bash -lc`, or `sh -c`).
    cli_args.extend(shell.split_whitespace().map(str::to_string));
    cli_args.push("true".into());
    let tools = Tools::new(sb.clone(), ToolLimits::default());
    let bash = call("Bash", serde_json::json!({ "command": "true" }));
    let result = async {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for i in 0..=repeats {
            let t = Instant::now();
            let r = tools.run(&bash).await;
            let s = t.elapsed().as_secs_f64();
            if r.is_error {
                return Err(ToolsBenchError::Tool(r.content));
            }
            let t = Instant::now();
            let out = tokio::process::Command::new(cli_program)
                .args(&cli_args)
                .stdin(Stdio::null())
                .output()
                .await
                .map_err(|source| ToolsBenchError::BaselineSpawn {
                    program: cli_program.into(),
                    source,
                })?;
            let cs = t.elapsed().as_secs_f64();
            if !out.status.success() {
                return Err(ToolsBenchError::Baseline {
                    program: cli_program.into(),
                    message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            if i > 0 {
                ours.push(s);
                theirs.push(cs);
            }
        }
        Ok((median(&ours), median(&theirs)))
    }
    .await;
    let _ = sb.close().await;
    let (lilypad, cli) = result?;
    Ok(ExecOutcome {
        kind,
        shell,
        lilypad,
        cli,
        cli_program,
        repeats,
    })
}

/// A synthetic source tree of about `files` files under `dir` (directories of 50 files, four
/// levels deep, a `.c` file in every fifth), for when no real tree was fetched.
pub fn synthetic_tree(dir: &Path, files: usize) -> Result<(), ToolsBenchError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ToolsBenchError::Tree { path, source }
    };
    for i in 0..files {
        let d = dir.join(format!(
            "m{}/s{}/p{}",
            i / 12_500,
            (i / 2_500) % 5,
            (i / 50) % 50
        ));
        std::fs::create_dir_all(&d).map_err(err(&d))?;
        let name = if i % 5 == 0 {
            format!("f{i}.c")
        } else {
            format!("f{i}.h")
        };
        let p = d.join(name);
        std::fs::write(&p, format!("/* {i} */\n")).map_err(err(&p))?;
    }
    Ok(())
}

impl GlobOutcome {
    pub fn figure(&self) -> Figure {
        Figure {
            bench: "tools".into(),
            name: format!(
                "Glob {} in the {} sandbox over {} files ({} matches)",
                self.pattern, self.kind, self.files_in_tree, self.matches
            ),
            value: self.lilypad * 1000.0,
            unit: "ms".into(),
            baseline: format!("{} --glob, same directory", self.fd_program),
            baseline_value: self.fd * 1000.0,
            ratio: ratio(self.fd, self.lilypad),
            better: "higher".into(),
            target: None,
        }
    }
}

impl ExecOutcome {
    pub fn figure(&self) -> Figure {
        Figure {
            bench: "tools".into(),
            name: format!("Bash round trip (`true`) in the {} sandbox", self.kind),
            value: self.lilypad * 1000.0,
            unit: "ms".into(),
            baseline: format!(
                "{} exec ... {} true, same {}",
                self.cli_program,
                self.shell,
                if self.kind == SandboxKind::Kube {
                    "pod"
                } else {
                    "container"
                }
            ),
            baseline_value: self.cli * 1000.0,
            ratio: ratio(self.cli, self.lilypad),
            better: "higher".into(),
            target: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_counts_include_the_capped_tail() {
        assert_eq!(glob_count("a.c\nb.c"), 2);
        assert_eq!(glob_count("a.c\nb.c\n... 40 more files"), 42);
        assert_eq!(glob_count("No files matched."), 0);
    }
}
