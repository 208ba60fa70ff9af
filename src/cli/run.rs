//! `lilypad run`: headless runs of one task (`lilypad run "TASK"`, `-` for stdin, `--task`,
//! `--task-file`) or a batch (`--tasks`),
//! with attempts, a check command and evaluation presets; turns the flags into the plain plans
//! of `crate::headless`.

use super::options::{EngineArgs, SessionArgs};
use crate::config::Settings;
use crate::headless::{self, presets, BatchPlan, BatchTask, CheckSpec, EventOutput, TaskRun};
use crate::launch::{self, EngineChoice, SessionOptions};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code of a single run whose agent answered but whose check failed.
const CHECK_FAILED: u8 = 7;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task text; `-` reads it from standard input
    #[arg(value_name = "TASK", conflicts_with_all = ["task", "task_file", "tasks"])]
    pub task_arg: Option<String>,
    /// The task text
    #[arg(long, conflicts_with_all = ["task_file", "tasks"])]
    pub task: Option<String>,
    /// Read the task from a file
    #[arg(long, conflicts_with = "tasks")]
    pub task_file: Option<PathBuf>,
    /// Run many tasks: a JSONL file with `instance_id`, `task` (or `problem_statement`) and
    /// optionally `repo` per line, or a SWE-bench file (`repo` "owner/name", `base_commit`)
    /// with --repos-dir, a folder of Harbor tasks, or PatchEval's dataset file
    /// (`patcheval_verified.json`)
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Log the batch to Weights & Biases as Leaf does (Leaf's metrics, results.jsonl and
    /// summary.json), through the official client (`[wandb]` in the config file for the rest)
    #[arg(long, value_name = "ENTITY/PROJECT")]
    pub wandb: Option<String>,
    /// Your copy of Leaf (a checkout or installed package): PatchEval's task text is then
    /// Leaf's instruction, read from it [default: a wording of Lilypad's own]
    #[arg(long, value_name = "PATH")]
    pub leaf: Option<PathBuf>,
    /// Attempts per task, each with its own seed (--seed plus the attempt number minus 1),
    /// sandbox and engine sequence [default: 1, or the preset's seeds]
    #[arg(long)]
    pub attempts: Option<u32>,
    /// Tries of an attempt that ends in an error (a sandbox or model failure, a verifier
    /// that wrote no reward), each from scratch in a fresh sandbox, inside this batch
    /// [default: 1, or the preset's max_attempts]
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// Attempts run at the same time
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// In-process engines the attempts are spread over, each with its own context: on its own
    /// GPU, or with its share of the CPU threads; an attempt runs on the one with the fewest
    /// attempts running [default: one per GPU device, at most --parallel; one without a GPU]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub replicas: Option<u16>,
    /// Print events (one task) or progress events (a batch) as JSON lines
    #[arg(long)]
    pub json: bool,
    /// Where to write the patch and trajectory (a batch: results/, predictions.jsonl and
    /// report.json) [default for a batch: lilypad-batch]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A command run in each attempt's sandbox after the agent finishes; exit status 0 passes
    /// [default: the config file's `[sandbox] check`]
    #[arg(long)]
    pub check: Option<String>,
    /// Local clones of the tasks' "owner/name" repositories (DIR/owner/name or
    /// DIR/owner__name), each checked out at the task's base_commit
    #[arg(long, value_name = "DIR")]
    pub repos_dir: Option<PathBuf>,
    /// The sandbox image of each task that names none, e.g.
    /// `swebench/sweb.eval.x86_64.{instance}:latest` (`{instance}`: the id as SWE-bench's
    /// image names write it; `{instance_id}`: as it is)
    #[arg(long, value_name = "TEMPLATE")]
    pub image_template: Option<String>,
    /// Where the images of --image-template hold each task's repository; without --repos-dir
    /// the sandbox works there, on the image's own checkout
    #[arg(long, value_name = "DIR", default_value = "/testbed")]
    pub image_workdir: String,
    /// Put this registry (and path) in front of every image that names no registry of its
    /// own, e.g. `mirror.example.com/hub`: `swebench/x:latest` becomes
    /// `mirror.example.com/hub/swebench/x:latest` [default: the config file's `[sandbox]
    /// image_registry`]
    #[arg(long, value_name = "PREFIX")]
    pub image_registry: Option<crate::sandbox::image::reference::RegistryPrefix>,
    /// A Kubernetes Secret the sandbox pods pull their images with (`imagePullSecrets`);
    /// repeat it for several [default: the config file's `[sandbox.kube] pull_secrets`]
    #[arg(long, value_name = "NAME")]
    pub pull_secret: Vec<String>,
    /// Pin every task's image by this digest lock (Leaf's format: image reference to
    /// `name@sha256:<digest>`) before the batch starts; a task the lock does not pin stops the
    /// run. Without FILE: the file the preset names (`image_locks/sweb-v-20260904.json` for
    /// swebench-verified), from the current directory
    #[arg(long, value_name = "FILE", num_args = 0..=1, requires = "tasks")]
    pub image_lock: Option<Option<PathBuf>>,
    /// An evaluation preset (Leaf's): steps, context, per-turn cap, wall time, attempts and
    /// sampling; explicit flags win. `--preset list` prints them
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Record every sampled token with its log-probability and write a rollout per attempt
    /// (`rollout.json` and Harbor's ATIF `trajectory.atif.json` in a batch's attempt folder;
    /// `ID.rollout.json` and `ID.atif.json` beside a single task's trajectory): the in-process
    /// engine, or an endpoint that returns token ids and log-probabilities (`lilypad serve`,
    /// vLLM's `return_token_ids`)
    #[arg(long)]
    pub rollout: bool,
    /// Before each attempt of a batch, load the model file anew when another file has been
    /// renamed over it (a trainer's next round of weights); each attempt records the weights
    /// it ran with
    #[arg(long, requires = "tasks")]
    pub reload_weights: bool,
    /// Write the agent's final answer (its last message) to FILE when a single task ends
    #[arg(long, value_name = "FILE", conflicts_with = "tasks")]
    pub output_last_message: Option<PathBuf>,
    /// Put the project instructions (AGENTS.md files) in every batch task's first message
    /// too [default: the config file's `[prompt] project_doc_in_batches`, else off]
    #[arg(long, conflicts_with = "no_project_doc")]
    pub project_doc: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}

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
    let check = CheckSpec::from_settings(args.check.as_deref(), &settings.sandbox);
    let repo = match &opts.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
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
            return single(
                args,
                &settings,
                &opts,
                &task,
                &repo,
                check.as_ref(),
                &resolved,
                &rt,
            );
        }
    };
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
        header: serde_json::to_value(&resolved)?,
        rollout: args.rollout,
        reload_weights: args.reload_weights,
        image_lock,
    };
    let s = rt.block_on(headless::run_batch(&settings, &opts, plan))?;
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

/// One task, one attempt: its events on stdout.
#[expect(
    clippy::too_many_arguments,
    reason = "the parsed flags, settings and resolved task, each borrowed from the caller"
)]
fn single(
    args: &RunArgs,
    settings: &Settings,
    opts: &SessionOptions,
    task: &str,
    repo: &std::path::Path,
    check: Option<&CheckSpec>,
    resolved: &presets::Resolved,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<ExitCode> {
    let choice = EngineChoice::from_options(opts, settings)?;
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
    let served = matches!(choice, EngineChoice::Remote(_)).then(|| {
        settings
            .remote
            .model_name
            .clone()
            .unwrap_or_else(|| model.describe())
    });
    let facts = headless::RunFacts {
        model: Some(launch::provenance::model_identity(
            &choice,
            matches!(choice, EngineChoice::Llama(_)),
            served,
        )),
        preset: resolved.preset.clone(),
        attempt: None,
        limits: Some(resolved.limits()),
    };
    let mut stdout = std::io::stdout();
    let events = if args.json {
        EventOutput::Json(&mut stdout)
    } else {
        EventOutput::Text(&mut stdout)
    };
    let run = TaskRun {
        settings,
        session: opts,
        choice: &choice,
        task,
        repo,
        check,
        facts: &facts,
        rollout: args.rollout,
        mode: headless::RunMode::Single {
            out: args.out.as_deref(),
        },
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
    if let Some(path) = &args.output_last_message {
        let answer = outcome.final_answer.clone().unwrap_or_default();
        std::fs::write(path, answer)
            .with_context(|| format!("writing the final answer to {}", path.display()))?;
    }
    let mut code = outcome.reason.exit_code();
    if let Some(c) = &outcome.check {
        let status = match c.exit_code {
            Some(n) => format!("exit {n}"),
            None => "timed out".into(),
        };
        let verdict = if c.passed { "passed" } else { "failed" };
        eprintln!(
            "check {verdict} ({status}); its output ended:\n{}",
            c.output_tail
        );
        if !c.passed && code == 0 {
            code = CHECK_FAILED;
        }
    }
    Ok(ExitCode::from(code))
}
