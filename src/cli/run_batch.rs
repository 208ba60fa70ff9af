//! `lilypad run --tasks` (and a task's attempts, a batch of one): the batch's plan from the
//! flags and the resolved preset, and the summary printed when it ends. The batch itself runs
//! in `crate::headless::run_batch`.

use super::run_args::RunArgs;
use crate::config::Settings;
use crate::headless::{self, presets, BatchPlan, BatchTask, CheckSpec};
use crate::launch::SessionOptions;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// What the batch runs, besides the flags.
pub(super) struct Inputs {
    pub tasks: Vec<BatchTask>,
    /// The repository of tasks that name none.
    pub repo: PathBuf,
    pub check: Option<CheckSpec>,
    pub image_lock: Option<PathBuf>,
}

/// The digest lock `--image-lock [FILE]` names (without FILE: the preset's), recorded in
/// `resolved`; without the flag, a note when the preset has one.
pub(super) fn image_lock(
    args: &RunArgs,
    resolved: &mut presets::Resolved,
) -> anyhow::Result<Option<PathBuf>> {
    let image_lock = match &args.image_lock {
        Some(Some(file)) => Some(file.clone()),
        Some(None) => match &resolved.image_lock {
            Some(name) => Some(PathBuf::from(name)),
            None => anyhow::bail!(
                "--image-lock without a FILE takes the preset's lock, and {}; give the lock's \
                 path",
                args.preset
                    .as_deref()
                    .map_or("no preset was given".to_string(), |p| format!(
                        "preset {p} names none"
                    ))
            ),
        },
        None => {
            if let Some(name) = &resolved.image_lock {
                eprintln!(
                    "note: the preset pins its images with {name}; pass --image-lock [FILE] \
                     to pin them (the images run as the tasks name them)"
                );
            }
            None
        }
    };
    if let Some(l) = &image_lock {
        resolved.image_lock = Some(l.display().to_string());
    }
    Ok(image_lock)
}

/// Run the batch and print its summary; exit 1 when an attempt failed.
pub(super) fn batch(
    args: &RunArgs,
    settings: &Settings,
    opts: &SessionOptions,
    resolved: &presets::Resolved,
    inputs: Inputs,
) -> anyhow::Result<ExitCode> {
    let Inputs {
        tasks,
        repo,
        check,
        image_lock,
    } = inputs;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("lilypad-batch"));
    let plan = BatchPlan {
        tasks,
        default_repo: repo,
        repos_dir: args.repos_dir.clone(),
        image_template: args.image_template.clone(),
        image_workdir: args
            .image_template
            .as_ref()
            .filter(|_| args.repos_dir.is_none())
            .map(|_| args.image_workdir.clone()),
        attempts: resolved.attempts,
        max_attempts: resolved.max_attempts,
        run_wall_time: resolved.wall_time_given,
        limits: resolved.limits(),
        base_seed: resolved.base_seed.unwrap_or(0),
        parallel: args.parallel,
        replicas: args.replicas.map(usize::from),
        out: out.clone(),
        check,
        preset: resolved.preset.clone(),
        progress: headless::ProgressMode::choose(args.json),
        header: serde_json::to_value(resolved)?,
        rollout: args.rollout,
        reload_weights: args.reload_weights,
        image_lock,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let s = rt.block_on(headless::run_batch(settings, opts, plan))?;
    let checks = if s.checked > 0 {
        format!("; checks passed: {} of {}", s.passed, s.checked)
    } else {
        String::new()
    };
    eprintln!(
        "{} of {} attempts ran now ({} failed), {} finished earlier{checks}; predictions in {}, report in {}",
        s.ran,
        s.attempts,
        s.failed,
        s.skipped,
        out.join("predictions.jsonl").display(),
        out.join("report.md").display()
    );
    let l = &s.leaf;
    eprintln!(
        "Leaf's scoring: {} resolved, {} unresolved, {} errors of {} jobs (resolve rate {:.4}, error rate {:.4}, pass@3 {:.4}); {}",
        l.resolved,
        l.unresolved,
        l.jobs_failed,
        l.jobs_total,
        l.resolve_rate,
        l.error_rate,
        l.pass_at_3,
        out.join("summary.json").display()
    );
    Ok(if s.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
