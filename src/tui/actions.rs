//! The slow or outside-world effects the runner performs for the App: the key reader thread,
//! `$EDITOR`, `git apply` of the session patch in the user's repository, and saving it.

use crate::tui::app::PatchDecision;
use crossterm::event::Event as TermEvent;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// Terminal input read on its own thread, so a busy interface never drops keys and a slow
/// frame never delays one. Pausable while another program owns the terminal.
pub struct KeyReader {
    pub rx: UnboundedReceiver<TermEvent>,
    paused: Arc<AtomicBool>,
    idle: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl KeyReader {
    pub fn start() -> Self {
        let (tx, rx) = unbounded_channel();
        let paused = Arc::new(AtomicBool::new(false));
        let idle = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, i, s) = (paused.clone(), idle.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if p.load(Ordering::Relaxed) {
                    i.store(true, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                i.store(false, Ordering::Relaxed);
                match crossterm::event::poll(Duration::from_millis(50)) {
                    Ok(true) => match crossterm::event::read() {
                        Ok(ev) => {
                            if tx.send(ev).is_err() {
                                return;
                            }
                        }
                        Err(_) => return,
                    },
                    Ok(false) => {}
                    Err(_) => return,
                }
            }
        });
        Self {
            rx,
            paused,
            idle,
            stop,
        }
    }

    /// Stop reading until [`KeyReader::resume`]; returns once the thread is no longer reading.
    pub fn pause(&self) {
        self.paused.store(true, Ordering::Relaxed);
        for _ in 0..100 {
            if self.idle.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn resume(&self) {
        self.paused.store(false, Ordering::Relaxed);
    }
}

impl Drop for KeyReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Why an action the interface runs for the person failed; shown as a notice.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{editor} exited with {status}")]
    Editor {
        editor: String,
        status: std::process::ExitStatus,
    },
    #[error(transparent)]
    Apply(#[from] crate::sandbox::workspace::ApplyError),
    #[error("no repository to apply to")]
    NoRepository,
    #[error("{0}")]
    Export(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("reading the patch stopped: {0}")]
    Parse(#[source] tokio::task::JoinError),
    #[error("the terminal: {0}")]
    Terminal(#[source] std::io::Error),
    #[error("listing the repository: {0}")]
    List(#[source] crate::sandbox::SandboxError),
    #[error("exporting the session: {0}")]
    Session(#[from] crate::export::ExportError),
    #[error("this session has no log to export")]
    NoLog,
}

fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> ActionError {
    let doing = doing.into();
    move |source| ActionError::Io { doing, source }
}

/// Open `text` in the person's editor (`$VISUAL`, `$EDITOR`, else `vi`) in a temporary file
/// named like `path` (so the editor picks the file type), and return what was saved.
pub fn edit_text(path: &str, text: &str) -> Result<String, ActionError> {
    let dir = tempfile::Builder::new()
        .prefix("lilypad-edit-")
        .tempdir()
        .map_err(io("creating a temporary file"))?;
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "proposal.txt".into());
    let file = dir.path().join(name);
    std::fs::write(&file, text).map_err(io(format!("writing {}", file.display())))?;
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|e| !e.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".into());
    // Through the shell, so EDITOR may carry arguments ("code --wait").
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("lilypad-editor")
        .arg(&file)
        .status()
        .map_err(io(format!("starting {editor}")))?;
    if !status.success() {
        return Err(ActionError::Editor { editor, status });
    }
    std::fs::read_to_string(&file).map_err(io(format!("reading {}", file.display())))
}

/// The two runs of `git apply`: a check that changes nothing, then the real one.
/// `git apply` the patch in `repo`, checked first so that a patch that does not apply changes
/// nothing ([`crate::sandbox::workspace::apply_to_repository`]).
pub fn apply_patch(repo: &Path, patch: &[u8]) -> Result<PatchDecision, ActionError> {
    crate::sandbox::workspace::apply_to_repository(repo, patch)?;
    Ok(PatchDecision::Applied {
        repo: repo.to_path_buf(),
    })
}

/// Write the patch to `path` (relative paths from the current directory).
pub fn save_patch(path: &Path, patch: &[u8]) -> Result<PatchDecision, ActionError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(format!("creating {}", parent.display())))?;
    }
    std::fs::write(path, patch).map_err(io(format!("writing {}", path.display())))?;
    let full = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
    Ok(PatchDecision::Saved { path: full })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_in_a_plain_folder_and_refuses_a_bad_patch() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let patch = b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n";
        apply_patch(dir.path(), patch).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\nthree\n"
        );
        let err = apply_patch(dir.path(), patch).unwrap_err().to_string();
        assert!(err.contains("--check"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\nthree\n"
        );
    }

    #[test]
    fn applies_in_a_subdirectory_of_a_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            assert!(Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap()
                .status
                .success());
        };
        git(&["init", "-q"]);
        let sub = dir.path().join("proj");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.txt"), "x\n").unwrap();
        let patch = b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n";
        apply_patch(&sub, patch).unwrap();
        assert_eq!(std::fs::read_to_string(sub.join("a.txt")).unwrap(), "y\n");
    }
}
