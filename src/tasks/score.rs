//! Scoring an attempt at a mined task, as SWE-bench does ([`score`]): on a fresh checkout of
//! the base commit, the attempt's patch is applied; every file the test patch touches is put
//! back as it was at the base (an attempt that edits the tests gets no credit from its own
//! tests), then the test patch is applied; the `FAIL_TO_PASS` and `PASS_TO_PASS` tests run in a
//! fresh sandbox, and the attempt resolves the task when every one of them passes.
//!
//! Owns: preparing the checkout and the rule. Does not own: running the agent or recording
//! its reward (`crate::headless`).

use super::git;
use super::junit::Outcome;
use super::validate::{apply, check_out, run_tests, TestRunner};
use super::MineError;
use std::collections::BTreeSet;
use std::path::Path;

/// What a mined task says about its tests.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTests {
    pub test_patch: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
    pub test_cmd: String,
}

/// How an attempt scored.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Every `FAIL_TO_PASS` and `PASS_TO_PASS` test passed.
    pub resolved: bool,
    /// Those that did not pass, or why none ran.
    pub why_not: String,
    /// The test run's exit status (`None`: no run, or timed out).
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    pub output_tail: String,
    pub seconds: f64,
}

impl Scored {
    fn unresolved(why: String) -> Self {
        Self {
            resolved: false,
            why_not: why,
            exit_code: None,
            timed_out: false,
            output_tail: String::new(),
            seconds: 0.0,
        }
    }
}

/// The paths a patch touches (`diff --git a/X b/X` headers).
pub fn patch_files(patch: &str) -> BTreeSet<String> {
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .filter_map(|rest| rest.split_once(" b/").map(|(a, _)| a.to_string()))
        .collect()
}

/// Score `attempt` (a patch from the base commit) at the task `tests` of the repository
/// `clone` at `base_commit` (see the module docs).
pub async fn score(
    clone: &Path,
    base_commit: &str,
    attempt: &[u8],
    tests: &TaskTests,
    runner: &TestRunner,
) -> Result<Scored, MineError> {
    let tmp = tempfile::Builder::new()
        .prefix("lilypad-score-")
        .tempdir()
        .map_err(|source| MineError::Io {
            what: "a scratch folder".into(),
            source,
        })?;
    let checkout = tmp.path().join("repo");
    let (from, to, base) = (
        clone.to_path_buf(),
        checkout.clone(),
        base_commit.to_string(),
    );
    tokio::task::spawn_blocking(move || check_out(&from, &to, &base)).await??;
    if let Err(why) = apply(&checkout, &String::from_utf8_lossy(attempt)).await? {
        return Ok(Scored::unresolved(format!(
            "the attempt's patch does not apply: {why}"
        )));
    }
    let (dir, base, test_patch) = (
        checkout.clone(),
        base_commit.to_string(),
        tests.test_patch.clone(),
    );
    tokio::task::spawn_blocking(move || restore_tests(&dir, &base, &test_patch)).await??;
    if let Err(why) = apply(&checkout, &tests.test_patch).await? {
        return Ok(Scored::unresolved(format!(
            "the test patch does not apply: {why}"
        )));
    }
    let wanted: BTreeSet<&str> = tests
        .fail_to_pass
        .iter()
        .chain(&tests.pass_to_pass)
        .map(String::as_str)
        .collect();
    let files: Vec<String> = wanted
        .iter()
        .map(|id| id.split("::").next().unwrap_or(id).to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let runner = TestRunner {
        test_cmd: tests.test_cmd.clone(),
        ..runner.clone()
    };
    let run = run_tests(&checkout, &files, &runner).await;
    runner.closing.wait().await;
    let run = run?;
    let why_not = match &run.report {
        Err(why) => format!("the tests did not run: {why}"),
        Ok(report) => {
            let outcomes = report.outcomes();
            let failing: Vec<&str> = wanted
                .iter()
                .copied()
                .filter(|id| outcomes.get(id) != Some(&Outcome::Passed))
                .collect();
            failing.join(", ")
        }
    };
    Ok(Scored {
        resolved: why_not.is_empty(),
        why_not,
        exit_code: run.exit_code,
        timed_out: run.exit_code.is_none(),
        output_tail: run.tail,
        seconds: run.seconds,
    })
}

/// Put every file `test_patch` touches back as it is at `base` (removed when it is not there).
fn restore_tests(checkout: &Path, base: &str, test_patch: &str) -> Result<(), MineError> {
    for file in patch_files(test_patch) {
        let at_base = git::run(
            checkout,
            &["cat-file", "-e", &format!("{base}:{file}")],
            None,
        )
        .is_ok();
        if at_base {
            git::run(checkout, &["checkout", base, "--", &file], None)?;
        } else {
            let path = checkout.join(&file);
            if path.exists() {
                std::fs::remove_file(&path).map_err(|source| MineError::Io {
                    what: format!("removing {}", path.display()),
                    source,
                })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_its_files() {
        let p = "diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n\
                 @@ -1 +1 @@\n-x\n+y\ndiff --git a/tests/new.py b/tests/new.py\nnew file mode 100644\n";
        let files: Vec<String> = patch_files(p).into_iter().collect();
        assert_eq!(files, ["tests/new.py", "tests/test_a.py"]);
    }
}
