//! `lilypad tasks mutate REPO`: tasks made by putting small bugs into a repository's Python
//! functions (`crate::tasks::mutate`), kept when its own tests catch them, validated in the
//! sandbox `run` would use (the same flags). Writes the tasks and, beside them, the dropped
//! mutants with their reasons.

use super::options::SandboxArgs;
use crate::config::Settings;
use crate::tasks::mutate::{self, MutateOptions};
use crate::tasks::Mined;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct MutateArgs {
    /// The git repository to mutate (at its HEAD); kept mutants are written into it as
    /// commits under refs/lilypad/mutants/
    #[arg(value_name = "REPO")]
    pub repo: PathBuf,
    /// Where to write the tasks (JSONL); the dropped mutants go to OUT.rejects.jsonl beside it
    #[arg(
        short = 'o',
        long = "out",
        value_name = "FILE",
        default_value = "mutants.jsonl"
    )]
    pub out: PathBuf,
    /// Stop once N tasks are kept
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Run at most N mutants
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_mutants: usize,
    /// Mutants validated at the same time, each in its own sandbox
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// The pytest command the test files and the run's options are appended to
    #[arg(long, value_name = "CMD", default_value = "python3 -m pytest")]
    pub test_cmd: String,
    /// Longest one test run may take, in seconds (a mutant's run also stops at ten times the
    /// base run, at least 60 s)
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub test_timeout: u64,
    /// Have the model write each statement as an issue, from the fix's diff (the mutation
    /// undone) and the failing output, told not to reveal the fix (default: the failures)
    #[arg(long)]
    pub describe: bool,
    /// The model that describes: `llama` (default), `script:FILE` or `remote`
    #[arg(long, value_name = "ENGINE", requires = "describe")]
    pub engine: Option<crate::launch::EngineFlag>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

pub(super) fn run(a: &MutateArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let opts = MutateOptions {
        repo: a.repo.clone(),
        limit: a.limit,
        max_mutants: a.max_mutants,
        jobs: usize::from(a.jobs),
        runner: super::tasks_out::runner(settings, &a.sandbox, &a.test_cmd, a.test_timeout),
        describer: super::tasks_out::describer(a.describe, a.engine.as_ref(), settings)?,
    };
    let (mut out, mut rejects, rejects_path) = super::tasks_out::create(&a.out)?;
    let progress = |m: &Mined| super::tasks_out::progress(m, |r| &r.subject);
    let rt = tokio::runtime::Runtime::new()?;
    let s = rt
        .block_on(mutate::mutate(&opts, &mut out, &mut rejects, &progress))
        .with_context(|| format!("mutating {}", a.repo.display()))?;
    println!(
        "{} modules, {} mutants, {} tests passing at HEAD; {} mutants run: {} tasks in {}, {} rejected in {} ({})",
        s.modules,
        s.mutants,
        s.passing,
        s.validated,
        s.tasks,
        a.out.display(),
        s.validated - s.tasks,
        rejects_path.display(),
        super::tasks_out::counts(&s.rejected),
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::args::{Cli, Command};
    use super::super::tasks::{TasksArgs, TasksCommand};
    use super::*;
    use clap::Parser;

    #[test]
    fn mutate_takes_its_flags_and_the_sandbox_flags_of_run() {
        let cli = Cli::try_parse_from([
            "lilypad",
            "tasks",
            "mutate",
            "repo",
            "-o",
            "m.jsonl",
            "--limit",
            "5",
            "--jobs",
            "4",
            "--sandbox",
            "docker",
            "--image",
            "py:1",
        ])
        .unwrap();
        let Some(Command::Tasks(TasksArgs {
            command: TasksCommand::Mutate(m),
        })) = cli.command
        else {
            panic!("not tasks mutate: {:?}", cli.command)
        };
        assert_eq!(m.repo, PathBuf::from("repo"));
        assert_eq!(m.out, PathBuf::from("m.jsonl"));
        assert_eq!((m.limit, m.jobs, m.max_mutants), (Some(5), 4, 500));
        assert_eq!(m.sandbox.image.as_deref(), Some("py:1"));
        assert!(!m.describe && m.engine.is_none());
        assert!(Cli::try_parse_from(["lilypad", "tasks", "mutate", "r", "--jobs", "0"]).is_err());
        // `--engine` names the model that describes: only with `--describe`.
        assert!(
            Cli::try_parse_from(["lilypad", "tasks", "mutate", "r", "--engine", "llama"]).is_err()
        );
        let cli = Cli::try_parse_from([
            "lilypad",
            "tasks",
            "mutate",
            "r",
            "--describe",
            "--engine",
            "script:s.txt",
        ])
        .unwrap();
        let Some(Command::Tasks(TasksArgs {
            command: TasksCommand::Mutate(m),
        })) = cli.command
        else {
            panic!("not tasks mutate: {:?}", cli.command)
        };
        assert!(m.describe && m.engine.is_some());
    }
}
