//! `lilypad run TASK`: one task, one attempt, its events written as it runs, its patch and
//! trajectory beside the session log (or in `--out`).
//!
//! Owns: the engine and the facts the header records for a single run, the host sandbox's
//! warnings, and the exit code of its outcome. Does not own reading the flags or the task
//! (`crate::cli`), or running the task (`super::run_task`).

use super::{presets, run_task, CheckSpec, EventOutput, Outcome, RunFacts, TaskError, TaskRun};
use crate::config::Settings;
use crate::launch::{self, EngineChoice, SessionOptions};
use crate::sandbox::SandboxKind;
use std::path::Path;

/// Exit code of a single run whose agent answered but whose check failed.
pub const CHECK_FAILED: u8 = 7;

/// What one task is run with.
pub struct Single<'a> {
    pub settings: &'a Settings,
    pub opts: &'a SessionOptions,
    pub task: &'a str,
    pub repo: &'a Path,
    pub check: Option<&'a CheckSpec>,
    pub resolved: &'a presets::Resolved,
    /// Where the patch and trajectory go (default: beside the session log).
    pub out: Option<&'a Path>,
    pub rollout: bool,
}

/// Run the task to its end, its events to `events`.
pub async fn run_single(s: Single<'_>, events: EventOutput<'_>) -> Result<Outcome, TaskError> {
    let choice = EngineChoice::from_options(s.opts, s.settings)?;
    if s.opts.sandbox.kind.unwrap_or(SandboxKind::Docker) == SandboxKind::Host {
        let host = crate::sandbox::host::HostSettings {
            uncontained: s.opts.sandbox.uncontained,
        };
        eprintln!("{}", crate::sandbox::host_notice(&host));
        if !s.opts.allow_host {
            eprintln!("note: commands are refused on the host in headless runs unless --allow-host is given");
        }
    }
    let model = launch::build_model(&choice, s.settings, &s.settings.prompt, |_| {})?;
    let served = matches!(choice, EngineChoice::Remote(_)).then(|| {
        s.settings
            .remote
            .model_name
            .clone()
            .unwrap_or_else(|| model.describe())
    });
    let facts = RunFacts {
        model: Some(launch::provenance::model_identity(
            &choice,
            matches!(choice, EngineChoice::Llama(_)),
            served,
        )),
        preset: s.resolved.preset.clone(),
        attempt: None,
        limits: Some(s.resolved.limits()),
    };
    let run = TaskRun {
        settings: s.settings,
        session: s.opts,
        choice: &choice,
        task: s.task,
        repo: s.repo,
        check: s.check,
        facts: &facts,
        rollout: s.rollout,
        mode: super::RunMode::Single { out: s.out },
    };
    run_task(run, model, events).await
}

/// The exit code of a single run: how its task ended, or [`CHECK_FAILED`] when the agent
/// answered and the check failed.
pub fn exit_code(outcome: &Outcome) -> u8 {
    let code = outcome.reason.exit_code();
    match &outcome.check {
        Some(c) if !c.passed && code == 0 => CHECK_FAILED,
        _ => code,
    }
}
