//! Resuming a recorded session: the conversation is rebuilt from the log, a fresh sandbox is
//! opened on the original repository, the saved session patch is applied inside it, the saved
//! turn patches become the workspace's turn records again (so rewinds reach back past the
//! resume), and the agent continues with the same log (appending).
//!
//! Forking ([`fork`], `lilypad resume ID --at-turn K`) makes a new session from turn K of an
//! old one: a new log whose header names the parent and the turn, holding the old events and
//! then a rewind to turn K (which rebuilding honours), and turn K's files as its session patch
//! and turn patches. The old session is not touched.

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
        // A rewind ends whatever ran: the agent waits for a message after it.
        let last_rewind = self
            .events
            .iter()
            .rposition(|e| matches!(e, Event::Rewound { .. }));
        let last_finish = last_finish.max(last_rewind);
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
    /// default, which asks for edits and commands). A header whose policy cannot be read is
    /// an error naming the log and the text, never a default.
    pub fn started_policy(&self) -> Result<ApprovalPolicy, LaunchError> {
        let Some(text) = self.header.policy.as_deref() else {
            return Ok(ApprovalPolicy::default());
        };
        ApprovalPolicy::all(crate::agent::Policy::Ask)
            .parse_over(text)
            .map_err(|source| LaunchError::HeaderPolicy {
                log: self.log_path.clone(),
                source,
            })
    }

    /// The policy last recorded in force: the latest change, or the latest start's (`None`
    /// for logs that record neither).
    pub fn recorded_policy(&self) -> Option<ApprovalPolicy> {
        self.events.iter().rev().find_map(|e| match e {
            Event::ApprovalPolicyChanged { policy } => Some(*policy),
            Event::SessionStarted {
                approval_policy, ..
            } => *approval_policy,
            _ => None,
        })
    }

    /// The policy a resume continues with: the one last recorded, but never looser than the
    /// one the session started with (`declined` holds it when it was; `--approve` goes over
    /// the result, which is how the person asks for it again). Fails when the header's policy
    /// cannot be read ([`Self::started_policy`]).
    pub fn policy(&self) -> Result<ResumedPolicy, LaunchError> {
        let started = self.started_policy()?;
        let recorded = self.recorded_policy().unwrap_or(started);
        let policy = recorded.no_looser_than(&started);
        Ok(ResumedPolicy {
            policy,
            declined: (policy != recorded).then_some(recorded),
        })
    }

    pub fn sandbox_kind(&self) -> SandboxKind {
        match self.header.sandbox.as_str() {
            "host" => SandboxKind::Host,
            "kube" => SandboxKind::Kube,
            _ => SandboxKind::Docker,
        }
    }
}

/// The approval policy a resume continues with ([`Recorded::policy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumedPolicy {
    pub policy: ApprovalPolicy,
    /// The policy last recorded, when it was looser than the session's first and was not kept.
    pub declined: Option<ApprovalPolicy>,
}

impl ResumedPolicy {
    /// What the interface tells the person when a looser policy was not kept.
    pub fn notice(&self) -> Option<String> {
        self.declined.map(|d| {
            format!(
                "the approval policy was loosened to `{}` during the session; it resumes with `{}`, no looser than it started with (pass --approve {} to use it again)",
                d.short_spec(),
                self.policy.short_spec(),
                d.short_spec()
            )
        })
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

/// The saved session patch at `path`: empty when none was saved (the session changed
/// nothing); one that exists but cannot be read is an error naming it, never an empty patch.
pub fn read_saved_patch(path: &Path) -> Result<Vec<u8>, LaunchError> {
    match std::fs::read(path) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(LaunchError::SavedPatch {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Put the saved session patch back into a fresh sandbox.
pub async fn restore_patch(sandbox: &dyn Sandbox, patch_file: &Path) -> Result<(), LaunchError> {
    let patch = read_saved_patch(patch_file)?;
    if patch.is_empty() {
        return Ok(());
    }
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

/// Give a resumed session's fresh workspace the turn records of the log's saved turn patches,
/// so that a rewind can go back to turns before the resume. A patch that no longer applies
/// (the repository changed since) is skipped with a warning: those turns restore as the
/// baseline's files would.
pub async fn seed_turns(sandbox: &dyn Sandbox, log_path: &Path) -> Result<(), LaunchError> {
    let saved = session::read_turn_patches(log_path)?;
    for (turn, patch) in saved {
        if let Err(e) =
            crate::sandbox::workspace::Checkout::of(sandbox).seed_turns(&[(turn, patch)])
        {
            tracing::warn!("turn {turn}'s saved files could not be recorded again: {e}");
        }
    }
    Ok(())
}

/// Fork a new session from the end of turn `turn` of `rec` (see the module docs); returns the
/// new session, read back from its log, ready to be resumed.
pub fn fork(rec: &Recorded, turn: u32) -> Result<Recorded, LaunchError> {
    let old_id = &rec.header.session_id;
    let all = session::rebuild(&rec.header.system_prompt, &rec.events);
    let last = all.turns.last().map_or(0, |t| t.turn);
    let at =
        session::rebuild_at(&rec.header.system_prompt, &rec.events, turn).ok_or_else(|| {
            let known: Vec<String> = all.turns.iter().map(|t| t.turn.to_string()).collect();
            LaunchError::Resume(format!(
                "session {old_id} has no turn {turn} to fork from (its turns: {})",
                known.join(", ")
            ))
        })?;
    let end = at
        .turns
        .last()
        .copied()
        .ok_or_else(|| LaunchError::Resume(format!("session {old_id} has no turn {turn}")))?;
    let saved = session::read_turn_patches(&rec.log_path)?;
    let latest = read_saved_patch(&rec.log_path.with_extension("patch"))?;
    let patch = match saved.iter().rev().find(|(t, _)| *t <= turn) {
        Some((_, p)) => p.clone(),
        None if saved.is_empty() && !latest.is_empty() && turn < last => {
            return Err(LaunchError::Resume(format!(
                "session {old_id} was recorded without the files of each turn (only its last                  turn's are known); it can be forked at turn {last} only"
            )))
        }
        None if saved.is_empty() && turn == last => latest,
        None => Vec::new(),
    };
    let dir = rec
        .log_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut header = rec.header.clone();
    header.session_id = session::new_session_id();
    header.created = session::now_rfc3339();
    header.parent = Some(old_id.clone());
    header.parent_turn = Some(turn);
    let mut log = SessionLog::create(&dir, &header)?;
    let (_, timed) = session::read_log(&rec.log_path)?;
    for (ts, e) in &timed {
        log.append_at(ts, e)?;
    }
    log.append(&Event::Rewound {
        turn,
        messages: end.messages,
        context_tokens: end.context_tokens,
        from_turn: last,
    })?;
    for (t, p) in saved.iter().filter(|(t, _)| *t <= turn) {
        log.save_turn_patch(*t, p)?;
    }
    log.save_patch(&patch)?;
    let path = log.path().to_path_buf();
    drop(log);
    let (header, events) = session::read_log(&path)?;
    Ok(Recorded {
        header,
        events: events.into_iter().map(|(_, e)| e).collect(),
        log_path: path,
    })
}

/// Reopen the log for appending.
pub fn reopen_log(r: &Recorded) -> Result<SessionLog, LaunchError> {
    Ok(SessionLog::append_to(&r.log_path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Policy;

    fn recorded(start: Option<&str>, events: Vec<Event>) -> Recorded {
        Recorded {
            header: SessionHeader {
                lilypad: "test".into(),
                session_id: "s".into(),
                created: String::new(),
                repo: PathBuf::from("/repo"),
                sandbox: "host".into(),
                engine: "script:x".into(),
                task: "t".into(),
                system_prompt: String::new(),
                policy: start.map(str::to_string),
                harness: String::new(),
                provenance: None,
                parent: None,
                parent_turn: None,
                project_docs: Vec::new(),
            },
            events,
            log_path: PathBuf::from("/nowhere.jsonl"),
        }
    }

    fn changed(policy: ApprovalPolicy) -> Event {
        Event::ApprovalPolicyChanged { policy }
    }

    #[test]
    fn the_last_recorded_policy_is_kept_when_it_is_no_looser_than_the_start() {
        let start = ApprovalPolicy::default();
        let tight = ApprovalPolicy::PRESETS[3];
        let r = recorded(
            Some(&start.spec()),
            vec![changed(ApprovalPolicy::PRESETS[1]), changed(tight)],
        );
        assert_eq!(
            r.policy().unwrap(),
            ResumedPolicy {
                policy: tight,
                declined: None
            }
        );
        assert_eq!(r.policy().unwrap().notice(), None);
        // A log that records no policy: the start's.
        assert_eq!(
            recorded(Some("auto"), Vec::new()).policy().unwrap().policy,
            ApprovalPolicy::all(Policy::Auto)
        );
    }

    #[test]
    fn a_looser_recorded_policy_is_declined_with_a_notice() {
        let auto = ApprovalPolicy::all(Policy::Auto);
        let r = recorded(Some(&ApprovalPolicy::default().spec()), vec![changed(auto)]);
        let resumed = r.policy().unwrap();
        assert_eq!(resumed.policy, ApprovalPolicy::default());
        assert_eq!(resumed.declined, Some(auto));
        let notice = resumed.notice().unwrap_or_default();
        assert!(notice.contains("--approve auto"), "{notice}");
        // Only the looser categories come down.
        let mixed = ApprovalPolicy::default()
            .parse_over("edits=auto,commands=deny")
            .unwrap();
        let r = recorded(
            Some(&ApprovalPolicy::default().spec()),
            vec![changed(mixed)],
        );
        assert_eq!(
            r.policy().unwrap().policy,
            ApprovalPolicy::default()
                .parse_over("commands=deny")
                .unwrap()
        );
        // A later start's policy counts as recorded too (a resume with `--approve`).
        let r = recorded(
            None,
            vec![
                changed(ApprovalPolicy::PRESETS[3]),
                Event::SessionStarted {
                    session_id: "s".into(),
                    model: String::new(),
                    sandbox: String::new(),
                    workdir: String::new(),
                    max_steps: 1,
                    context_limit: 1,
                    approval_policy: Some(auto),
                },
            ],
        );
        assert_eq!(r.policy().unwrap().declined, Some(auto));
    }
}
