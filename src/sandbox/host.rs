//! The host sandbox: the model's commands run on this machine, with the user's permissions and
//! network, in a copy of the repository. Only chosen on explicit request (it contains nothing
//! but the files); the caller shows [`super::HOST_WARNING`].
//!
//! What it does contain: the environment (commands get a fresh, minimal one with a throwaway
//! `HOME`, so tokens in the user's environment are not visible) and time (a timeout kills the
//! command's process group, then any process still carrying this command's exec marker, i.e.
//! children that escaped with `setsid`; one that also cleared its environment cannot be found:
//! that is what the container sandboxes are for). `close` likewise stops the background
//! processes of the session (found by a session marker in their environment).

use super::output::{pump, Collector};
use super::workspace::Workspace;
use super::{
    EntryKind, ExecExit, ExecOutput, ExecRequest, Resolved, Sandbox, SandboxError, SandboxKind,
    StreamKind, MAX_FILE_BYTES,
};
use async_trait::async_trait;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// See the module docs.
#[derive(Debug)]
pub struct HostSandbox {
    ws: Workspace,
    root: String,
    home: tempfile::TempDir,
    session: String,
}

impl HostSandbox {
    pub fn new(ws: Workspace) -> Result<Self, SandboxError> {
        // The temporary directory may sit behind a symlink (/tmp on some systems): the root
        // must be canonical for the tools' containment check.
        let root = fs::canonicalize(ws.work_dir()).unwrap_or_else(|_| ws.work_dir().to_path_buf());
        let home = tempfile::Builder::new()
            .prefix("lilypad-home-")
            .tempdir()
            .map_err(|e| SandboxError::io("creating", "a temporary HOME", e))?;
        Ok(Self {
            root: root.to_string_lossy().into_owned(),
            ws,
            home,
            session: super::session_id(),
        })
    }
}

/// Monotonic exec ids (the marker children inherit).
fn next_exec_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

const MARKER: &str = "LILYPAD_EXEC_ID";
/// Carried by every process of the session, so that `close` can stop background ones.
const SESSION_MARKER: &str = "LILYPAD_SESSION";

#[async_trait]
impl Sandbox for HostSandbox {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Host
    }
    fn root(&self) -> &str {
        &self.root
    }
    fn workdir(&self) -> &str {
        &self.root
    }
    fn describe(&self) -> String {
        format!(
            "host sandbox: a copy of {} at {}",
            self.ws.origin().display(),
            self.root
        )
    }

    async fn exec(&self, req: ExecRequest) -> Result<ExecOutput, SandboxError> {
        let start = Instant::now();
        let deadline = start + req.timeout;
        let id = next_exec_id();
        let (sh, flag) = if Path::new("/bin/bash").exists() {
            ("/bin/bash", "-lc")
        } else {
            ("/bin/sh", "-c")
        };
        let mut cmd = tokio::process::Command::new(sh);
        cmd.arg(flag)
            .arg(&req.command)
            .current_dir(&req.cwd)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.home.path())
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env(MARKER, &id)
            .env(SESSION_MARKER, &self.session)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| SandboxError::io("starting", format!("{sh} in {}", req.cwd), e))?;
        let pgid = child.id();
        let mut out =
            Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stdout);
        let mut err =
            Collector::new(req.keep_bytes).with_live(req.stream.clone(), StreamKind::Stderr);
        let mut so = child.stdout.take();
        let mut se = child.stderr.take();
        let finished = pump(&mut so, &mut se, &mut out, &mut err, deadline).await;
        let status = if finished {
            tokio::time::timeout_at(deadline.into(), child.wait())
                .await
                .ok()
        } else {
            None
        };
        let exit = match status {
            Some(Ok(st)) => ExecExit::Exited(exit_code(st)),
            Some(Err(e)) => return Err(SandboxError::io("waiting for", sh, e)),
            None => {
                if let Some(pg) = pgid {
                    kill_group(pg);
                }
                kill_marked(MARKER, &id);
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
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

    async fn resolve(&self, path: &str) -> Result<Resolved, SandboxError> {
        resolve_local(Path::new(path))
    }

    async fn read(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let meta = fs::metadata(path).map_err(|e| SandboxError::io("reading", path, e))?;
        if meta.is_dir() {
            return Err(SandboxError::IsADirectory { path: path.into() });
        }
        if meta.len() > MAX_FILE_BYTES as u64 {
            return Err(SandboxError::TooLarge {
                path: path.into(),
                size: meta.len() as usize,
                limit: MAX_FILE_BYTES,
            });
        }
        fs::read(path).map_err(|e| SandboxError::io("reading", path, e))
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        write_atomic(Path::new(path), data)
    }

    async fn list_files(&self, dir: &str) -> Result<Vec<String>, SandboxError> {
        // A large tree takes a while to walk: keep it off the async threads.
        let (root, dir) = (PathBuf::from(&self.root), PathBuf::from(dir));
        tokio::task::spawn_blocking(move || list_local(&root, &dir))
            .await
            .map_err(|e| {
                SandboxError::io(
                    "listing files in",
                    self.root.clone(),
                    std::io::Error::other(e),
                )
            })?
    }

    async fn export_patch(&self) -> Result<Vec<u8>, SandboxError> {
        self.ws.diff(self.ws.work_dir())
    }

    async fn close(&self) -> Result<(), SandboxError> {
        // Background processes the model started (servers, `nohup`) end with the session.
        kill_marked(SESSION_MARKER, &self.session);
        Ok(())
    }
}

fn exit_code(st: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c as i64,
        (None, Some(sig)) => 128 + sig as i64,
        (None, None) => -1,
    }
}

fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// Kill every process of ours whose environment carries `var=id` (for an exec's marker:
/// escapees that left the process group). Repeated because a forking escapee may add processes meanwhile.
fn kill_marked(var: &str, id: &str) {
    let needle = format!("{var}={id}\0");
    for _ in 0..3 {
        let mut found = Vec::new();
        let Ok(dir) = fs::read_dir("/proc") else {
            return;
        };
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(env) = fs::read(e.path().join("environ")) {
                if env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(pid.to_string());
                }
            }
        }
        if found.is_empty() {
            return;
        }
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(&found)
            .stderr(Stdio::null())
            .status();
    }
}

/// `realpath -m` over the existing prefix of `p`; see [`Resolved`].
pub(crate) fn resolve_local(p: &Path) -> Result<Resolved, SandboxError> {
    let mut existing = p.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => break,
        }
        if !existing.pop() {
            break;
        }
    }
    let show = p.display().to_string();
    let mut full =
        fs::canonicalize(&existing).map_err(|e| SandboxError::io("resolving", show, e))?;
    let kind = if !rest.is_empty() {
        EntryKind::Missing
    } else {
        match fs::metadata(&full) {
            Ok(m) if m.is_dir() => EntryKind::Dir,
            Ok(m) if m.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        }
    };
    for name in rest.iter().rev() {
        full.push(name);
    }
    Ok(Resolved {
        path: full.to_string_lossy().into_owned(),
        kind,
    })
}

/// Write through a temporary file in the same directory, then rename over the target (a
/// symlink at the target is replaced, never followed). Keeps an existing file's mode.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), SandboxError> {
    let show = || path.display().to_string();
    if path.is_dir() {
        return Err(SandboxError::IsADirectory { path: show() });
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(parent)
        .map_err(|e| SandboxError::io("creating directory for", show(), e))?;
    let mode = fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let mut tmp = tempfile::Builder::new()
        .prefix(".lilypad-write.")
        .tempfile_in(parent)
        .map_err(|e| SandboxError::io("writing", show(), e))?;
    tmp.write_all(data)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| SandboxError::io("writing", show(), e))?;
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode))
        .map_err(|e| SandboxError::io("setting mode of", show(), e))?;
    tmp.persist(path)
        .map_err(|e| SandboxError::io("writing", show(), e.error))?;
    Ok(())
}

/// Regular files below `dir`, relative to it, sorted; `.git` and ignored files skipped, with
/// the ignore files of `dir`'s ancestors up to `root` applied too.
pub(crate) fn list_local(root: &Path, dir: &Path) -> Result<Vec<String>, SandboxError> {
    let dir_owned: PathBuf = dir.to_path_buf();
    // A parallel walk (one thread per core, at most 8): directory reads dominate on large
    // trees, and each thread keeps its own list, merged once at the end.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let walker = super::workspace::walker(root)
        .threads(threads)
        .filter_entry(move |e| {
            let p = e.path();
            e.file_name() != ".git" && (p.starts_with(&dir_owned) || dir_owned.starts_with(p))
        })
        .build_parallel();
    let lists = std::sync::Mutex::new(Vec::<Vec<String>>::new());
    walker.visit(&mut ListBuilder { dir, lists: &lists });
    // A poisoned lock only means a walker thread panicked; its list is still whole.
    let lists = lists.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut files: Vec<String> = lists.into_iter().flatten().collect();
    files.sort();
    Ok(files)
}

/// Makes one [`FileList`] per walker thread.
struct ListBuilder<'a> {
    dir: &'a Path,
    lists: &'a std::sync::Mutex<Vec<Vec<String>>>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for ListBuilder<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(FileList {
            dir: self.dir,
            files: Vec::new(),
            lists: self.lists,
        })
    }
}

/// One walker thread's files, handed over when the thread is done.
struct FileList<'a> {
    dir: &'a Path,
    files: Vec<String>,
    lists: &'a std::sync::Mutex<Vec<Vec<String>>>,
}

impl ignore::ParallelVisitor for FileList<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        if let Ok(entry) = entry {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if let Ok(rel) = entry.path().strip_prefix(self.dir) {
                    self.files.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        ignore::WalkState::Continue
    }
}

impl Drop for FileList<'_> {
    fn drop(&mut self) {
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        lists.push(std::mem::take(&mut self.files));
    }
}
