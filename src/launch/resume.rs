//! Resuming a recorded session: the conversation is rebuilt from the log, a fresh sandbox is
//! opened on the original repository, the saved session patch is applied inside it, and the
//! agent continues with the same log (appending).

use super::{EngineChoice, LaunchError, SessionOptions};
use crate::agent::ApprovalPolicy;
use crate::protocol::Event;
use crate::sandbox::{ExecExit, ExecRequest, Sandbox, SandboxKind};
use crate::session::{self, SessionError, SessionHeader, SessionLog};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A session read back from disk.
pub struct Recorded {
    pub header: SessionHeader,
    pub events: Vec<Event>,
    pub log_path: PathBuf,
}

impl Recorded {
    /// Whether the last task ended (false after a crash or a kill mid-task).
    pub fn finished(&self) -> bool {
        let last_task = self
            .events
            .iter()
            .rposition(|e| matches!(e, Event::UserMessage { .. }));
        let last_finish = self
            .events
            .iter()
            .rposition(|e| matches!(e, Event::TaskFinished { .. }));
        match (last_task, last_finish) {
            (Some(t), Some(f)) => f > t,
            (None, _) => true,
            (Some(_), None) => false,
        }
    }

    pub fn engine(&self) -> Option<EngineChoice> {
        EngineChoice::parse_label(&self.header.engine)
    }

    /// The approval policy the session started with (logs without one: the interface's
    /// default, which asks for edits and commands). A resume never runs with a looser one.
    pub fn policy(&self) -> ApprovalPolicy {
        self.header
            .policy
            .as_deref()
            .and_then(|p| {
                ApprovalPolicy::all(crate::agent::Policy::Ask)
                    .parse_over(p)
                    .ok()
            })
            .unwrap_or_default()
    }

    pub fn sandbox_kind(&self) -> SandboxKind {
        match self.header.sandbox.as_str() {
            "host" => SandboxKind::Host,
            "kube" => SandboxKind::Kube,
            _ => SandboxKind::Docker,
        }
    }
}

/// Find a session by id (or the newest with `id = None`) and read it.
pub fn find(opts: &SessionOptions, id: Option<&str>) -> Result<Recorded, LaunchError> {
    let dir = super::session_dir(opts)?;
    let list = session::list_sessions(&dir)?;
    let found = match id {
        Some(id) => list
            .iter()
            .find(|s| s.id == id || s.id.starts_with(id))
            .ok_or_else(|| SessionError::NotFound {
                id: id.to_string(),
                dir: dir.clone(),
            })?,
        None => list
            .last()
            .ok_or_else(|| SessionError::NoSessions { dir: dir.clone() })?,
    };
    let (header, events) = session::read_log(&found.path)?;
    Ok(Recorded {
        header,
        events: events.into_iter().map(|(_, e)| e).collect(),
        log_path: found.path.clone(),
    })
}

/// Put the saved session patch back into a fresh sandbox.
pub async fn restore_patch(sandbox: &dyn Sandbox, patch_file: &Path) -> Result<(), LaunchError> {
    let patch = match std::fs::read(patch_file) {
        Ok(p) if !p.is_empty() => p,
        _ => return Ok(()),
    };
    let name = ".lilypad-resume.patch";
    let path = format!("{}/{name}", sandbox.root());
    sandbox.write(&path, &patch).await?;
    let out = sandbox
        .exec(ExecRequest {
            command: format!(
                "(git apply --whitespace=nowarn {name} 2>/dev/null || patch -p1 -s < {name}); rc=$?; rm -f {name}; exit $rc"
            ),
            cwd: sandbox.root().to_string(),
            timeout: Duration::from_secs(60),
            keep_bytes: 4096,
            stream: None,
        })
        .await?;
    if out.exit != ExecExit::Exited(0) {
        return Err(LaunchError::Resume(format!(
            "the saved patch {} could not be applied in the sandbox: {}",
            patch_file.display(),
            String::from_utf8_lossy(&out.stderr.head)
        )));
    }
    Ok(())
}

/// Reopen the log for appending.
pub fn reopen_log(r: &Recorded) -> Result<SessionLog, LaunchError> {
    Ok(SessionLog::append_to(&r.log_path)?)
}
