//! `lilypad tasks`: task sets made from repositories. `tasks mine REPO` writes a repository's
//! history as SWE-bench task lines (`crate::tasks`) and the dropped candidates with their
//! reasons beside them, validating in the sandbox `run` would use (the same flags); `tasks
//! filter` (`super::tasks_filter`) keeps the tasks a model solves sometimes.

use super::options::SandboxArgs;
use crate::config::Settings;
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Make tasks by mutation: small bugs put into the repository's Python functions, kept
    /// when some of its tests fail and some pass (`super::tasks_mutate`).
    Mutate(super::tasks_mutate::MutateArgs),
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
    /// Have the model write each statement as an issue, from the fix's diff and the failing
    /// output, told not to reveal the fix (default: the commit message and the failures)
    #[arg(long)]
    pub describe: bool,
    /// The model that describes: `llama` (default), `script:FILE` or `remote`
    #[arg(long, value_name = "ENGINE", requires = "describe")]
    pub engine: Option<crate::launch::EngineFlag>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

pub(super) fn run(args: &TasksArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    match &args.command {
        TasksCommand::Mine(a) => super::tasks_mine::run(a, settings),
        TasksCommand::Mutate(a) => super::tasks_mutate::run(a, settings),
        TasksCommand::Filter(a) => super::tasks_filter::run(a, settings),
    }
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
            crate::tasks::rejects_path(&m.out),
            PathBuf::from("t.rejects.jsonl")
        );
    }
}
