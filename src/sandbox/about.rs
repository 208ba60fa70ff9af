//! What a sandbox is ([`About`]: its kind, a note for people, its image's digest), and the
//! conveniences every sandbox answers the same way from its [`Sandbox`] methods
//! ([`SandboxExt`]), so that a sandbox kind implements only what differs between kinds.
//!
//! Owns: the [`About`] record and the extension trait. Does not own: how a kind describes
//! itself (each implementation's [`Sandbox::about`]).

use super::{Sandbox, SandboxKind};

/// What a sandbox is, told once by [`Sandbox::about`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct About {
    pub kind: SandboxKind,
    /// A human-readable note on what the model's commands can reach (shown at start).
    pub description: String,
    /// The `sha256:` digest of the image the sandbox runs, where its runtime tells it (none
    /// for the host).
    pub image_digest: Option<String>,
}

/// Answers every sandbox gives from its [`Sandbox`] methods; implemented for every sandbox.
pub trait SandboxExt: Sandbox {
    /// Which kind of sandbox this is.
    fn kind(&self) -> SandboxKind {
        self.about().kind
    }

    /// A human-readable note on what the model's commands can reach (shown at start).
    fn describe(&self) -> String {
        self.about().description
    }

    /// The `sha256:` digest of the image the sandbox runs, where its runtime tells it.
    fn image_digest(&self) -> Option<String> {
        self.about().image_digest
    }

    /// Where commands start and relative paths resolve: the workspace root, in every sandbox.
    fn workdir(&self) -> &str {
        self.root()
    }
}

impl<S: Sandbox + ?Sized> SandboxExt for S {}
