//! Headless runs: one task or a batch, no interface. Events go to stdout as JSON lines
//! (`--json`) or readable lines; the process exit code says how the task ended; the final
//! patch and a trajectory file are written for each task. Approvals: everything runs without
//! asking inside a Docker or Kubernetes sandbox; on the host, commands are refused unless the
//! user allowed the host explicitly.

pub mod atif;
pub mod attempts;
pub mod batch;
pub mod harbor;
pub mod leaf;
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
pub mod wandb;
pub mod weights;

pub use crate::launch::check::{CheckOutcome, CheckSpec};
pub use crate::launch::RunFacts;
pub use attempts::{attempt_seed, engine_for};
pub use batch::{run_batch, BatchPlan, BatchSummary};
pub use print::render_line;
pub use progress::ProgressMode;
pub use report::pass_at_k;
pub use results::AttemptResult;
pub use sources::{parse_tasks, BatchTask, SourceError};

use crate::config::Settings;
use crate::launch::{self, EngineChoice, SessionOptions};
use crate::protocol::{Event, FinishReason, Op};
use crate::sandbox::SandboxKind;
use crate::session;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// Where a task's patch and trajectory files go.
#[derive(Debug, Clone, Copy)]
pub enum TaskFiles<'a> {
    /// `{id}.patch` and `{id}.trajectory.json` in this folder (default: the session
    /// directory).
    Session(Option<&'a Path>),
    /// Nowhere: the caller records them (a batch's results folder).
    Caller,
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
    /// Where the patch and trajectory go.
    pub files: TaskFiles<'a>,
    /// The engine sequence of this task's conversation (a batch gives each task its own).
    pub sequence: crate::engine::SequenceId,
    /// Run after the agent, in its sandbox.
    pub check: Option<&'a CheckSpec>,
    pub facts: &'a RunFacts,
    /// A session log whose unfinished task this run continues (its patch restored in the
    /// sandbox, its conversation rebuilt, the same log appended to); a log whose task finished
    /// is not continued, and the task starts afresh.
    pub resume: Option<&'a Path>,
    /// Told the session log's path as soon as the log exists.
    pub on_log: Option<&'a (dyn Fn(&Path) + Send + Sync)>,
    /// A Harbor task's verifier, run after the agent (and after `check`) in the same sandbox.
    pub verifier: Option<&'a harbor::HarborTask>,
    /// A PatchEval task's image: the patch is verified in a fresh sandbox from it
    /// ([`patcheval::verify`]).
    pub patch_eval: Option<&'a str>,
    /// Pods created ahead of need (a Kubernetes batch): the sandbox is made on the next one.
    pub pool: Option<&'a crate::sandbox::SandboxPool>,
    /// Record the tokens and write a rollout.
    pub rollout: bool,
    /// The batch task this run is an attempt at (a single task is named by its session id).
    pub instance_id: Option<&'a str>,
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
        files,
        sequence,
        check,
        facts,
        resume,
        on_log,
        verifier,
        patch_eval,
        pool,
        rollout,
        instance_id,
    } = run;
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
    let beginning = match earlier {
        Some(rec) => launch::Beginning::Resumed(Box::new(rec)),
        None => launch::Beginning::New {
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
    if let Some(f) = on_log {
        f(&running.log_path);
    }
    let session_id = running.session_id.clone();
    let dir = launch::session_dir(opts)?;
    let mut events = earlier_events;
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
    // A patch that cannot be exported is the attempt's error, never an empty patch: a result
    // would otherwise say the agent changed nothing.
    let patch = crate::sandbox::workspace::Checkout::of(sandbox.as_ref())
        .export_patch()
        .await;
    let checked = match (check, &patch) {
        (Some(c), Ok(_)) => Some(crate::launch::check::run_check(sandbox.as_ref(), c).await),
        _ => None,
    };
    let verified = match (verifier, &patch) {
        (Some(v), Ok(_)) => Some(harbor::verify(sandbox.as_ref(), v).await),
        _ => None,
    };
    let _ = sandbox.close().await;
    let verified = match (verified, patch_eval, &patch) {
        (None, Some(image), Ok(p)) => {
            Some(patcheval::verify(image, p, spec.kind(), &settings.sandbox).await)
        }
        (v, ..) => v,
    };
    let patch = patch.map_err(launch::LaunchError::PatchExport)?;
    let mut check = checked.transpose()?;
    let verified = verified.transpose()?;
    let reward = verified.as_ref().and_then(|v| v.reward);
    let was_verified = verified.is_some();
    if let Some(v) = verified {
        // A Harbor task passes on its reward (resolved at 1 or more, as Leaf counts), not on
        // the verifier's exit status.
        check = Some(CheckOutcome {
            passed: v.reward.is_some_and(|r| r >= 1.0),
            ..v.run
        });
    }
    let mut traj = session::trajectory(&session_id, &system_prompt, &events);
    let (image, image_digest) = provenance
        .as_ref()
        .map(|p| (p.image.clone(), p.image_digest.clone()))
        .unwrap_or_default();
    traj.provenance = provenance;
    let rollout = match &tokens {
        Some(log) => {
            let turns = log.turns();
            let facts = rollout::RolloutFacts {
                id: rollout::TrajectoryId {
                    instance_id: instance_id.unwrap_or(&session_id).to_string(),
                    attempt: facts.attempt.unwrap_or(1),
                },
                weight_version: traj
                    .provenance
                    .as_ref()
                    .and_then(|p| p.model.as_ref())
                    .and_then(|m| m.sha256.as_ref())
                    .map(|h| format!("sha256:{h}")),
                reward: reward.or_else(|| check.as_ref().map(|c| f64::from(u8::from(c.passed)))),
                stop_reason: serde_json::to_value(finish.0)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| format!("{:?}", finish.0)),
            };
            Some(RolloutFiles {
                rollout: to_json(&rollout::build(&turns, facts))?,
                atif: to_json(&atif::atif(&traj, &turns))?,
            })
        }
        None => None,
    };
    let trajectory = to_json(&traj)?;
    let base = match files {
        TaskFiles::Session(Some(d)) => Some(d.join(&session_id)),
        TaskFiles::Session(None) => Some(dir.join(&session_id)),
        TaskFiles::Caller => None,
    };
    let (patch_path, trajectory_path) = match base {
        Some(base) => {
            let patch_path = base.with_extension("patch");
            let trajectory_path = base.with_extension("trajectory.json");
            results::write_atomic(&patch_path, &patch)?;
            results::write_atomic(&trajectory_path, &trajectory)?;
            if let Some(r) = &rollout {
                results::write_atomic(&base.with_extension("rollout.json"), &r.rollout)?;
                results::write_atomic(&base.with_extension("atif.json"), &r.atif)?;
            }
            (patch_path, trajectory_path)
        }
        None => Default::default(),
    };
    Ok(Outcome {
        session_id,
        reason: finish.0,
        final_answer: finish.1,
        patch,
        patch_path,
        trajectory_path,
        log_path: running.log_path,
        check,
        reward,
        verified: was_verified,
        figures: TaskFigures::of(&events),
        trajectory,
        rollout,
        image,
        image_digest,
    })
}

/// Pretty JSON of a result file; a value that cannot be written is an error, never an empty
/// file.
fn to_json(value: &impl serde::Serialize) -> Result<Vec<u8>, launch::LaunchError> {
    serde_json::to_vec_pretty(value)
        .map_err(|e| launch::LaunchError::Task(format!("writing a result file: {e}")))
}
