//! The problem statement of a mined task, made without a model: the commit message (its
//! subject and body) and, for each failing-to-passing test, its id and what pytest said when
//! it failed at the base commit (the `E` lines of its traceback, else the failure's message;
//! for a test whose module could not be collected, the import error). It never contains the
//! gold patch: only the author's words and the tests' output before the fix.
//!
//! With `--describe` a [`Describer`] (a model, put together by `crate::launch::describe`)
//! writes the statement instead, from the [`Evidence`]: the diff of the fix and the failing
//! output, told not to reveal the fix.
//!
//! Owns: the statement's text and its caps, and what a describer is given. Does not own: the
//! test runs (`super::validate`), or the model.

use super::history::Commit;
use super::junit::Report;

/// Lines of pytest's output kept per failing test.
const LINES_PER_TEST: usize = 12;
/// Failing tests shown (the rest are counted).
const TESTS_SHOWN: usize = 10;

/// What a describer reads to write a task's statement as an issue would.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// The commit's subject and body; `None` for a mutant (its bug was made, not committed,
    /// and the mutation's own description would name the fix's place).
    pub message: Option<String>,
    /// The gold patch (which the statement must not reveal): a mined commit's code change, or
    /// a mutation undone.
    pub patch: String,
    /// The failing tests and what pytest said of them (a mined task's statement made without
    /// a model, the commit message included; a mutant's failures).
    pub failing: String,
}

/// Writes a task's problem statement (`tasks mine --describe`, `tasks mutate --describe`).
pub trait Describer: Send + Sync + std::fmt::Debug {
    /// The statement for `evidence`; an error says why none was written.
    fn describe(
        &self,
        evidence: &Evidence,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

/// The statement for `commit`, whose `fail_to_pass` tests failed as `base` reports.
pub fn statement(commit: &Commit, fail_to_pass: &[String], base: &Report) -> String {
    let mut out = commit.subject.trim().to_string();
    if !commit.body.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(commit.body.trim());
    }
    out.push_str(&failures(fail_to_pass, base));
    out
}

/// The failing tests' part of a statement: a heading, then each of `fail_to_pass` (the first
/// [`TESTS_SHOWN`]) with what pytest said of it in the run `base` (also the statement of a
/// mutant, `super::mutate`).
pub fn failures(fail_to_pass: &[String], base: &Report) -> String {
    let mut out = String::from("\n\nThese tests fail and should pass once this is done:\n");
    for id in fail_to_pass.iter().take(TESTS_SHOWN) {
        out.push_str(&format!("\n- {id}\n"));
        let said = what_pytest_said(id, base);
        for line in said.lines().take(LINES_PER_TEST) {
            out.push_str(&format!("    {line}\n"));
        }
    }
    if fail_to_pass.len() > TESTS_SHOWN {
        out.push_str(&format!("\n({} more)\n", fail_to_pass.len() - TESTS_SHOWN));
    }
    out
}

/// How test `id` failed at the base: its `E` lines, else the failure's message; the
/// collection error of its module when it did not run.
fn what_pytest_said(id: &str, base: &Report) -> String {
    if let Some(case) = base.case(id) {
        let e = e_lines(&case.text);
        return if e.is_empty() {
            case.message.clone()
        } else {
            e
        };
    }
    let file = id.split("::").next().unwrap_or(id);
    match base.file_errors.iter().find(|f| f.file == file) {
        Some(f) => {
            let e = e_lines(&f.text);
            format!("(its module could not be imported)\n{e}")
        }
        None => "(it did not run)".to_string(),
    }
}

/// pytest's `E   ...` lines of a traceback.
fn e_lines(text: &str) -> String {
    text.lines()
        .filter(|l| l.starts_with("E ") || *l == "E")
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::junit::{FileError, Outcome, TestCase};

    #[test]
    fn the_statement_shows_the_message_and_the_failures() {
        let commit = Commit {
            sha: "a".repeat(40),
            short: "aaaaaaa".into(),
            parents: vec![],
            created_at: String::new(),
            subject: "Fix add".into(),
            body: "It subtracted.".into(),
        };
        let base = Report {
            cases: vec![TestCase {
                id: "tests/test_a.py::test_add".into(),
                outcome: Outcome::Failed,
                message: "assert 0 == 4".into(),
                text: "def test_add():\n>       assert add(2, 2) == 4\nE       assert 0 == 4\nE        +  where 0 = add(2, 2)\n\ntests/test_a.py:6: AssertionError".into(),
            }],
            file_errors: vec![FileError {
                file: "tests/test_b.py".into(),
                text: "Traceback:\nE   ImportError: cannot import name 'mul'".into(),
            }],
        };
        let s = statement(
            &commit,
            &[
                "tests/test_a.py::test_add".into(),
                "tests/test_b.py::test_mul".into(),
            ],
            &base,
        );
        assert_eq!(
            s,
            "Fix add\n\nIt subtracted.\n\nThese tests fail and should pass once this is done:\n\n\
             - tests/test_a.py::test_add\n    E       assert 0 == 4\n    E        +  where 0 = add(2, 2)\n\n\
             - tests/test_b.py::test_mul\n    (its module could not be imported)\n    E   ImportError: cannot import name 'mul'\n"
        );
    }
}
