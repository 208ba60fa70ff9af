//! `lilypad tasks filter TASKS --attempts K`: the flags, and the plan handed to
//! `crate::headless::filter` (whose attempts are a batch like `lilypad run --tasks`'s, with
//! `run`'s engine and sandbox flags); prints its report.

use super::options::SessionArgs;
use crate::config::Settings;
use crate::headless::filter::{self, FilterPaths, FilterPlan};
use crate::headless::{presets, BatchPlan};
use crate::launch::SessionOptions;
use crate::tasks::filter::{Band, KeepRule, Share, Verdict};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct FilterArgs {
    /// The tasks: lines written by `lilypad tasks mine`
    #[arg(value_name = "TASKS")]
    pub tasks: PathBuf,
    /// Attempts per task (K), each with its own seed and sandbox: a task's solve rate is its
    /// resolved attempts over K
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub attempts: u32,
    /// The solve rates kept: `A<p<B` with < or <= on either side, or `LO..HI` (both ends
    /// kept); rates as decimals or fractions, e.g. `0<p<=1/2`, `0.25..0.75`
    #[arg(long, value_name = "BAND", default_value = "0<p<1")]
    pub keep: Band,
    /// Keep this share (0 to 1) of the tasks no attempt solved too, chosen by --seed (see
    /// docs/tasks.md)
    #[arg(long, value_name = "SHARE")]
    pub keep_unsolved: Option<Share>,
    /// The kept tasks, as the lines were read; beside it FILE's stem `.rates.jsonl` (every
    /// task's solve rate) and `.attempts/` (the attempts, a batch folder) [default:
    /// TASKS's stem `.kept.jsonl`, beside TASKS]
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Attempts run at the same time
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub parallel: usize,
    /// Tries of an attempt that ends in an error, each from scratch [default: 1]
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// In-process engines the attempts are spread over (as `run --replicas`)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub replicas: Option<u16>,
    /// Local clones of the tasks' "owner/name" repositories (DIR/owner/name or
    /// DIR/owner__name) [default: `repo` as a local path]
    #[arg(long, value_name = "DIR")]
    pub repos_dir: Option<PathBuf>,
    /// Record every sampled token with its log-probability: a rollout per attempt (as `run
    /// --rollout`)
    #[arg(long)]
    pub rollout: bool,
    /// Print the attempts' progress as JSON lines
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}

pub(super) fn run(a: &FilterArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let set = filter::read_set(&a.tasks)?;
    let mut settings = settings.clone();
    let mut opts = SessionOptions::from(&a.session);
    let explicit = presets::Explicit {
        attempts: Some(a.attempts),
        max_attempts: a.max_attempts,
        max_steps: opts.max_steps,
        wall_time: opts.wall_time,
        ..Default::default()
    };
    let resolved = presets::apply(None, &explicit, &mut settings, &mut opts);
    let mut header = serde_json::to_value(&resolved)?;
    if let Some(o) = header.as_object_mut() {
        o.insert("filter".into(), a.tasks.display().to_string().into());
        o.insert("keep".into(), a.keep.to_string().into());
    }
    let repo = match &opts.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let kept = a
        .out
        .clone()
        .unwrap_or_else(|| FilterPaths::default_kept(&a.tasks));
    if std::fs::canonicalize(&kept).ok() == std::fs::canonicalize(&a.tasks).ok() {
        anyhow::bail!("-o {} is the tasks file itself: the kept tasks need a file of their own, or the next round has only them to filter", kept.display());
    }
    let base_seed = resolved.base_seed.unwrap_or(0);
    let plan = FilterPlan {
        set,
        rule: KeepRule {
            band: a.keep,
            unsolved: a.keep_unsolved,
            seed: base_seed,
        },
        paths: FilterPaths::beside(&kept),
        batch: BatchPlan {
            // The set's tasks and the attempts folder: `run_filter` puts them in.
            tasks: Vec::new(),
            out: PathBuf::new(),
            default_repo: repo,
            repos_dir: a.repos_dir.clone(),
            image_template: None,
            image_workdir: None,
            attempts: resolved.attempts,
            max_attempts: resolved.max_attempts,
            run_wall_time: resolved.wall_time_given,
            limits: resolved.limits(),
            base_seed,
            parallel: a.parallel,
            replicas: a.replicas.map(usize::from),
            check: None,
            preset: None,
            progress: crate::headless::ProgressMode::choose(a.json),
            header,
            rollout: a.rollout,
            reload_weights: false,
            image_lock: None,
        },
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let s = rt
        .block_on(filter::run_filter(&settings, &opts, plan))
        .with_context(|| format!("filtering {}", a.tasks.display()))?;
    let b = &s.batch;
    eprintln!(
        "{} of {} attempts ran now ({} failed), {} finished earlier",
        b.ran, b.attempts, b.failed, b.skipped
    );
    print!("{}", s.report());
    Ok(match s.count(Verdict::Undecided) {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

#[cfg(test)]
mod tests {
    use super::super::args::{Cli, Command};
    use super::super::tasks::{TasksArgs, TasksCommand};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<super::FilterArgs, clap::Error> {
        let cli = Cli::try_parse_from(["lilypad", "tasks", "filter"].iter().chain(args))?;
        match cli.command {
            Some(Command::Tasks(TasksArgs {
                command: TasksCommand::Filter(f),
            })) => Ok(f),
            other => panic!("not tasks filter: {other:?}"),
        }
    }

    #[test]
    fn filter_takes_its_rule_and_the_engine_and_sandbox_flags_of_run() {
        let f = parse(&[
            "m.jsonl",
            "--attempts",
            "8",
            "--keep",
            "0<p<=0.5",
            "--keep-unsolved",
            "0.1",
            "-o",
            "k.jsonl",
            "--parallel",
            "4",
            "--engine",
            "script:s-{attempt}.txt",
            "--sandbox",
            "docker",
            "--image",
            "py:1",
        ])
        .unwrap();
        assert_eq!(f.attempts, 8);
        assert_eq!(f.keep.to_string(), "0 < p <= 0.5");
        assert_eq!(f.keep_unsolved.map(|s| s.get()), Some(0.1));
        assert_eq!(f.out.as_deref(), Some(std::path::Path::new("k.jsonl")));
        assert_eq!(f.session.sandbox.image.as_deref(), Some("py:1"));
        assert!(f.session.engine.is_some());
        let plain = parse(&["m.jsonl", "--attempts", "4"]).unwrap();
        assert_eq!(plain.keep, crate::tasks::filter::Band::default());
        assert!(plain.keep_unsolved.is_none());
        assert!(parse(&["m.jsonl"]).is_err(), "K is required");
        assert!(parse(&["m.jsonl", "--attempts", "0"]).is_err());
        assert!(parse(&["m.jsonl", "--attempts", "4", "--keep", "1<p<0"]).is_err());
        assert!(parse(&["m.jsonl", "--attempts", "4", "--keep-unsolved", "2"]).is_err());
    }
}
