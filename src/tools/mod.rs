//! The five tools the model acts through: Read, Write, Edit, Glob and Bash, written once
//! against [`crate::sandbox::Sandbox`].
//!
//! Owns: argument handling (missing and empty values, numeric strings, the `path` fallback for
//! `file_path`), path rules (every path resolves inside the workspace: relative to the workdir,
//! `~` meaning the workspace root, symlinks resolved, escapes refused), the result texts, caps
//! and error strings of docs/tools.md, and the two-step form of mutating calls: a
//! [`ProposedChange`] that the agent can hold for approval, then [`Tools::apply`] of the
//! approved text, which refuses if the file changed meanwhile.
//!
//! Does not own: which sandbox runs the calls, the approval policy (the agent asks by
//! [`ToolCategory`], see [`category`]), or how results are shown.
//!
//! Every failure the model should see is a result text (`{ErrorKind}: {message}`, with
//! Python's kind names as in the original harness), never a Rust error.

mod args;
mod bash;
mod change;
mod files;
mod format;
mod paths;

use crate::protocol::{ToolCall, ToolCategory, ToolName};
use crate::sandbox::{OutputChunk, Sandbox, SandboxExt};
use std::sync::Arc;
use std::time::Duration;

pub use change::{Before, ChangeTool, LineEnding, ProposedChange};
pub use format::cap_chars;

/// The approval category of a tool by name (see [`ToolName::category`]); `None` for a tool
/// that is not one of the five, which is answered with `Unknown tool: {name}` and runs nothing.
pub fn category(name: &str) -> Option<ToolCategory> {
    ToolName::parse(name).map(ToolName::category)
}

/// Caps and defaults (docs/tools.md, "Caps and defaults"). The config layer may override them.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Characters of a Read result.
    pub read_chars: usize,
    /// Characters of a Bash result.
    pub bash_chars: usize,
    /// Paths listed by Glob.
    pub glob_files: usize,
    /// Bash timeout when the call gives none.
    pub default_timeout: Duration,
    /// Longest timeout a call may ask for.
    pub max_timeout: Duration,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            read_chars: 20_000,
            bash_chars: 30_000,
            glob_files: 1_000,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(3 * 3600),
        }
    }
}

/// A tool's answer, exactly as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    pub content: String,
    /// The call failed (bad arguments, missing file, refused path...). A command that exits
    /// non-zero is not an error: its exit code is in the content.
    pub is_error: bool,
}

impl ToolResult {
    pub(crate) fn ok(content: String) -> Self {
        Self {
            content,
            is_error: false,
        }
    }
    pub(crate) fn err(content: String) -> Self {
        Self {
            content,
            is_error: true,
        }
    }
}

/// A Bash call as shown for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    pub command: String,
    pub description: Option<String>,
    pub timeout: Duration,
}

/// The five tools over one sandbox.
#[derive(Clone)]
pub struct Tools {
    sandbox: Arc<dyn Sandbox>,
    limits: ToolLimits,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("sandbox", &self.sandbox.describe())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Tools {
    pub fn new(sandbox: Arc<dyn Sandbox>, limits: ToolLimits) -> Self {
        Self { sandbox, limits }
    }

    pub fn sandbox(&self) -> &Arc<dyn Sandbox> {
        &self.sandbox
    }

    pub fn limits(&self) -> &ToolLimits {
        &self.limits
    }

    /// Run a call to the end without asking anyone: Write and Edit apply their proposal as is.
    pub async fn run(&self, call: &ToolCall) -> ToolResult {
        self.run_streaming(call, None).await
    }

    /// [`Tools::run`], with a Bash command's output also sent to `live` as it arrives.
    pub async fn run_streaming(
        &self,
        call: &ToolCall,
        live: Option<tokio::sync::mpsc::UnboundedSender<OutputChunk>>,
    ) -> ToolResult {
        let sb = self.sandbox.as_ref();
        let a = args::Args::new(&call.arguments);
        let Some(tool) = ToolName::parse(&call.name) else {
            return ToolResult::err(format!("Unknown tool: {}", call.name));
        };
        let outcome = match tool {
            ToolName::Read => files::read(sb, &a, &self.limits).await,
            ToolName::Glob => files::glob(sb, &a, &self.limits).await,
            ToolName::Bash => bash::run(sb, &a, &self.limits, live).await,
            ToolName::Write | ToolName::Edit => match self.propose(call).await {
                Ok(change) => return self.apply(&change, &change.new_text).await,
                Err(result) => return result,
            },
        };
        match outcome {
            Ok(text) => ToolResult::ok(text),
            Err(f) => ToolResult::err(f.to_string()),
        }
    }

    /// The change a Write or Edit call would make, for approval. `Err` is the final result
    /// to give the model (invalid arguments, a missing file, an ambiguous edit...).
    pub async fn propose(&self, call: &ToolCall) -> Result<ProposedChange, ToolResult> {
        let sb = self.sandbox.as_ref();
        let a = args::Args::new(&call.arguments);
        let r = match ToolName::parse(&call.name) {
            Some(ToolName::Write) => change::propose_write(sb, &call.id, &a).await,
            Some(ToolName::Edit) => change::propose_edit(sb, &call.id, &a).await,
            _ => return Err(ToolResult::err(format!("Unknown tool: {}", call.name))),
        };
        r.map_err(|f| ToolResult::err(f.to_string()))
    }

    /// Write the approved text of a proposal (the proposal's `new_text`, or the user's edited
    /// version of it). Refuses, writing nothing, if the file changed since the proposal.
    pub async fn apply(&self, change: &ProposedChange, approved: &str) -> ToolResult {
        match change::apply(self.sandbox.as_ref(), change, approved).await {
            Ok(text) => ToolResult::ok(text),
            Err(f) => ToolResult::err(f.to_string()),
        }
    }

    /// A Bash call's command and timeout, for approval. `Err` is the final result (no command).
    pub fn command_request(&self, call: &ToolCall) -> Result<CommandRequest, ToolResult> {
        bash::request(&args::Args::new(&call.arguments), &self.limits)
            .map_err(|f| ToolResult::err(f.to_string()))
    }
}
