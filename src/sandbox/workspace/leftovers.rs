//! Workspaces of dead sessions. A session killed with SIGKILL (or a crash) cannot delete its
//! working copy and store, so each is named after the process that made it
//! (`lilypad-ws-<pid>-…`, `lilypad-git-<pid>-…` in the temporary directory) and the next
//! workspace made on this machine removes those whose process is gone. A crashed session's
//! patch is kept with its session log, so `lilypad resume` does not need them.
//!
//! Owns: the names and the sweep. Does not own: the containers and pods of dead sessions
//! (`crate::sandbox::container`'s sweeps).

use crate::sandbox::machine::pid_alive;
use std::path::Path;

/// The working copy's and the store's name prefixes.
pub(super) const WORK: &str = "lilypad-ws-";
pub(super) const STORE: &str = "lilypad-git-";

/// The prefix of a directory of kind `kind` made by this process.
pub(super) fn own_prefix(kind: &str) -> String {
    format!("{kind}{}-", std::process::id())
}

/// The process that made the directory called `name`, if it is one of ours.
fn owner(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix(WORK)
        .or_else(|| name.strip_prefix(STORE))?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok()
}

/// Remove the workspaces in `dir` whose process is gone; returns how many went. Failures are
/// logged and skipped: a leftover is never worth failing a new session for.
pub(super) fn sweep(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(owner) else {
            continue;
        };
        if pid_alive(pid) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match std::fs::remove_dir_all(e.path()) {
            Ok(()) => removed += 1,
            Err(err) => tracing::warn!("removing {}: {err}", e.path().display()),
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_whose_they_are() {
        assert_eq!(owner("lilypad-ws-4242-aB3xYz"), Some(4242));
        assert_eq!(owner("lilypad-git-7-q"), Some(7));
        // Older names (no pid), and other programs' directories.
        assert_eq!(owner("lilypad-ws-aB3xYz"), None);
        assert_eq!(owner("lilypad-ws-123456"), None);
        assert_eq!(owner("other-4242-x"), None);
    }

    #[test]
    fn only_dead_processes_workspaces_go() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mine = std::process::id();
        for name in [
            format!("lilypad-ws-{dead}-a"),
            format!("lilypad-git-{dead}-b"),
            format!("lilypad-ws-{mine}-c"),
            "lilypad-ws-old".to_string(),
        ] {
            std::fs::create_dir_all(tmp.path().join(&name).join("sub")).unwrap();
        }
        std::fs::write(tmp.path().join(format!("lilypad-ws-{dead}-file")), b"").unwrap();
        assert_eq!(sweep(tmp.path()), 2);
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut kept = vec![
            format!("lilypad-ws-{dead}-file"),
            format!("lilypad-ws-{mine}-c"),
            "lilypad-ws-old".to_string(),
        ];
        kept.sort();
        assert_eq!(left, kept);
    }
}
