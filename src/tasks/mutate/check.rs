//! A mutant's validation in the sandbox: the whole test suite (every pytest module of the
//! repository) runs once at the base ([`baseline`]), then once per mutant on a fresh checkout
//! of the base with the mutated module written ([`check`]), each in a fresh sandbox, the
//! results read from pytest's JUnit XML as mining reads them (`crate::tasks::validate`).
//!
//! Only tests that pass at the base count: a mutant's failing tests are those that pass at
//! the base and not with the mutant (failed, errored, or no longer collected), its passing
//! tests those that pass both times. A mutant is kept when both are non-empty; one whose tests
//! all still pass survives (the tests do not cover its function, or it changes nothing they
//! see), one that fails every test says little about where the bug is.
//!
//! Owns: the runs and the comparison. Does not own: deduplication, which sees the mutants in
//! order (`super`).

use crate::tasks::junit::{Outcome, Report};
use crate::tasks::validate::{check_out, last_lines, run_tests, TestRunner};
use crate::tasks::MineError;
use std::collections::BTreeSet;
use std::path::Path;

/// The test suite at the base.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The tests that pass.
    pub passing: BTreeSet<String>,
    /// Tests that do not pass at the base (left out of every task).
    pub not_passing: usize,
    pub seconds: f64,
}

/// A kept mutant's tests, sorted.
#[derive(Debug, Clone)]
pub struct Kept {
    pub failing: Vec<String>,
    pub passing: Vec<String>,
    /// The mutant's run (the failures the problem statement shows).
    pub report: Report,
    /// The image the sandbox ran.
    pub image: String,
}

/// Why a mutant is dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    /// Every test that passes at the base passes with the mutant too.
    Survives { passing: usize },
    /// No test that passes at the base passes with the mutant.
    AllFail { failing: usize },
    /// The tests did not run (no report, the time limit).
    TestsDoNotRun { why: String },
    /// An earlier kept mutant fails exactly the same tests.
    Duplicate { of: String },
}

impl Rejection {
    /// The reason as one word, for the rejects file.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::Survives { .. } => "survives",
            Rejection::AllFail { .. } => "all_tests_fail",
            Rejection::TestsDoNotRun { .. } => "tests_do_not_run",
            Rejection::Duplicate { .. } => "duplicate",
        }
    }

    /// The reason in words.
    pub fn detail(&self) -> String {
        match self {
            Rejection::Survives { passing } => {
                format!("no test fails: the {passing} passing tests all still pass")
            }
            Rejection::AllFail { failing } => {
                format!("every test fails ({failing}): nothing is left passing")
            }
            Rejection::TestsDoNotRun { why } => format!("the tests do not run: {why}"),
            Rejection::Duplicate { of } => format!("the same tests fail as in {of}"),
        }
    }
}

/// Run the suite's `files` at `base`: the baseline, or why it did not run.
pub async fn baseline(
    repo: &Path,
    base: &str,
    files: &[String],
    runner: &TestRunner,
) -> Result<Result<Baseline, String>, MineError> {
    let (_tmp, checkout) = checkout(repo, base).await?;
    let run = run_tests(&checkout, files, runner).await?;
    let report = match run.report {
        Ok(r) => r,
        Err(why) => return Ok(Err(why)),
    };
    if let Some(e) = report.file_errors.first() {
        return Ok(Err(format!(
            "{} cannot be collected: {}",
            e.file,
            last_lines(&e.text, 3)
        )));
    }
    let outcomes = report.outcomes();
    let passing: BTreeSet<String> = outcomes
        .iter()
        .filter(|(_, o)| **o == Outcome::Passed)
        .map(|(id, _)| id.to_string())
        .collect();
    Ok(Ok(Baseline {
        not_passing: outcomes.len() - passing.len(),
        passing,
        seconds: run.seconds,
    }))
}

/// Run the suite's `files` with `path` holding `text` at `base`, against `baseline`.
pub async fn check(
    repo: &Path,
    base: &str,
    (path, text): (&str, &str),
    files: &[String],
    baseline: &Baseline,
    runner: &TestRunner,
) -> Result<Result<Kept, Rejection>, MineError> {
    let (_tmp, checkout) = checkout(repo, base).await?;
    let file = checkout.join(path);
    std::fs::write(&file, text).map_err(|source| MineError::Io {
        what: format!("writing the mutant {}", file.display()),
        source,
    })?;
    let run = run_tests(&checkout, files, runner).await?;
    let report = match run.report {
        Ok(r) => r,
        Err(why) => return Ok(Err(Rejection::TestsDoNotRun { why })),
    };
    let outcomes = report.outcomes();
    let (passing, failing): (Vec<String>, Vec<String>) = baseline
        .passing
        .iter()
        .cloned()
        .partition(|id| outcomes.get(id.as_str()) == Some(&Outcome::Passed));
    if failing.is_empty() {
        return Ok(Err(Rejection::Survives {
            passing: passing.len(),
        }));
    }
    if passing.is_empty() {
        return Ok(Err(Rejection::AllFail {
            failing: failing.len(),
        }));
    }
    Ok(Ok(Kept {
        failing,
        passing,
        report,
        image: run.image,
    }))
}

/// A fresh checkout of `base` in a scratch folder (removed when the guard is dropped).
async fn checkout(
    repo: &Path,
    base: &str,
) -> Result<(tempfile::TempDir, std::path::PathBuf), MineError> {
    let tmp = tempfile::Builder::new()
        .prefix("lilypad-mutate-")
        .tempdir()
        .map_err(|source| MineError::Io {
            what: "a scratch folder".into(),
            source,
        })?;
    let to = tmp.path().join("repo");
    let (from, to2, base) = (repo.to_path_buf(), to.clone(), base.to_string());
    tokio::task::spawn_blocking(move || check_out(&from, &to2, &base)).await??;
    Ok((tmp, to))
}
