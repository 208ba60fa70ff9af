//! `lilypad tasks mine REPO`: a repository's history as SWE-bench task lines
//! (`crate::tasks::mine`), the dropped candidates with their reasons beside them, a line per
//! candidate on stderr as it ends, and the counts on stdout.

use super::tasks::MineArgs;
use crate::config::Settings;
use crate::sandbox::SandboxKind;
use crate::tasks::{self, MineOptions, Mined, TestRunner};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

pub(super) fn run(a: &MineArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
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
            pool: None,
        },
        describer: match a.describe {
            true => Some(std::sync::Arc::new(
                crate::launch::describe::ModelDescriber::from_settings(
                    a.engine.as_ref(),
                    settings,
                )?,
            ) as _),
            false => None,
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
