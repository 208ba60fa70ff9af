//! Commands and file operations over a runtime's exec: every one runs as an exec into the
//! container ([`ContainerRuntime::exec`]) of a helper in [`super::scripts`], as the sandbox's
//! user, and the helper's exit code names the failure.
//!
//! Owns: choosing the shell, running helpers under a deadline, mapping their exit codes to
//! [`SandboxError`]s, and what a timeout kills. Timeouts: the command runs as a session
//! leader; at the deadline its process group is killed, then every process that did not exist
//! before it; if any survive (or the killer cannot even run), the runtime recycles the
//! container ([`ContainerRuntime::recycle`]).
//!
//! Does not own: how an exec reaches the container (the runtimes), the ignore rules of a
//! listing (`super::listing`).

use super::listing::{filter_ignored, parse_listing};
use super::runtime::{ContainerRuntime, RawExit};
use super::scripts;
use crate::sandbox::output::Collector;
use crate::sandbox::workspace::RestorePlan;
use crate::sandbox::{
    EntryKind, ExecExit, ExecOutput, ExecRequest, Resolved, SandboxError, StreamKind,
    MAX_FILE_BYTES,
};
use std::path::Path;
use std::time::{Duration, Instant};

/// Deadline of helper execs (file operations).
const HELPER_TIMEOUT: Duration = Duration::from_secs(60);

fn sh(script: &str, args: &[&str]) -> Vec<String> {
    let mut v = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

/// The shell commands run with: `/bin/bash -lc` where the image has bash, else `sh -c`.
/// Also checks that exec works at all.
pub(super) async fn detect_shell<R: ContainerRuntime>(rt: &R) -> Result<Vec<String>, SandboxError> {
    let (code, out, err) =
        helper(rt, "detect-shell", sh(scripts::DETECT_SHELL, &[]), None, 64).await?;
    if code != 0 {
        return Err(SandboxError::Unavailable {
            what: format!("the sandbox image has no working /bin/sh (exit {code}: {err})"),
            hint: "choose an image with a POSIX shell (e.g. debian:bookworm-slim or busybox)"
                .into(),
        });
    }
    Ok(if String::from_utf8_lossy(&out).trim() == "bash" {
        vec!["/bin/bash".into(), "-lc".into()]
    } else {
        tracing::info!("image has no /bin/bash: commands run with sh -c");
        vec!["sh".into(), "-c".into()]
    })
}

/// Run a helper; `keep` bytes of its stdout are kept. Returns (exit code, stdout, stderr).
async fn helper<R: ContainerRuntime>(
    rt: &R,
    name: &'static str,
    argv: Vec<String>,
    stdin: Option<Vec<u8>>,
    keep: usize,
) -> Result<(i64, Vec<u8>, String), SandboxError> {
    let mut out = Collector::new(keep);
    let mut err = Collector::new(4096);
    let deadline = Instant::now() + HELPER_TIMEOUT;
    match rt.exec(argv, stdin, &mut out, &mut err, deadline).await? {
        RawExit::Exited(code) => Ok((
            code,
            out.finish().head,
            String::from_utf8_lossy(&err.finish().head)
                .trim()
                .to_string(),
        )),
        RawExit::Deadline => Err(SandboxError::Helper {
            helper: name,
            code: -1,
            stderr: format!("no answer within {}s", HELPER_TIMEOUT.as_secs()),
        }),
    }
}

fn fs_error(name: &'static str, code: i64, path: &str, stderr: String) -> SandboxError {
    let path = path.to_string();
    match code {
        2 => SandboxError::NotFound { path },
        13 => SandboxError::PermissionDenied { path },
        20 => SandboxError::NotADirectory { path },
        21 => SandboxError::IsADirectory { path },
        28 => SandboxError::NoSpace { path },
        _ => SandboxError::Helper {
            helper: name,
            code,
            stderr,
        },
    }
}

/// Run a command through `shell`; `exec_id` marks its processes for the killer.
pub(super) async fn exec<R: ContainerRuntime>(
    rt: &R,
    shell: &[String],
    req: ExecRequest,
    exec_id: &str,
) -> Result<ExecOutput, SandboxError> {
    let start = Instant::now();
    let mut argv = sh(scripts::RUN, &[exec_id, &req.cwd, &req.command]);
    argv.extend(shell.iter().cloned());
    let mut out = Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stdout);
    let mut err = Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stderr);
    let raw = rt
        .exec(argv, None, &mut out, &mut err, start + req.timeout)
        .await?;
    let exit = match raw {
        RawExit::Exited(c) => ExecExit::Exited(c),
        RawExit::Deadline => {
            kill(rt, exec_id).await?;
            ExecExit::TimedOut
        }
    };
    Ok(ExecOutput {
        exit,
        stdout: out.finish(),
        stderr: err.finish(),
        elapsed: start.elapsed(),
    })
}

/// Kill what a timed-out exec started; recycle the container if something survives, or if
/// the sandbox cannot even run the killer (a fork bomb holding every pid).
async fn kill<R: ContainerRuntime>(rt: &R, exec_id: &str) -> Result<(), SandboxError> {
    let outcome = helper(rt, "kill", sh(scripts::KILL, &[exec_id]), None, 64 * 1024).await;
    let reason = match &outcome {
        Ok((0, out, _)) if String::from_utf8_lossy(out).trim().is_empty() => return Ok(()),
        Ok((0, out, _)) => format!(
            "processes escaped the timeout: {}",
            String::from_utf8_lossy(out).trim()
        ),
        Ok((code, _, err)) => format!("the killer failed (exit {code}): {err}"),
        Err(e) => format!("the killer could not run: {e}"),
    };
    tracing::warn!("{reason}; recycling the sandbox");
    rt.recycle().await
}

pub(super) async fn resolve<R: ContainerRuntime>(
    rt: &R,
    path: &str,
) -> Result<Resolved, SandboxError> {
    let (code, out, err) = helper(
        rt,
        "resolve",
        sh(scripts::RESOLVE, &[path]),
        None,
        64 * 1024,
    )
    .await?;
    if code != 0 {
        return Err(fs_error("resolve", code, path, err));
    }
    let text = String::from_utf8_lossy(&out);
    let (kind, real) = text.split_once('\n').ok_or_else(|| SandboxError::Helper {
        helper: "resolve",
        code,
        stderr: format!("unexpected answer {text:?}"),
    })?;
    let kind = match kind {
        "file" => EntryKind::File,
        "dir" => EntryKind::Dir,
        "missing" => EntryKind::Missing,
        _ => EntryKind::Other,
    };
    Ok(Resolved {
        path: real.to_string(),
        kind,
    })
}

pub(super) async fn read<R: ContainerRuntime>(rt: &R, path: &str) -> Result<Vec<u8>, SandboxError> {
    let max = MAX_FILE_BYTES.to_string();
    let argv = sh(scripts::READ, &[path, &max]);
    let (code, out, err) = helper(rt, "read", argv, None, MAX_FILE_BYTES).await?;
    match code {
        0 => Ok(out),
        27 => Err(SandboxError::TooLarge {
            path: path.into(),
            size: MAX_FILE_BYTES + 1,
            limit: MAX_FILE_BYTES,
        }),
        c => Err(fs_error("read", c, path, err)),
    }
}

pub(super) async fn write<R: ContainerRuntime>(
    rt: &R,
    path: &str,
    data: &[u8],
) -> Result<(), SandboxError> {
    let size = data.len().to_string();
    let argv = sh(scripts::WRITE, &[path, &size]);
    let (code, _, err) = helper(rt, "write", argv, Some(data.to_vec()), 1024).await?;
    match code {
        0 => Ok(()),
        c => Err(fs_error("write", c, path, err)),
    }
}

/// Files below `dir` (sorted), with the ignore files of `dir` and its ancestors up to the
/// workspace root applied as git would.
pub(super) async fn list_files<R: ContainerRuntime>(
    rt: &R,
    dir: &str,
) -> Result<Vec<String>, SandboxError> {
    // The ignore files of `dir`'s ancestors inside the root; those below `dir` the script
    // finds in its own listing. One exec for everything: each costs a round trip.
    let mut args = vec![dir.to_string()];
    let mut up = Path::new(dir);
    while let Some(parent) = up.parent() {
        if !parent.starts_with(rt.workdir()) {
            break;
        }
        args.push(format!("{}/.gitignore", parent.display()));
        up = parent;
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = helper(rt, "list", sh(scripts::LIST, &refs), None, 256 << 20).await?;
    if code != 0 {
        return Err(fs_error("list", code, dir, err));
    }
    let (files, rules) = parse_listing(dir, &out);
    let mut files = if rules.is_empty() {
        files
    } else {
        filter_ignored(dir, files, &rules)
    };
    files.sort();
    Ok(files)
}

/// Apply a restore plan inside the container, as the sandbox user: delete the listed paths,
/// then unpack the archive into the workspace (both sized on stdin: see `scripts`).
pub(super) async fn restore<R: ContainerRuntime>(
    rt: &R,
    plan: &RestorePlan,
) -> Result<(), SandboxError> {
    let root = rt.workdir();
    let list = plan.remove_list();
    if !list.is_empty() {
        let argv = sh(scripts::REMOVE, &[root, &list.len().to_string()]);
        let (code, _, err) = helper(rt, "restore", argv, Some(list), 4096).await?;
        if code != 0 {
            return Err(fs_error("restore", code, root, err));
        }
    }
    if !plan.archive.is_empty() {
        let size = plan.archive.len().to_string();
        let argv = sh(scripts::UNPACK, &[root, &size]);
        let (code, _, err) = helper(rt, "restore", argv, Some(plan.archive.clone()), 4096).await?;
        if code != 0 {
            return Err(fs_error("restore", code, root, err));
        }
    }
    Ok(())
}
