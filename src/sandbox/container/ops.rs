//! What the Docker and Kubernetes sandboxes share: every file operation and command runs
//! through an exec into the container ([`Backend::exec`]), using the helpers in
//! [`super::scripts`], as the sandbox's user. The engines differ only in how an exec is done,
//! how a stuck container is recycled, and how the workspace's current contents reach the host.
//!
//! Timeouts: the command runs as a session leader; at the deadline its process group is
//! killed, then every process that did not exist before it; if any survive, the backend
//! recycles the container (Docker: restart; Kubernetes: `kill -9 -1`, which spares only the
//! pod's PID 1).

use super::scripts;
use crate::sandbox::output::Collector;
use crate::sandbox::{
    EntryKind, ExecExit, ExecOutput, ExecRequest, Resolved, SandboxError, StreamKind,
    MAX_FILE_BYTES,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How a raw exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawExit {
    Exited(i64),
    /// The deadline passed; the stream was dropped (the process may still run).
    Deadline,
}

/// One engine's exec and container life-cycle.
#[async_trait]
pub(crate) trait Backend: Send + Sync {
    /// Run `argv` in the container as the sandbox user, feeding `stdin`, collecting output
    /// until the process ends or `deadline` passes.
    async fn exec(
        &self,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        out: &mut Collector,
        err: &mut Collector,
        deadline: Instant,
    ) -> Result<RawExit, SandboxError>;
    /// Kill every process of the sandbox user (escapees a timeout could not reach).
    async fn recycle(&self) -> Result<(), SandboxError>;
}

/// Deadline of helper execs (file operations).
const HELPER_TIMEOUT: Duration = Duration::from_secs(60);

/// A [`Backend`] plus the file and command logic over it.
pub(crate) struct Remote<B: Backend> {
    pub backend: B,
    /// `bash -lc` or `sh -c`, chosen once at start.
    shell: Vec<String>,
}

fn sh(script: &str, args: &[&str]) -> Vec<String> {
    let mut v = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

impl<B: Backend> Remote<B> {
    /// Wrap a started backend: checks that exec works and picks the shell.
    pub async fn new(backend: B) -> Result<Self, SandboxError> {
        let mut r = Self {
            backend,
            shell: vec![],
        };
        let (code, out, err) = r
            .helper("detect-shell", sh(scripts::DETECT_SHELL, &[]), None, 64)
            .await?;
        if code != 0 {
            return Err(SandboxError::Unavailable {
                what: format!("the sandbox image has no working /bin/sh (exit {code}: {err})"),
                hint: "choose an image with a POSIX shell (e.g. debian:bookworm-slim or busybox)"
                    .into(),
            });
        }
        r.shell = if String::from_utf8_lossy(&out).trim() == "bash" {
            vec!["/bin/bash".into(), "-lc".into()]
        } else {
            tracing::info!("image has no /bin/bash: commands run with sh -c");
            vec!["sh".into(), "-c".into()]
        };
        Ok(r)
    }

    /// The shell commands run with (for messages).
    pub fn shell(&self) -> String {
        self.shell.join(" ")
    }

    async fn helper(
        &self,
        name: &'static str,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        keep: usize,
    ) -> Result<(i64, Vec<u8>, String), SandboxError> {
        let mut out = Collector::new(keep);
        let mut err = Collector::new(4096);
        let deadline = Instant::now() + HELPER_TIMEOUT;
        match self
            .backend
            .exec(argv, stdin, &mut out, &mut err, deadline)
            .await?
        {
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

    pub async fn exec(&self, req: ExecRequest, exec_id: &str) -> Result<ExecOutput, SandboxError> {
        let start = Instant::now();
        let mut argv = sh(scripts::RUN, &[exec_id, &req.cwd, &req.command]);
        argv.extend(self.shell.iter().cloned());
        let mut out =
            Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stdout);
        let mut err =
            Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stderr);
        let raw = self
            .backend
            .exec(argv, None, &mut out, &mut err, start + req.timeout)
            .await?;
        let exit = match raw {
            RawExit::Exited(c) => ExecExit::Exited(c),
            RawExit::Deadline => {
                self.kill(exec_id).await?;
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

    /// Kill what a timed-out exec started; recycle the container if something survives, or
    /// if the sandbox cannot even run the killer (a fork bomb holding every pid).
    async fn kill(&self, exec_id: &str) -> Result<(), SandboxError> {
        let outcome = self
            .helper("kill", sh(scripts::KILL, &[exec_id]), None, 64 * 1024)
            .await;
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
        self.backend.recycle().await
    }

    pub async fn resolve(&self, path: &str) -> Result<Resolved, SandboxError> {
        let (code, out, err) = self
            .helper("resolve", sh(scripts::RESOLVE, &[path]), None, 64 * 1024)
            .await?;
        if code != 0 {
            return Err(Self::fs_error("resolve", code, path, err));
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

    pub async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let max = MAX_FILE_BYTES.to_string();
        let (code, out, err) = self
            .helper(
                "read",
                sh(scripts::READ, &[path, &max]),
                None,
                MAX_FILE_BYTES,
            )
            .await?;
        match code {
            0 => Ok(out),
            27 => Err(SandboxError::TooLarge {
                path: path.into(),
                size: MAX_FILE_BYTES + 1,
                limit: MAX_FILE_BYTES,
            }),
            c => Err(Self::fs_error("read", c, path, err)),
        }
    }

    pub async fn write(&self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        let size = data.len().to_string();
        let argv = sh(scripts::WRITE, &[path, &size]);
        let (code, _, err) = self
            .helper("write", argv, Some(data.to_vec()), 1024)
            .await?;
        match code {
            0 => Ok(()),
            c => Err(Self::fs_error("write", c, path, err)),
        }
    }

    /// Files below `dir`, with the ignore files of `dir` and its ancestors up to `root`
    /// applied as git would.
    pub async fn list_files(&self, root: &str, dir: &str) -> Result<Vec<String>, SandboxError> {
        // The ignore files of `dir`'s ancestors inside the root; those below `dir` the script
        // finds in its own listing. One exec for everything: each costs a round trip.
        let mut args = vec![dir.to_string()];
        let mut up = Path::new(dir);
        while let Some(parent) = up.parent() {
            if !parent.starts_with(root) {
                break;
            }
            args.push(format!("{}/.gitignore", parent.display()));
            up = parent;
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = self
            .helper("list", sh(scripts::LIST, &refs), None, 256 << 20)
            .await?;
        if code != 0 {
            return Err(Self::fs_error("list", code, dir, err));
        }
        let (files, rules) = parse_listing(dir, &out);
        if rules.is_empty() {
            return Ok(files);
        }
        Ok(filter_ignored(dir, files, &rules))
    }
}

/// The output of [`scripts::LIST`]: the files (relative to `dir`), and the non-empty ignore
/// files as `(absolute path, content)`.
fn parse_listing(dir: &str, out: &[u8]) -> (Vec<String>, Vec<(String, String)>) {
    let mut records = out.split(|b| *b == 0);
    let files: Vec<String> = records
        .by_ref()
        .take_while(|r| !r.is_empty())
        .map(|r| {
            String::from_utf8_lossy(r)
                .trim_start_matches("./")
                .to_string()
        })
        .collect();
    let rest: Vec<&[u8]> = records.collect();
    let rules = rest
        .chunks(2)
        .filter(|pair| pair.len() == 2 && !pair[1].is_empty())
        .map(|pair| {
            let path = String::from_utf8_lossy(pair[0]).into_owned();
            let path = match path.strip_prefix("./") {
                Some(rel) => format!("{dir}/{rel}"),
                None => path,
            };
            (path, String::from_utf8_lossy(pair[1]).into_owned())
        })
        .collect();
    (files, rules)
}

/// Drop the files (relative to `dir`) that the ignore files (`(path, content)`, absolute
/// paths) exclude, with git's rules: a deeper ignore file wins, and nothing below an ignored
/// directory can be re-included.
pub(crate) fn filter_ignored(
    dir: &str,
    files: Vec<String>,
    rules: &[(String, String)],
) -> Vec<String> {
    use ignore::gitignore::{Gitignore, GitignoreBuilder};
    use ignore::Match;
    let mut matchers: Vec<(String, Gitignore)> = Vec::new();
    for (path, content) in rules {
        let base = path
            .trim_end_matches(".gitignore")
            .trim_end_matches('/')
            .to_string();
        let mut b = GitignoreBuilder::new(if base.is_empty() { "/" } else { &base });
        for line in content.lines() {
            let _ = b.add_line(None, line);
        }
        if let Ok(g) = b.build() {
            matchers.push((base, g));
        }
    }
    // By directory: a path is judged by the ignore files of its ancestors, deepest first, so
    // the first decisive answer wins. Looking the ancestors up costs the path's depth, not the
    // number of ignore files (a kernel tree has hundreds).
    let by_base: HashMap<&str, &Gitignore> =
        matchers.iter().map(|(b, g)| (b.as_str(), g)).collect();
    let ignored = |abs: &str, is_dir: bool| -> bool {
        let mut cur = abs;
        while let Some((parent, _)) = cur.rsplit_once('/') {
            if let Some(g) = by_base.get(parent) {
                match g.matched(abs, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            cur = parent;
        }
        false
    };
    let mut dir_cache: HashMap<String, bool> = HashMap::new();
    files
        .into_iter()
        .filter(|rel| {
            let abs = format!("{dir}/{rel}");
            let mut cur = String::from(dir);
            for comp in rel
                .split('/')
                .collect::<Vec<_>>()
                .iter()
                .rev()
                .skip(1)
                .rev()
            {
                cur = format!("{cur}/{comp}");
                let hit = *dir_cache
                    .entry(cur.clone())
                    .or_insert_with(|| ignored(&cur, true));
                if hit {
                    return false;
                }
            }
            !ignored(&abs, false)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_split_into_files_and_ignore_files() {
        let out = b"./a.py\0./src/.gitignore\0\0/w/.gitignore\0*.log\n\0./src/.gitignore\0gen\n\0/w/missing\0\0";
        let (files, rules) = parse_listing("/w/x", out);
        assert_eq!(files, vec!["a.py", "src/.gitignore"]);
        assert_eq!(
            rules,
            vec![
                ("/w/.gitignore".to_string(), "*.log\n".to_string()),
                ("/w/x/src/.gitignore".to_string(), "gen\n".to_string()),
            ]
        );
        let (files, rules) = parse_listing("/w", b"\0");
        assert!(files.is_empty() && rules.is_empty());
    }

    #[test]
    fn gitignore_rules_like_git() {
        let files = vec![
            "a.py".to_string(),
            "build/out.o".into(),
            "src/keep.log".into(),
            "src/x.log".into(),
            "src/gen/y.rs".into(),
        ];
        let rules = vec![
            ("/w/.gitignore".to_string(), "build/\n*.log\n".to_string()),
            (
                "/w/src/.gitignore".to_string(),
                "!keep.log\ngen\n".to_string(),
            ),
        ];
        let kept = filter_ignored("/w", files, &rules);
        assert_eq!(kept, vec!["a.py", "src/keep.log"]);
    }
}
