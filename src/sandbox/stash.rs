//! A stash the model left in the workspace, read from inside the sandbox so that it can count
//! in the session patch ([`crate::sandbox::workspace::Workspace::diff_with`]).
//!
//! It runs git *inside* the sandbox, as one of the model's own commands would: the in-sandbox
//! `.git` (its config included) is the model's, and only there can it do no harm. What comes
//! back is untrusted text; the workspace applies it to a scratch index only.
//!
//! Does not own: the patch itself (`workspace`).

use super::{ExecExit, ExecRequest, Sandbox};
use std::time::Duration;

/// Largest stash diff taken (a larger one is left out, and logged).
const MAX_STASH_BYTES: usize = 64 << 20;

/// Prints the newest stash's diff (untracked files too where git can show them), or nothing
/// when there is no stash or no git. A diff of two commits runs no filter, hook or pager; the
/// options and `-c` turn off what config could still run (external diff, textconv,
/// fsmonitor), so an edit to `.git/config` is no way around the approval of commands.
const SHOW: &str = "g() { git -c core.fsmonitor=false -c core.pager=cat \"$@\"; }; \
    g rev-parse -q --verify refs/stash >/dev/null 2>&1 || exit 0; \
    set -- stash show -p --binary --no-color --no-ext-diff --no-textconv; \
    g \"$@\" --include-untracked 'stash@{0}' 2>/dev/null || g \"$@\" 'stash@{0}'";

/// The diff of the newest stash in the workspace, if there is one.
pub(crate) async fn read<S: Sandbox + ?Sized>(sb: &S) -> Option<Vec<u8>> {
    let req = ExecRequest {
        command: SHOW.into(),
        cwd: sb.root().to_string(),
        timeout: Duration::from_secs(60),
        keep_bytes: MAX_STASH_BYTES,
        stream: None,
    };
    match sb.exec(req).await {
        Ok(out) if out.exit == ExecExit::Exited(0) && !out.stdout.truncated() => {
            Some(out.stdout.head).filter(|p| !p.is_empty())
        }
        Ok(out) if out.stdout.truncated() => {
            tracing::warn!("the stash left in the workspace is too large to take into the patch");
            None
        }
        Ok(out) => {
            tracing::warn!(
                "reading the stash left in the workspace failed: {:?}: {}",
                out.exit,
                String::from_utf8_lossy(&out.stderr.head).trim()
            );
            None
        }
        Err(e) => {
            tracing::warn!("reading the stash left in the workspace failed: {e}");
            None
        }
    }
}

/// A cheap look from the host at a workspace whose files it can see (host, Docker): false
/// only when the in-sandbox `.git` plainly has no stash, so that most exports need no command.
/// Nothing is followed or trusted: a `.git` that is not a plain directory, packed refs or a
/// reftable count as "maybe".
pub(crate) fn maybe_present(work: &std::path::Path) -> bool {
    let dot_git = work.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return true,
        Err(_) => return false,
    }
    let exists = |rel: &str| std::fs::symlink_metadata(dot_git.join(rel)).is_ok();
    if exists("refs/stash") || exists("reftable") || exists("logs/refs/stash") {
        return true;
    }
    match std::fs::symlink_metadata(dot_git.join("packed-refs")) {
        Ok(m) if m.is_file() => std::fs::read(dot_git.join("packed-refs"))
            .map(|b| b.windows(10).any(|w| w == b"refs/stash"))
            .unwrap_or(true),
        Ok(_) => true,
        Err(_) => false,
    }
}
