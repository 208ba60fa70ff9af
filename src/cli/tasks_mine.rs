//! `lilypad tasks mine REPO`: a repository's history as SWE-bench task lines
//! (`crate::tasks::mine`), the dropped candidates with their reasons beside them, a line per
//! candidate on stderr as it ends, and the counts on stdout.

use super::tasks::MineArgs;
use crate::config::Settings;
use crate::tasks::{self, MineOptions, Mined};
use anyhow::Context;
use std::process::ExitCode;

pub(super) fn run(a: &MineArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let opts = MineOptions {
        repo: a.repo.clone(),
        since: a.since.clone(),
        limit: a.limit,
        jobs: usize::from(a.jobs),
        max_files: a.max_files,
        runner: super::tasks_out::runner(settings, &a.sandbox, &a.test_cmd, a.test_timeout),
        describer: super::tasks_out::describer(a.describe, a.engine.as_ref(), settings)?,
    };
    let (mut out, mut rejects, rejects_path) = super::tasks_out::create(&a.out)?;
    let progress = |m: &Mined| super::tasks_out::progress(m, |r| &r.detail);
    let rt = tokio::runtime::Runtime::new()?;
    let summary = rt
        .block_on(tasks::mine(&opts, &mut out, &mut rejects, &progress))
        .with_context(|| format!("mining {}", a.repo.display()))?;
    println!(
        "{} commits: {} candidates (skipped: {}); {} tasks in {}, {} rejected in {} ({})",
        summary.commits,
        summary.candidates,
        super::tasks_out::counts(&summary.skipped),
        summary.tasks,
        a.out.display(),
        summary.candidates - summary.tasks,
        rejects_path.display(),
        super::tasks_out::counts(&summary.rejected),
    );
    Ok(ExitCode::SUCCESS)
}
