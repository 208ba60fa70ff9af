//! The options every session-running command shares (`lilypad`, `run`, `resume`, `demo`):
//! where the repository is, which sandbox, which engine, the approval policy and limits.
//! Typed data, checked when the command line is read (a typo fails before any model loads):
//! `crate::cli` fills them from its flags. Does not own choosing the policy a session starts
//! with (`super::policy`) or finding the model file (`super::EngineChoice`).

use crate::agent::PolicyOverride;
use crate::sandbox::{SandboxKind, SandboxSettings, SandboxSpec};
use std::path::{Path, PathBuf};

/// `--engine`: which kind of engine runs the model, as the flag names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineFlag {
    /// The in-process engine on the configured model file (`llama`).
    Llama,
    /// A scripted mock replaying raw model outputs from a file (`script:FILE`).
    Script(PathBuf),
    /// An OpenAI-compatible server (`remote`, with `--endpoint URL`).
    Remote,
}

/// An `--engine` value that names no engine.
#[derive(Debug, thiserror::Error)]
#[error("unknown engine {0:?}: use `llama`, `script:FILE` or `remote` (with --endpoint URL)")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for EngineFlag {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "llama" => Ok(Self::Llama),
            "remote" => Ok(Self::Remote),
            _ => match s.strip_prefix("script:") {
                Some(path) if !path.is_empty() => Ok(Self::Script(PathBuf::from(path))),
                _ => Err(UnknownEngine(s.to_string())),
            },
        }
    }
}

/// The sandbox kind a command chose itself (`--sandbox`, or a resumed session's own kind);
/// everything else about the sandbox is in the settings' `[sandbox]` section, flags included.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxOptions {
    /// Where commands run: a Docker container, a Kubernetes pod, or this machine
    pub kind: Option<SandboxKind>,
    /// Run host commands without bubblewrap even where it is available
    pub uncontained: bool,
}

impl SandboxOptions {
    /// The sandbox specification for `repo` from `settings`: of this kind, else the section's,
    /// else `default`; host commands contained unless `uncontained`.
    pub fn spec(
        &self,
        settings: &SandboxSettings,
        repo: &Path,
        default: SandboxKind,
    ) -> SandboxSpec {
        let mut spec = settings.spec(repo, self.kind, default);
        if let crate::sandbox::KindSettings::Host(h) = &mut spec.settings {
            h.uncontained = self.uncontained;
        }
        spec
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionOptions {
    /// The repository to work on (default: the current directory)
    pub repo: Option<PathBuf>,
    pub sandbox: SandboxOptions,
    /// Allow the host sandbox to run commands without asking in headless runs
    pub allow_host: bool,
    /// Approval policy: `ask`, `auto`, `deny`, or per category, e.g. `edits=auto,commands=ask`
    pub approve: Option<PolicyOverride>,
    /// Step limit per session
    pub max_steps: Option<u32>,
    /// Wall-time limit per task, in seconds
    pub wall_time: Option<u64>,
    /// Pause after every model turn
    pub step: bool,
    /// Engine: `llama` (the in-process model, default) or `script:FILE` (a scripted mock
    /// that replays raw model outputs, for demos and tests)
    pub engine: Option<EngineFlag>,
    /// Directory for session logs (default: the platform data dir's lilypad/sessions)
    pub session_dir: Option<PathBuf>,
    /// Leave the project instructions (`AGENTS.md` files) out of the first message
    pub no_project_doc: bool,
}
