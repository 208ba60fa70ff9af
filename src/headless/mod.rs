//! Headless runs: one task or a batch, no interface. Events go to stdout as JSON lines
//! (`--json`) or readable lines; the process exit code says how the task ended; the final
//! patch and a trajectory file are written for each task. Approvals: everything runs without
//! asking inside a Docker or Kubernetes sandbox; on the host, commands are refused unless the
//! user allowed the host explicitly.

pub mod atif;
pub mod attempts;
pub mod batch;
pub mod filter;
pub mod harbor;
pub mod kind;
pub mod leaf;
pub mod mined;
pub mod patcheval;
pub mod presets;
mod print;
pub mod progress;
pub mod report;
pub mod results;
pub mod rollout;
pub mod single;
pub mod sources;
mod spread;
pub mod task_checkout;
pub mod verify;
pub mod wandb;
pub mod weights;

pub use crate::launch::check::{CheckOutcome, CheckSpec};
pub use crate::launch::RunFacts;
pub use attempts::{attempt_seed, engine_for};
pub use batch::{run_batch, BatchPlan, BatchSummary};
pub use kind::{BatchTask, TaskKind};
pub use print::render_line;
pub use progress::ProgressMode;
pub use report::pass_at_k;
pub use results::AttemptResult;
pub use sources::{parse_tasks, SourceError};
pub use verify::Verification;

use crate::config::Settings;
use crate::launch::{self, EngineChoice, SessionOptions};
use crate::protocol::{Event, FinishReason, Op};
use crate::sandbox::SandboxKind;
use crate::session;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a task ran to no outcome.
#[derive(Debug, Error)]
pub enum TaskError {
    /// The session did not start (or a log to continue could not be read).
    #[error(transparent)]
    Launch(#[from] launch::LaunchError),
    /// The session patch could not be exported when the session ended: what the agent changed
    /// is unknown, which is not the same as nothing.
    #[error("the session patch could not be exported: {0}")]
    PatchExport(#[source] crate::sandbox::SandboxError),
    /// The check or the verifier could not run.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    /// A mined task's tests could not be run to verify the attempt.
    #[error("verifying by the task's tests: {0}")]
    Tests(#[from] crate::tasks::MineError),
    /// A result file that cannot be written as JSON (never written empty).
    #[error("writing a result file: {0}")]
    Json(#[source] serde_json::Error),
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
    /// The check's outcome, when a check was given.
    pub check: Option<CheckOutcome>,
    /// The reward of a Harbor task's verifier.
    pub reward: Option<f64>,
    /// A Harbor task's verifier ran.
    pub verified: bool,
    pub figures: TaskFigures,
    /// The trajectory, as written (pretty JSON).
    pub trajectory: Vec<u8>,
    /// The rollout and the ATIF trajectory (JSON), when the run asked for them.
    pub rollout: Option<RolloutFiles>,
    /// The sandbox's image and its digest, as the session's provenance records them.
    pub image: Option<String>,
    pub image_digest: Option<String>,
}

/// A rollout's two files.
#[derive(Debug, Clone)]
pub struct RolloutFiles {
    /// `rollout.json` ([`rollout::Rollout`]).
    pub rollout: Vec<u8>,
    /// Harbor's ATIF trajectory with the same ids ([`atif::atif`]).
    pub atif: Vec<u8>,
}

/// What a task cost, from its events.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TaskFigures {
    pub steps: u32,
    /// Prompt tokens the engine read (reused ones not counted).
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    /// The context at the last turn.
    pub context_tokens: u64,
}

impl TaskFigures {
    fn of(events: &[Event]) -> Self {
        let mut f = Self::default();
        for e in events {
            if let Event::TurnFinished {
                figures,
                context_tokens,
                ..
            } = e
            {
                f.steps += 1;
                f.prompt_tokens += figures.evaluated_tokens as u64;
                f.generated_tokens += figures.generated_tokens as u64;
                f.context_tokens = *context_tokens as u64;
            }
        }
        f
    }
}

/// One headless task: what to run, where, and with which settings.
#[derive(Clone, Copy)]
pub struct TaskRun<'a> {
    pub settings: &'a Settings,
    pub session: &'a SessionOptions,
    /// The engine the model was built from (recorded in the session header).
    pub choice: &'a EngineChoice,
    /// The task text, sent as the first user message.
    pub task: &'a str,
    pub repo: &'a Path,
    /// Run after the agent, in its sandbox.
    pub check: Option<&'a CheckSpec>,
    pub facts: &'a RunFacts,
    /// Record the tokens and write a rollout.
    pub rollout: bool,
    /// A single task, or an attempt of a batch.
    pub mode: RunMode<'a>,
}

/// Whether a task runs alone or as an attempt of a batch.
#[derive(Clone, Copy)]
pub enum RunMode<'a> {
    /// A single task: `{id}.patch` and `{id}.trajectory.json` (and a rollout's files) are
    /// written in `out` (default: the session directory).
    Single { out: Option<&'a Path> },
    /// An attempt of a batch, whose files the batch records.
    Attempt(AttemptRun<'a>),
}

/// What an attempt of a batch adds to its task.
#[derive(Clone, Copy)]
pub struct AttemptRun<'a> {
    /// The batch task this is an attempt at (a single task is named by its session id).
    pub instance_id: &'a str,
    /// The attempt's number (from 1) and its batch's base seed: the session samples with
    /// [`attempt_seed`]`(base_seed, number)`, as every attempt does.
    pub number: u32,
    pub base_seed: u32,
    /// The engine sequence of the attempt's conversation.
    pub sequence: crate::engine::SequenceId,
    /// How the attempt is verified after the agent, as its task's kind says.
    pub verification: &'a Verification,
    /// A session log whose unfinished task this run continues (its patch restored in the
    /// sandbox, its conversation rebuilt, the same log appended to); a log whose task finished
    /// is not continued, and the task starts afresh.
    pub resume: Option<&'a Path>,
    /// Told the session log's path as soon as the log exists.
    pub on_log: &'a (dyn Fn(&Path) + Send + Sync),
    /// Pods created ahead of need (a Kubernetes batch): the sandbox is made on the next one.
    pub pool: Option<&'a crate::sandbox::SandboxPool>,
}

/// Where a task's events are written while it runs.
pub enum EventOutput<'a> {
    /// Nowhere (a batch task: its trajectory and log record them).
    Quiet,
    /// One JSON object per event, a line each.
    Json(&'a mut (dyn Write + Send)),
    /// Readable lines ([`render_line`]).
    Text(&'a mut (dyn Write + Send)),
    /// Handed to a function (a batch's progress view).
    Observe(&'a mut (dyn FnMut(&Event) + Send)),
}

impl EventOutput<'_> {
    fn write(&mut self, event: &Event) {
        let (w, line) = match self {
            Self::Quiet => return,
            Self::Observe(f) => {
                f(event);
                return;
            }
            Self::Json(w) => (w, serde_json::to_string(event).unwrap_or_default()),
            Self::Text(w) => (w, render_line(event)),
        };
        if !line.is_empty() {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }
}

/// Run one task to its end with `model`, writing its events to `out`: the session started
/// (or an attempt's unfinished one continued), the agent driven to the end of its task, the
/// patch taken, the check and the task's verifier run, and the trajectory (and rollout)
/// made and, for a single task, written.
pub async fn run_task(
    run: TaskRun<'_>,
    model: std::sync::Arc<crate::engine::TemplatedModel>,
    mut out: EventOutput<'_>,
) -> Result<Outcome, TaskError> {
    let TaskRun {
        settings,
        session: opts,
        choice,
        task,
        repo,
        facts,
        rollout,
        mode,
        ..
    } = run;
    let attempt = match mode {
        RunMode::Attempt(a) => Some(a),
        RunMode::Single { .. } => None,
    };
    let sequence = attempt.map_or(crate::engine::SequenceId::DEFAULT, |a| a.sequence);
    let pool = attempt.and_then(|a| a.pool);
    let resume = attempt.and_then(|a| a.resume);
    let tokens = rollout.then(crate::agent::TokenLog::new);
    let spec = launch::sandbox_spec(settings, opts, repo, SandboxKind::Docker);
    // A session log to continue: only while its task has not finished.
    let earlier = match resume {
        Some(path) => {
            let (header, events) = session::read_log(path)?;
            let rec = launch::resume::Recorded {
                header,
                events: events.into_iter().map(|(_, e)| e).collect(),
                log_path: path.to_path_buf(),
            };
            (!rec.finished()).then_some(rec)
        }
        None => None,
    };
    let beginning = match (earlier, attempt) {
        (Some(rec), _) => launch::Beginning::Resumed(Box::new(rec)),
        (None, Some(a)) => launch::Beginning::Attempt {
            task: task.to_string(),
            number: a.number,
            base_seed: a.base_seed,
        },
        (None, None) => launch::Beginning::New {
            task: task.to_string(),
        },
    };
    let report = |step: launch::StartStep| {
        if let launch::StartStep::Image(line) = step {
            eprintln!("sandbox: {line}");
        }
    };
    let started = launch::SessionBuilder::new(settings, opts, choice, spec.clone())
        .answerer(launch::Answerer::Nobody {
            allow_host: opts.allow_host,
        })
        .sequence(sequence)
        .facts(facts.clone())
        .send_task(true)
        .pool(pool)
        .tokens(tokens.clone())
        .progress(&report)
        .start(model, beginning)
        .await?;
    if let Some(notice) = &started.notice {
        eprintln!("warning: {notice}");
    }
    let launch::Started {
        mut running,
        sandbox,
        earlier: earlier_events,
        provenance,
        system_prompt,
        ..
    } = started;
    if let Some(a) = attempt {
        (a.on_log)(&running.log_path);
    }
    let session_id = running.session_id.clone();
    let mut events = earlier_events;
    // The agent, to the end of its task.
    let finish = drive(&mut running, &mut events, &mut out).await;
    // Its patch, the check and the kind's verifier; the sandbox closed.
    let verdict = judge(&run, sandbox.as_ref(), spec.kind()).await?;
    // What it did, as a trajectory and, when asked, a rollout.
    let mut traj = session::trajectory(&session_id, &system_prompt, &events);
    let (image, image_digest) = provenance
        .as_ref()
        .map(|p| (p.image.clone(), p.image_digest.clone()))
        .unwrap_or_default();
    traj.provenance = provenance;
    let rollout = match &tokens {
        Some(log) => {
            let id = rollout::TrajectoryId {
                instance_id: attempt
                    .map_or(&session_id[..], |a| a.instance_id)
                    .to_string(),
                attempt: facts.attempt.unwrap_or(1),
            };
            Some(rollout_files(log, &traj, id, finish.0, &verdict)?)
        }
        None => None,
    };
    let trajectory = to_json(&traj)?;
    let (patch_path, trajectory_path) = match mode {
        RunMode::Single { out } => {
            let dir = match out {
                Some(d) => d.to_path_buf(),
                None => launch::session_dir(opts)?,
            };
            write_files(
                &dir.join(&session_id),
                &verdict.patch,
                &trajectory,
                rollout.as_ref(),
            )?
        }
        RunMode::Attempt(_) => Default::default(),
    };
    Ok(Outcome {
        session_id,
        reason: finish.0,
        final_answer: finish.1,
        patch: verdict.patch,
        patch_path,
        trajectory_path,
        log_path: running.log_path,
        check: verdict.check,
        reward: verdict.reward,
        verified: verdict.verified,
        figures: TaskFigures::of(&events),
        trajectory,
        rollout,
        image,
        image_digest,
    })
}

/// Drive the agent to the end of its task: its events written to `out` and kept in
/// `events`; how the task ended (an error when the agent stopped without saying).
async fn drive(
    running: &mut launch::Running,
    events: &mut Vec<Event>,
    out: &mut EventOutput<'_>,
) -> (FinishReason, Option<String>) {
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
    let _ = (&mut running.agent).await;
    finish
}

/// What the agent's work came to: its patch and how it was judged.
struct Verdict {
    patch: Vec<u8>,
    check: Option<CheckOutcome>,
    reward: Option<f64>,
    /// The task's verifier ran.
    verified: bool,
}

/// Take the session patch, run the check and the task's verifier, and close the sandbox. A
/// patch that cannot be exported is the task's error, never an empty patch: a result would
/// otherwise say the agent changed nothing; nothing is checked or verified then.
async fn judge(
    run: &TaskRun<'_>,
    sandbox: &dyn crate::sandbox::Sandbox,
    kind: SandboxKind,
) -> Result<Verdict, TaskError> {
    let patch = match crate::sandbox::workspace::Checkout::of(sandbox)
        .export_patch()
        .await
    {
        Ok(p) => p,
        Err(e) => {
            verify::close(sandbox).await;
            return Err(TaskError::PatchExport(e));
        }
    };
    let checked = match run.check {
        Some(c) => Some(crate::launch::check::run_check(sandbox, c).await),
        None => None,
    };
    let verification = match run.mode {
        RunMode::Attempt(a) => a.verification,
        RunMode::Single { .. } => &Verification::None,
    };
    let verified = verification
        .run(sandbox, &patch, kind, &run.settings.sandbox)
        .await;
    let check = checked.transpose()?;
    let verified = verified.transpose()?;
    Ok(Verdict {
        patch,
        reward: verified.as_ref().and_then(|v| v.reward),
        verified: verified.is_some(),
        // A verified task passes on its reward, not on its verifier's exit status.
        check: verified.map(verify::Verified::score).or(check),
    })
}

/// A task's rollout and ATIF trajectory from its token log; its reward is the verifier's,
/// else the check's (1 passed, 0 failed).
fn rollout_files(
    log: &crate::agent::TokenLog,
    traj: &session::Trajectory,
    id: rollout::TrajectoryId,
    finish: FinishReason,
    verdict: &Verdict,
) -> Result<RolloutFiles, TaskError> {
    let turns = log.turns();
    let facts = rollout::RolloutFacts {
        id,
        weight_version: traj
            .provenance
            .as_ref()
            .and_then(|p| p.model.as_ref())
            .and_then(|m| m.sha256.as_ref())
            .map(|h| format!("sha256:{h}")),
        reward: verdict.reward.or_else(|| {
            verdict
                .check
                .as_ref()
                .map(|c| f64::from(u8::from(c.passed)))
        }),
        stop_reason: serde_json::to_value(finish)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{finish:?}")),
    };
    Ok(RolloutFiles {
        rollout: to_json(&rollout::build(&turns, facts))?,
        atif: to_json(&atif::atif(traj, &turns))?,
    })
}

/// Write a single task's files beside `base`: its patch, trajectory and rollout; their paths.
fn write_files(
    base: &Path,
    patch: &[u8],
    trajectory: &[u8],
    rollout: Option<&RolloutFiles>,
) -> Result<(PathBuf, PathBuf), TaskError> {
    let patch_path = base.with_extension("patch");
    let trajectory_path = base.with_extension("trajectory.json");
    results::write_atomic(&patch_path, patch)?;
    results::write_atomic(&trajectory_path, trajectory)?;
    if let Some(r) = rollout {
        results::write_atomic(&base.with_extension("rollout.json"), &r.rollout)?;
        results::write_atomic(&base.with_extension("atif.json"), &r.atif)?;
    }
    Ok((patch_path, trajectory_path))
}

/// Pretty JSON of a result file; a value that cannot be written is an error, never an empty
/// file.
fn to_json(value: &impl serde::Serialize) -> Result<Vec<u8>, TaskError> {
    serde_json::to_vec_pretty(value).map_err(TaskError::Json)
}
