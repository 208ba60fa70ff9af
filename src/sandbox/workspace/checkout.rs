//! The session's checkout: a sandbox's files seen through its [`Workspace`]: the session patch
//! and the per-turn records, written once for every sandbox kind.
//!
//! A sandbox supplies two primitives ([`Sandbox::current_files`]: its files as the host can
//! read them; [`Sandbox::apply_restore`]: a [`super::RestorePlan`] carried out in its own way)
//! and its workspace ([`Sandbox::workspace`]); [`Checkout`] builds the rest on them. A stash the
//! model left is read inside the sandbox (`crate::sandbox::stash`) and counted in the patch.
//!
//! Does not own: the store and the diffs themselves ([`Workspace`]), running commands or files
//! (the [`Sandbox`] trait).

use super::Workspace;
use crate::sandbox::{stash, Sandbox, SandboxError};
use std::path::{Path, PathBuf};

/// A sandbox workspace's files as seen on the host.
#[derive(Debug)]
pub enum Files {
    /// The working copy itself (the host sandbox's directory, or bind-mounted into a
    /// container).
    Shared(PathBuf),
    /// A download, deleted on drop.
    Downloaded(tempfile::TempDir),
}

impl Files {
    pub fn path(&self) -> &Path {
        match self {
            Files::Shared(p) => p,
            Files::Downloaded(d) => d.path(),
        }
    }
}

/// The patch and the turn records of one sandbox (see the module docs).
#[derive(Clone, Copy)]
pub struct Checkout<'a> {
    sandbox: &'a dyn Sandbox,
}

impl<'a> Checkout<'a> {
    pub fn of(sandbox: &'a dyn Sandbox) -> Self {
        Self { sandbox }
    }

    fn workspace(&self) -> &'a Workspace {
        self.sandbox.workspace()
    }

    /// The session patch against the original repository (`git apply` accepts it there);
    /// empty when nothing changed. It is the diff from the workspace's baseline to its files,
    /// whatever the model did with git (a stash left behind counts as popped; see
    /// [`super`]).
    pub async fn export_patch(&self) -> Result<Vec<u8>, SandboxError> {
        let files = self.sandbox.current_files().await?;
        let stash = match &files {
            Files::Shared(p) if !stash::maybe_present(p) => None,
            _ => stash::read(self.sandbox).await,
        };
        self.workspace().diff_with(files.path(), stash.as_deref())
    }

    /// Record the workspace's files as turn `turn` (the agent's step) when they changed since
    /// the previous record; returns the record's ref name in the workspace's private store
    /// (`refs/lilypad/turns/<turn>`), or `None` when nothing changed. Records of `turn` and
    /// later (from before a restore) are replaced.
    pub async fn record_turn(&self, turn: u32) -> Result<Option<String>, SandboxError> {
        let files = self.sandbox.current_files().await?;
        self.workspace().record_turn(files.path(), turn)
    }

    /// Bring the workspace's files back exactly to the end of turn `turn` (the latest record
    /// at or before it; 0 is the baseline). Ignored files are left alone, and so is the
    /// in-sandbox `.git`: its history is the model's.
    pub async fn restore_turn(&self, turn: u32) -> Result<(), SandboxError> {
        let files = self.sandbox.current_files().await?;
        let plan = self.workspace().restore_plan(files.path(), turn)?;
        drop(files);
        self.sandbox.apply_restore(&plan).await
    }

    /// Turn `turn`'s record as a patch against the baseline (the latest at or before it).
    pub fn turn_patch(&self, turn: u32) -> Result<Vec<u8>, SandboxError> {
        self.workspace().turn_patch(turn)
    }

    /// Go back to the end of turn `turn` for good: its files restored exactly
    /// ([`Self::restore_turn`]) and the records of later turns dropped, so the turns that
    /// follow are recorded afresh.
    pub async fn rewind_to_turn(&self, turn: u32) -> Result<(), SandboxError> {
        self.restore_turn(turn).await?;
        self.workspace().forget_after(turn)
    }

    /// Record turns from saved patches (each against the baseline, in turn order), as a
    /// resumed or forked session takes over the records of the one it continues. The files
    /// are not touched.
    pub fn seed_turns(&self, turns: &[(u32, Vec<u8>)]) -> Result<(), SandboxError> {
        for (turn, patch) in turns {
            self.workspace().seed_turn(*turn, patch)?;
        }
        Ok(())
    }
}
