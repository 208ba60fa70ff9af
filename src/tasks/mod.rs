//! Tasks mined from a repository's history (`lilypad tasks mine`): each commit that changes
//! code and tests becomes a candidate at its parent ([`history`]); its tests run in the
//! sandbox at the base with the test patch, then with the gold patch too ([`validate`], the
//! results read from pytest's JUnit XML by [`junit`]); a candidate with a test that goes from
//! failing to passing becomes a SWE-bench instance line ([`output`], its problem statement from
//! [`statement`]), any other a line of the rejects file with its reason. Tasks are also made
//! by mutation (`lilypad tasks mutate`, [`mutate`]): small bugs put into the code, kept when
//! the repository's own tests catch them. See docs/tasks.md.
//!
//! Which mined tasks a training round keeps, by the rate a model solves them at, is
//! [`filter`]'s rule (the attempts themselves run in `crate::headless::filter`).
//!
//! Owns: the pipeline ([`mine`]): listing, classifying, validating `jobs` candidates at once,
//! and writing each result in the history's order as soon as it is known. Does not own: the
//! sandboxes (`crate::sandbox`), the command line (`crate::cli`), or running mined tasks
//! (`crate::headless`, which reads the lines as SWE-bench instances).

pub mod files;
pub mod filter;
pub mod git;
pub mod history;
pub mod junit;
pub mod mutate;
pub mod output;
pub mod score;
pub mod statement;
pub mod validate;

use futures_util::StreamExt;
use output::{RejectLine, RepoName, TaskLine};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;
pub use validate::TestRunner;

/// Why mining stopped (a candidate that is dropped is no error: it is a line of the rejects
/// file).
#[derive(Debug, Error)]
pub enum MineError {
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error("the validation sandbox: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("a validation task: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("writing a line: {0}")]
    Json(#[from] serde_json::Error),
    /// `--describe`'s model failed (no statement is made up in its place).
    #[error("describing the task {task}")]
    Describe {
        task: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// What to mine and how.
#[derive(Debug, Clone)]
pub struct MineOptions {
    pub repo: PathBuf,
    /// Only commits from this date on (any date git reads).
    pub since: Option<String>,
    /// At most this many candidates (the newest).
    pub limit: Option<usize>,
    /// Candidates validated at once.
    pub jobs: usize,
    /// The most code files a candidate's gold patch may change.
    pub max_files: usize,
    pub runner: TestRunner,
    /// Writes the problem statements (`--describe`); `None`: made without a model.
    pub describer: Option<std::sync::Arc<dyn statement::Describer>>,
}

/// What a mining run did, by count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MineSummary {
    pub commits: usize,
    /// Commits that are no candidate, by [`history::Skip::code`].
    pub skipped: BTreeMap<&'static str, usize>,
    pub candidates: usize,
    pub tasks: usize,
    /// Dropped candidates, by [`validate::Rejection::code`].
    pub rejected: BTreeMap<&'static str, usize>,
}

/// One candidate's end, as it is reported.
#[derive(Debug, Clone, PartialEq)]
pub enum Mined {
    Task(Box<TaskLine>),
    Rejected(RejectLine),
}

/// The rejects file beside the tasks file `out`: `out.rejects.jsonl` (`tasks.jsonl` gives
/// `tasks.rejects.jsonl`).
pub fn rejects_path(out: &Path) -> PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!("{stem}.rejects.jsonl"))
}

/// Mine `opts.repo` into `tasks` and `rejects` (one JSON line each, flushed as it is
/// written), telling `progress` of each candidate's end.
pub async fn mine(
    opts: &MineOptions,
    tasks: &mut dyn Write,
    rejects: &mut dyn Write,
    progress: &(dyn Fn(&Mined) + Sync),
) -> Result<MineSummary, MineError> {
    let repo = opts.repo.clone();
    let since = opts.since.clone();
    let max_files = opts.max_files;
    let (commits, sorted) = tokio::task::spawn_blocking(move || {
        let commits = history::commits(&repo, since.as_deref())?;
        let sorted = commits
            .iter()
            .map(|c| history::classify(&repo, c, max_files))
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, git::GitError>((commits.len(), sorted))
    })
    .await??;
    let mut summary = MineSummary {
        commits,
        ..Default::default()
    };
    let mut candidates = Vec::new();
    for s in sorted {
        match s {
            Ok(c) => candidates.push(c),
            Err(skip) => *summary.skipped.entry(skip.code()).or_default() += 1,
        }
    }
    if let Some(n) = opts.limit {
        candidates.truncate(n);
    }
    summary.candidates = candidates.len();
    // On Kubernetes the runs' pods are made ahead, `jobs` at a time, as a batch's are: two
    // runs per candidate at most (pods a rejected candidate did not need are removed).
    let pool = crate::sandbox::SandboxPool::start(
        opts.runner.resolved_kind(),
        &opts.runner.settings,
        &opts.repo,
        opts.jobs.max(1),
        2 * candidates.len(),
    )?
    .map(std::sync::Arc::new);
    let pooled = MineOptions {
        runner: TestRunner {
            pool: pool.clone(),
            ..opts.runner.clone()
        },
        ..opts.clone()
    };
    let mined = write_results(&pooled, &candidates, tasks, rejects, progress, &mut summary).await;
    // Every run's sandbox is gone before the command ends, whatever happened.
    pooled.runner.closing.wait().await;
    drop(pooled);
    if let Some(pool) = pool.and_then(|p| std::sync::Arc::try_unwrap(p).ok()) {
        pool.close().await;
    }
    mined?;
    Ok(summary)
}

/// Validate `candidates`, `jobs` at a time, and write each one's line in their order.
async fn write_results(
    opts: &MineOptions,
    candidates: &[history::Candidate],
    tasks: &mut dyn Write,
    rejects: &mut dyn Write,
    progress: &(dyn Fn(&Mined) + Sync),
    summary: &mut MineSummary,
) -> Result<(), MineError> {
    let mut results = futures_util::stream::iter(candidates.iter())
        .map(|c| async move {
            let v = validate::validate(&opts.repo, c, &opts.runner).await?;
            Ok::<_, MineError>((c, v))
        })
        .buffered(opts.jobs.max(1));
    let name = RepoName::of(&opts.repo);
    while let Some(result) = results.next().await {
        let (c, v) = result?;
        let instance_id = name.instance_id(&c.commit.short);
        let mined = match v {
            Ok(v) => {
                summary.tasks += 1;
                let plain = statement::statement(&c.commit, &v.fail_to_pass, &v.base);
                let problem_statement = match &opts.describer {
                    None => plain,
                    Some(d) => {
                        let evidence = statement::Evidence {
                            message: Some(message_of(&c.commit)),
                            patch: c.patch.clone(),
                            failing: plain,
                        };
                        describe(d.clone(), &instance_id, evidence).await?
                    }
                };
                Mined::Task(Box::new(TaskLine {
                    instance_id,
                    repo: name.repo.clone(),
                    base_commit: c.base.clone(),
                    patch: c.patch.clone(),
                    test_patch: c.test_patch.clone(),
                    problem_statement,
                    fail_to_pass: serde_json::to_string(&v.fail_to_pass)?,
                    pass_to_pass: serde_json::to_string(&v.pass_to_pass)?,
                    created_at: c.commit.created_at.clone(),
                    environment_setup_commit: c.base.clone(),
                    image_name: v.image,
                    test_cmd: opts.runner.test_cmd.clone(),
                }))
            }
            Err(r) => {
                *summary.rejected.entry(r.code()).or_default() += 1;
                Mined::Rejected(RejectLine {
                    instance_id,
                    commit: c.commit.sha.clone(),
                    base_commit: c.base.clone(),
                    subject: c.commit.subject.clone(),
                    reason: r.code().to_string(),
                    detail: r.detail(),
                })
            }
        };
        match &mined {
            Mined::Task(t) => write_line(tasks, "the tasks file", t)?,
            Mined::Rejected(r) => write_line(rejects, "the rejects file", r)?,
        }
        progress(&mined);
    }
    Ok(())
}

/// Write `value` as one JSON line to `file` and flush it.
fn write_line(
    file: &mut dyn Write,
    what: &str,
    value: &impl serde::Serialize,
) -> Result<(), MineError> {
    let line = serde_json::to_string(value)?;
    writeln!(file, "{line}")
        .and_then(|()| file.flush())
        .map_err(|source| MineError::Io {
            what: format!("writing {what}"),
            source,
        })
}

/// A commit's subject, then its body when it has one.
fn message_of(commit: &history::Commit) -> String {
    match commit.body.trim() {
        "" => commit.subject.trim().to_string(),
        body => format!("{}\n\n{body}", commit.subject.trim()),
    }
}

/// `describer`'s statement of the task `task` from `evidence` (on a blocking thread: a model
/// generates); also a mutant's (`mutate`).
async fn describe(
    describer: std::sync::Arc<dyn statement::Describer>,
    task: &str,
    evidence: statement::Evidence,
) -> Result<String, MineError> {
    let written = tokio::task::spawn_blocking(move || describer.describe(&evidence)).await?;
    written.map_err(|source| MineError::Describe {
        task: task.to_string(),
        source,
    })
}
