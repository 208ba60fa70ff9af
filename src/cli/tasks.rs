//! `lilypad tasks`: task sets made from repositories. `tasks mine REPO` writes a repository's
//! history as SWE-bench task lines (`crate::tasks`) and the dropped candidates with their
//! reasons beside them, validating in the sandbox `run` would use (the same flags); `tasks
//! filter` (`super::tasks_filter`) keeps the tasks a model solves sometimes.

use super::options::SandboxArgs;
use crate::config::Settings;
use crate::sandbox::SandboxKind;
use crate::tasks::{self, MineOptions, Mined, TestRunner};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct TasksArgs {
    #[command(subcommand)]
    pub command: TasksCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum TasksCommand {
    /// Mine a repository's history into SWE-bench task lines: each commit that changes code
    /// and tests, validated by running its tests before and after its change in the sandbox.
    Mine(MineArgs),
    /// Attempt every mined task K times with the configured engine, write each task's solve
    /// rate, and keep the tasks solved sometimes but not always (resumable).
    Filter(super::tasks_filter::FilterArgs),
}

#[derive(Debug, clap::Args)]
pub struct MineArgs {
    /// The git repository to mine
    #[arg(value_name = "REPO")]
    pub repo: PathBuf,
    /// Where to write the tasks (JSONL); the dropped candidates go to OUT.rejects.jsonl
    /// beside it (`mined.jsonl` gives `mined.rejects.jsonl`)
    #[arg(
        short = 'o',
        long = "out",
        value_name = "FILE",
        default_value = "mined.jsonl"
    )]
    pub out: PathBuf,
    /// Only commits from this date on (any date git reads, e.g. 2024-01-31)
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// At most N candidates, the newest
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Candidates validated at the same time, each in its own sandboxes
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// The pytest command the test files and the run's options are appended to
    #[arg(long, value_name = "CMD", default_value = "python3 -m pytest")]
    pub test_cmd: String,
    /// The most code files a commit may change to become a task
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_files: usize,
    /// Longest one test run may take, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub test_timeout: u64,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

pub(super) fn run(args: &TasksArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    match &args.command {
        TasksCommand::Mine(a) => mine(a, settings),
        TasksCommand::Filter(a) => super::tasks_filter::run(a, settings),
    }
}

fn mine(a: &MineArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let opts = MineOptions {
        repo: a.repo.clone(),
        since: a.since.clone(),
        limit: a.limit,
        jobs: usize::from(a.jobs),
        max_files: a.max_files,
        runner: TestRunner {
            settings: settings.sandbox.clone(),
            kind: a.sandbox.kind.map(SandboxKind::from),
            test_cmd: a.test_cmd.clone(),
            timeout: Duration::from_secs(a.test_timeout),
        },
    };
    let rejects_path = tasks::rejects_path(&a.out);
    let create = |p: &PathBuf| {
        std::fs::File::create(p)
            .map(std::io::BufWriter::new)
            .with_context(|| format!("creating {}", p.display()))
    };
    let (mut out, mut rejects) = (create(&a.out)?, create(&rejects_path)?);
    let progress = |m: &Mined| match m {
        Mined::Task(t) => eprintln!(
            "task    {}  fail-to-pass {}  pass-to-pass {}",
            t.instance_id,
            t.fail_to_pass().map(|v| v.len()).unwrap_or(0),
            t.pass_to_pass().map(|v| v.len()).unwrap_or(0)
        ),
        Mined::Rejected(r) => eprintln!("reject  {}  {}: {}", r.instance_id, r.reason, r.detail),
    };
    let rt = tokio::runtime::Runtime::new()?;
    let summary = rt
        .block_on(tasks::mine(&opts, &mut out, &mut rejects, &progress))
        .with_context(|| format!("mining {}", a.repo.display()))?;
    let skipped: Vec<String> = summary
        .skipped
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let rejected: Vec<String> = summary
        .rejected
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    println!(
        "{} commits: {} candidates (skipped: {}); {} tasks in {}, {} rejected in {} ({})",
        summary.commits,
        summary.candidates,
        if skipped.is_empty() {
            "none".into()
        } else {
            skipped.join(", ")
        },
        summary.tasks,
        a.out.display(),
        summary.candidates - summary.tasks,
        rejects_path.display(),
        if rejected.is_empty() {
            "none".into()
        } else {
            rejected.join(", ")
        },
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::args::{Cli, Command};
    use super::*;
    use clap::Parser;

    #[test]
    fn mine_takes_its_flags_and_the_sandbox_flags_of_run() {
        let cli = Cli::try_parse_from([
            "lilypad",
            "tasks",
            "mine",
            "repo",
            "-o",
            "t.jsonl",
            "--since",
            "2025-01-01",
            "--limit",
            "5",
            "--jobs",
            "4",
            "--test-cmd",
            "pytest -x",
            "--sandbox",
            "docker",
            "--image",
            "py:1",
        ])
        .unwrap();
        let Some(Command::Tasks(TasksArgs {
            command: TasksCommand::Mine(m),
        })) = cli.command
        else {
            panic!("not tasks mine: {:?}", cli.command)
        };
        assert_eq!(m.repo, PathBuf::from("repo"));
        assert_eq!(m.out, PathBuf::from("t.jsonl"));
        assert_eq!(m.since.as_deref(), Some("2025-01-01"));
        assert_eq!((m.limit, m.jobs), (Some(5), 4));
        assert_eq!(m.test_cmd, "pytest -x");
        assert_eq!(m.sandbox.image.as_deref(), Some("py:1"));
        assert!(Cli::try_parse_from(["lilypad", "tasks", "mine", "r", "--jobs", "0"]).is_err());
        assert_eq!(
            tasks::rejects_path(&m.out),
            PathBuf::from("t.rejects.jsonl")
        );
    }
}
