//! Headless runs: one task or a batch, no interface. Events go to stdout as JSON lines
//! (`--json`) or readable lines; the process exit code says how the task ended; the final
//! patch and a trajectory file are written for each task. Approvals: everything runs without
//! asking inside a Docker or Kubernetes sandbox; on the host, commands are refused unless the
//! user allowed the host explicitly.

mod batch;
mod print;

pub use batch::{run_batch, BatchTask};
pub use print::render_line;

use crate::agent::{ApprovalPolicy, Policy};
use crate::config::Settings;
use crate::launch::{self, EngineChoice, SessionOptions};
use crate::protocol::{Event, FinishReason, Op};
use crate::sandbox::SandboxKind;
use crate::session::{self, SessionLog};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The policy of a headless run in `kind`.
pub fn headless_policy(kind: SandboxKind, allow_host: bool) -> ApprovalPolicy {
    let mut p = ApprovalPolicy::all(Policy::Auto);
    if kind == SandboxKind::Host && !allow_host {
        p.commands = Policy::Deny;
    }
    p
}

/// What a finished headless task produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub session_id: String,
    pub reason: FinishReason,
    pub final_answer: Option<String>,
    pub patch: Vec<u8>,
    pub patch_path: PathBuf,
    pub trajectory_path: PathBuf,
    pub log_path: PathBuf,
}

/// One headless task: what to run, where, and with which settings.
#[derive(Debug, Clone, Copy)]
pub struct TaskRun<'a> {
    pub settings: &'a Settings,
    pub session: &'a SessionOptions,
    /// The engine the model was built from (recorded in the session header).
    pub choice: &'a EngineChoice,
    /// The task text, sent as the first user message.
    pub task: &'a str,
    pub repo: &'a Path,
    /// Where the patch and trajectory go (default: the session directory).
    pub out_dir: Option<&'a Path>,
    /// The engine sequence of this task's conversation (a batch gives each task its own).
    pub sequence: crate::engine::SequenceId,
}

/// Where a task's events are written while it runs.
pub enum EventOutput<'a> {
    /// Nowhere (a batch task: its trajectory and log record them).
    Quiet,
    /// One JSON object per event, a line each.
    Json(&'a mut (dyn Write + Send)),
    /// Readable lines ([`render_line`]).
    Text(&'a mut (dyn Write + Send)),
}

impl EventOutput<'_> {
    fn write(&mut self, event: &Event) {
        let (w, line) = match self {
            Self::Quiet => return,
            Self::Json(w) => (w, serde_json::to_string(event).unwrap_or_default()),
            Self::Text(w) => (w, render_line(event)),
        };
        if !line.is_empty() {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }
}

/// Run one task to its end with `model`, writing its events to `out`.
pub async fn run_task(
    run: TaskRun<'_>,
    model: std::sync::Arc<crate::engine::TemplatedModel>,
    mut out: EventOutput<'_>,
) -> Result<Outcome, launch::LaunchError> {
    let TaskRun {
        settings,
        session: opts,
        choice,
        task,
        repo,
        out_dir,
        sequence,
    } = run;
    let spec = launch::sandbox_spec(settings, opts, repo, SandboxKind::Docker);
    let sandbox = launch::open_sandbox(&spec).await?;
    if let Some(notice) = launch::image_notice(sandbox.as_ref(), &spec).await {
        eprintln!("warning: {notice}");
    }
    let session_id = session::new_session_id();
    let policy = headless_policy(spec.kind, opts.allow_host);
    let mut config = launch::agent_config(settings, opts, &settings.prompt, policy, &session_id)?;
    config.sequence = sequence;
    let dir = launch::session_dir(opts)?;
    let header = launch::header(&config, &spec, choice, task);
    let system_prompt = config.system_prompt.clone();
    let log = SessionLog::create(&dir, &header)?;
    let mut running = launch::start(model, sandbox.clone(), config, Default::default(), log);
    let _ = running.ops.send(Op::UserMessage {
        text: task.to_string(),
    });
    let mut events = Vec::new();
    let mut finish = (FinishReason::Error, None);
    while let Some(event) = running.events.recv().await {
        out.write(&event);
        if let Event::TaskFinished {
            reason,
            final_answer,
        } = &event
        {
            finish = (*reason, final_answer.clone());
            let _ = running.ops.send(Op::Shutdown);
        }
        events.push(event);
    }
    let _ = running.agent.await;
    let patch = sandbox.export_patch().await.unwrap_or_default();
    let _ = sandbox.close().await;
    let base = match out_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|source| session::SessionError::Write {
                path: d.to_path_buf(),
                source,
            })?;
            d.join(&session_id)
        }
        None => dir.join(&session_id),
    };
    let patch_path = base.with_extension("patch");
    let trajectory_path = base.with_extension("trajectory.json");
    let traj = session::trajectory(&session_id, &system_prompt, &events);
    let write = |p: &Path, bytes: &[u8]| {
        std::fs::write(p, bytes).map_err(|source| session::SessionError::Write {
            path: p.to_path_buf(),
            source,
        })
    };
    write(&patch_path, &patch)?;
    write(
        &trajectory_path,
        serde_json::to_string_pretty(&traj)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(Outcome {
        session_id,
        reason: finish.0,
        final_answer: finish.1,
        patch,
        patch_path,
        trajectory_path,
        log_path: running.log_path,
    })
}
