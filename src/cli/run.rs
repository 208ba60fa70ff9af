//! `lilypad run`: headless runs of one task (`--task`/`--task-file`) or a batch (`--tasks`).

use super::options::SessionArgs;
use crate::config::Settings;
use crate::headless::{self, BatchTask, EventOutput, TaskRun};
use crate::launch::{self, EngineChoice, SessionOptions};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task text
    #[arg(long, conflicts_with_all = ["task_file", "tasks"])]
    pub task: Option<String>,
    /// Read the task from a file
    #[arg(long, conflicts_with = "tasks")]
    pub task_file: Option<PathBuf>,
    /// Run many tasks: a JSONL file with `instance_id`, `task` (or `problem_statement`) and
    /// optionally `repo` per line
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Tasks run at the same time in a batch
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// Print events as JSON lines
    #[arg(long)]
    pub json: bool,
    /// Where to write the patch and trajectory (a batch: predictions.jsonl and trajectories/)
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionArgs,
}

pub(super) fn run(args: &RunArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let opts = SessionOptions::from(&args.session);
    let repo = match &opts.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    if let Some(file) = &args.tasks {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let mut tasks = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let t: BatchTask = serde_json::from_str(line)
                .with_context(|| format!("{} line {}", file.display(), i + 1))?;
            tasks.push(t);
        }
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("lilypad-batch"));
        let n = tasks.len();
        let (good, bad) = rt.block_on(headless::run_batch(
            settings,
            &opts,
            tasks,
            &repo,
            args.parallel,
            &out,
        ))?;
        eprintln!(
            "{good} of {n} tasks ran ({bad} failed); predictions in {}",
            out.join("predictions.jsonl").display()
        );
        return Ok(if bad == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let task = match (&args.task, &args.task_file) {
        (Some(t), _) => t.clone(),
        (None, Some(f)) => {
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?
        }
        (None, None) => anyhow::bail!("give --task TEXT, --task-file FILE or --tasks FILE"),
    };
    let choice = EngineChoice::from_options(&opts, settings)?;
    let kind = opts
        .sandbox
        .kind
        .unwrap_or(crate::sandbox::SandboxKind::Docker);
    if kind == crate::sandbox::SandboxKind::Host {
        let host = crate::sandbox::host::HostSettings {
            uncontained: opts.sandbox.uncontained,
        };
        eprintln!("{}", crate::sandbox::host_notice(&host));
        if !opts.allow_host {
            eprintln!("note: commands are refused on the host in headless runs unless --allow-host is given");
        }
    }
    let model = launch::build_model(&choice, settings, &settings.prompt, |_| {})?;
    let mut stdout = std::io::stdout();
    let events = if args.json {
        EventOutput::Json(&mut stdout)
    } else {
        EventOutput::Text(&mut stdout)
    };
    let run = TaskRun {
        settings,
        session: &opts,
        choice: &choice,
        task: &task,
        repo: &repo,
        out_dir: args.out.as_deref(),
        sequence: crate::engine::SequenceId::DEFAULT,
    };
    let outcome = rt.block_on(headless::run_task(run, model, events))?;
    eprintln!(
        "session {}: {:?}; patch {} ({} bytes), trajectory {}, log {}",
        outcome.session_id,
        outcome.reason,
        outcome.patch_path.display(),
        outcome.patch.len(),
        outcome.trajectory_path.display(),
        outcome.log_path.display()
    );
    Ok(ExitCode::from(outcome.reason.exit_code()))
}
