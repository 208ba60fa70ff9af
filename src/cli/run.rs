//! `lilypad run`: headless runs of one task (`lilypad run "TASK"`, `-` for stdin, `--task`,
//! `--task-file`) or a batch (`--tasks`),
//! with attempts, a check command and evaluation presets; turns the flags into the plain plans
//! of `crate::headless`.

use super::engine_args::EngineArgs;
use super::run_args::RunArgs;
use crate::config::Settings;
use crate::headless::{self, presets, BatchTask, CheckSpec, EventOutput};
use crate::launch::SessionOptions;
use anyhow::Context;
use std::process::ExitCode;

pub(super) fn run(
    args: &RunArgs,
    settings: &Settings,
    engine: &EngineArgs,
) -> anyhow::Result<ExitCode> {
    if args.preset.as_deref() == Some("list") {
        for (name, p) in presets::all()? {
            println!("{name}: {}", serde_json::to_string(&p)?);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut settings = settings.clone();
    // The attempts of one task (a batch of one) read the instructions as a single run does.
    if args.project_doc || args.tasks.is_none() {
        settings.prompt.project_doc_in_batches = true;
    }
    let mut opts = SessionOptions::from(&args.session);
    let preset = args.preset.as_deref().map(presets::find).transpose()?;
    let explicit = presets::Explicit {
        ctx: engine.ctx,
        max_turn_tokens: engine.max_turn_tokens,
        max_steps: args.session.max_steps,
        wall_time: args.session.wall_time,
        attempts: args.attempts,
        seed: engine.seed,
        max_attempts: args.max_attempts,
    };
    let named = args.preset.as_deref().zip(preset.as_ref());
    let mut resolved = presets::apply(named, &explicit, &mut settings, &mut opts);
    if let Some(target) = &args.wandb {
        settings.wandb.set_target(target)?;
    }
    let kind = opts
        .sandbox
        .kind
        .or(settings.sandbox.kind)
        .unwrap_or(crate::sandbox::SandboxKind::Docker);
    if !args.pull_secret.is_empty() && kind != crate::sandbox::SandboxKind::Kube {
        anyhow::bail!(
            "--pull-secret names a Kubernetes Secret for the pods' image pulls; the {kind} \
             sandbox has no pods (use --sandbox kube, or log the Docker engine in to the \
             registry with `docker login`)"
        );
    }
    let image_lock = super::run_batch::image_lock(args, &mut resolved)?;
    let check = CheckSpec::from_settings(args.check.as_deref(), &settings.sandbox);
    let repo = match &opts.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let tasks = match &args.tasks {
        Some(dir) if headless::harbor::is_task_folder(dir) => {
            Some(headless::harbor::read_tasks(dir)?)
        }
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            match headless::patcheval::is_dataset(&text) {
                true => Some(headless::patcheval::read_tasks(
                    &text,
                    file,
                    args.leaf.as_deref(),
                )?),
                false => Some(headless::parse_tasks(&text, file)?),
            }
        }
        None => None,
    };
    let task_text = || -> anyhow::Result<String> {
        if args.task_arg.as_deref() == Some("-") {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("reading the task from standard input")?;
            if text.trim().is_empty() {
                anyhow::bail!("the task read from standard input is empty");
            }
            return Ok(text);
        }
        match (args.task_arg.as_ref().or(args.task.as_ref()), &args.task_file) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(f)) => {
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))
            }
            (None, None) => anyhow::bail!("give the task (TASK, or - to read it from standard input), --task TEXT, --task-file FILE or --tasks FILE"),
        }
    };
    let tasks = match tasks {
        Some(t) => t,
        // One task, several attempts: a batch of one.
        None if resolved.attempts > 1 => vec![BatchTask::lilypad("task", task_text()?)],
        None => {
            let task = task_text()?;
            let s = headless::single::Single {
                settings: &settings,
                opts: &opts,
                task: &task,
                repo: &repo,
                check: check.as_ref(),
                resolved: &resolved,
                out: args.out.as_deref(),
                rollout: args.rollout,
            };
            return single(args, s);
        }
    };
    super::run_batch::batch(
        args,
        &settings,
        &opts,
        &resolved,
        super::run_batch::Inputs {
            tasks,
            repo,
            check,
            image_lock,
        },
    )
}

/// One task, one attempt: its events on stdout, a summary on stderr.
fn single(args: &RunArgs, s: headless::single::Single<'_>) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let mut stdout = std::io::stdout();
    let events = match args.json {
        true => EventOutput::Json(&mut stdout),
        false => EventOutput::Text(&mut stdout),
    };
    let outcome = rt.block_on(headless::single::run_single(s, events))?;
    eprintln!(
        "session {}: {:?}; patch {} ({} bytes), trajectory {}, log {}",
        outcome.session_id,
        outcome.reason,
        outcome.patch_path.display(),
        outcome.patch.len(),
        outcome.trajectory_path.display(),
        outcome.log_path.display()
    );
    if let Some(path) = &args.output_last_message {
        let answer = outcome.final_answer.clone().unwrap_or_default();
        std::fs::write(path, answer)
            .with_context(|| format!("writing the final answer to {}", path.display()))?;
    }
    if let Some(c) = &outcome.check {
        let status = c
            .exit_code
            .map_or("timed out".into(), |n| format!("exit {n}"));
        let verdict = if c.passed { "passed" } else { "failed" };
        eprintln!(
            "check {verdict} ({status}); its output ended:\n{}",
            c.output_tail
        );
    }
    Ok(ExitCode::from(headless::single::exit_code(&outcome)))
}
