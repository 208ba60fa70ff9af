//! Tasks made by mutation (`lilypad tasks mutate`): small bugs put into the functions of a
//! repository's Python code, kept when its own tests catch them. The repository's modules at
//! HEAD are parsed ([`parse`], tree-sitter's Python grammar) and each function's mutations
//! listed ([`ops`]); the test suite runs once at HEAD and once per mutant in the sandbox
//! ([`check`]); a mutant some of whose tests fail while others pass, and whose failing tests
//! no earlier kept mutant fails exactly, becomes a SWE-bench instance: its base is a commit of
//! the mutant ([`repo`]), its gold patch the mutation undone, its statement the failing tests
//! (with `--describe`, an issue the model writes from the gold patch and the failures, as
//! mining's: `super::statement::Describer`).
//! See docs/tasks.md.
//!
//! Which mutants run, in which order: every function's mutations are ordered by a hash of
//! their place and text (stable from run to run), and the functions likewise; the first
//! mutation of every function comes first, then the second of each, and so on, so a limited
//! run spreads over the code instead of exhausting its first function.
//!
//! Owns: the pipeline ([`mutate`]): listing, ordering, validating `jobs` mutants at once,
//! deduplicating in order, and writing each result as soon as it is known. Does not own: the
//! sandboxes, test runs and JUnit reading (`super::validate`, `super::junit`), or the lines'
//! format (`super::output`).

pub mod check;
pub mod ops;
pub mod parse;
pub mod repo;

use super::output::{RejectLine, RepoName, TaskLine};
use super::statement::{self, Describer};
use super::validate::TestRunner;
use super::{describe, write_line, MineError, Mined};
use futures_util::StreamExt;
use parse::Mutant;
use sha1::{Digest, Sha1};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use thiserror::Error;

/// Why mutation stopped (a dropped mutant is no error: it is a line of the rejects file).
#[derive(Debug, Error)]
pub enum MutateError {
    #[error(transparent)]
    Mine(#[from] MineError),
    #[error(transparent)]
    Git(#[from] super::git::GitError),
    #[error(transparent)]
    Parse(#[from] parse::ParseError),
    #[error("the repository has no pytest modules (test_*.py or *_test.py) at {0}")]
    NoTests(String),
    #[error("the test suite does not run at {base}: {why}")]
    BaseDoesNotRun { base: String, why: String },
    #[error("no test passes at {0}: a mutant could break none")]
    NothingPasses(String),
}

/// What to mutate and how.
#[derive(Debug, Clone)]
pub struct MutateOptions {
    pub repo: PathBuf,
    /// Stop once this many tasks are kept.
    pub limit: Option<usize>,
    /// Validate at most this many mutants.
    pub max_mutants: usize,
    /// Mutants validated at once.
    pub jobs: usize,
    /// The runner; its timeout bounds each run (a mutant's run is also bounded by ten times
    /// the base run, at least a minute: a mutant can loop forever).
    pub runner: TestRunner,
    /// Writes the problem statements (`--describe`); `None`: the failing tests alone.
    pub describer: Option<std::sync::Arc<dyn Describer>>,
}

/// What a mutation run did, by count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MutateSummary {
    /// Python modules parsed.
    pub modules: usize,
    /// Mutants found in their functions.
    pub mutants: usize,
    /// Tests passing at the base.
    pub passing: usize,
    /// Mutants run.
    pub validated: usize,
    pub tasks: usize,
    /// Dropped mutants, by [`check::Rejection::code`].
    pub rejected: BTreeMap<&'static str, usize>,
}

/// A listed mutant and its module's text.
struct Listed {
    mutant: Mutant,
    source: std::sync::Arc<String>,
    hash: String,
}

/// Mutate `opts.repo` at HEAD into `tasks` and `rejects` (one JSON line each), telling
/// `progress` of each mutant's end.
pub async fn mutate(
    opts: &MutateOptions,
    tasks: &mut dyn Write,
    rejects: &mut dyn Write,
    progress: &(dyn Fn(&Mined) + Sync),
) -> Result<MutateSummary, MutateError> {
    let result = mutate_all(opts, tasks, rejects, progress).await;
    // Every run's sandbox is gone before the command ends, whatever happened.
    opts.runner.closing.wait().await;
    result
}

async fn mutate_all(
    opts: &MutateOptions,
    tasks: &mut dyn Write,
    rejects: &mut dyn Write,
    progress: &(dyn Fn(&Mined) + Sync),
) -> Result<MutateSummary, MutateError> {
    let repo = opts.repo.clone();
    let (base, files, listed, modules) = tokio::task::spawn_blocking(move || {
        let base = repo::resolve(&repo, "HEAD")?;
        let files = repo::files(&repo, &base)?;
        let sources = repo::sources(&files);
        let mut listed = Vec::new();
        for path in &sources {
            let Some(text) = repo::read(&repo, &base, path)? else {
                continue;
            };
            let text = std::sync::Arc::new(text);
            for mutant in parse::mutants(path, &text)? {
                let hash = hash_of(&mutant);
                listed.push(Listed {
                    mutant,
                    source: text.clone(),
                    hash,
                });
            }
        }
        Ok::<_, MutateError>((base, files, listed, sources.len()))
    })
    .await
    .map_err(MineError::from)??;
    let tests = repo::test_modules(&files);
    if tests.is_empty() {
        return Err(MutateError::NoTests(base));
    }
    let baseline = match check::baseline(&opts.repo, &base, &tests, &opts.runner).await? {
        Ok(b) => b,
        Err(why) => return Err(MutateError::BaseDoesNotRun { base, why }),
    };
    if baseline.passing.is_empty() {
        return Err(MutateError::NothingPasses(base));
    }
    let mut summary = MutateSummary {
        modules,
        mutants: listed.len(),
        passing: baseline.passing.len(),
        ..Default::default()
    };
    let mut order = ordered(listed);
    order.truncate(opts.max_mutants);
    let bound = Duration::from_secs_f64((baseline.seconds * 10.0).max(60.0));
    let runner = TestRunner {
        timeout: opts.runner.timeout.min(bound),
        ..opts.runner.clone()
    };
    let name = RepoName::of(&opts.repo);
    let created_at = repo::date(&opts.repo, &base)?;
    let done = AtomicBool::new(false);
    let (runner, tests, baseline, base_ref, done_ref) = (&runner, &tests, &baseline, &base, &done);
    let mut results = futures_util::stream::iter(order.iter())
        .map(|l| async move {
            if done_ref.load(Ordering::SeqCst) {
                return Ok::<_, MineError>(None);
            }
            let text = ops::apply(&l.source, &l.mutant.mutation);
            let v = check::check(
                &opts.repo,
                base_ref,
                (&l.mutant.path, &text),
                tests,
                baseline,
                runner,
            )
            .await?;
            Ok(Some((l, text, v)))
        })
        .buffered(opts.jobs.max(1));
    let mut seen: HashMap<Vec<String>, String> = HashMap::new();
    while let Some(result) = results.next().await {
        let Some((l, text, v)) = result? else {
            continue;
        };
        if done.load(Ordering::SeqCst) {
            continue;
        }
        summary.validated += 1;
        let instance_id = name.instance_id(&format!("mut-{}", l.hash));
        let verdict = v.and_then(|k| match seen.get(&k.failing) {
            Some(of) => Err(check::Rejection::Duplicate { of: of.clone() }),
            None => Ok(k),
        });
        let mined = match verdict {
            Ok(k) => {
                seen.insert(k.failing.clone(), instance_id.clone());
                let (r, b, p, id) = (
                    opts.repo.clone(),
                    base.clone(),
                    l.mutant.path.clone(),
                    instance_id.clone(),
                );
                let (commit, patch) = tokio::task::spawn_blocking(move || {
                    let commit = repo::commit_mutant(&r, &b, &p, &text, &id)?;
                    let patch = repo::gold_patch(&r, &commit, &b, &p)?;
                    Ok::<_, super::git::GitError>((commit, patch))
                })
                .await
                .map_err(MineError::from)??;
                let problem_statement = match &opts.describer {
                    None => plain_statement(&k),
                    // What mining shows its model, less the commit message a mutant has not:
                    // the fix's diff and the failures; never the operator or its place.
                    Some(d) => {
                        let evidence = statement::Evidence {
                            message: None,
                            patch: patch.clone(),
                            failing: statement::failures(&k.failing, &k.report),
                        };
                        describe(d.clone(), &instance_id, evidence).await?
                    }
                };
                summary.tasks += 1;
                Mined::Task(Box::new(TaskLine {
                    instance_id,
                    repo: name.repo.clone(),
                    base_commit: commit.clone(),
                    patch,
                    test_patch: String::new(),
                    problem_statement,
                    fail_to_pass: serde_json::to_string(&k.failing).map_err(MineError::from)?,
                    pass_to_pass: serde_json::to_string(&k.passing).map_err(MineError::from)?,
                    created_at: created_at.clone(),
                    environment_setup_commit: commit,
                    image_name: k.image,
                    test_cmd: opts.runner.test_cmd.clone(),
                }))
            }
            Err(r) => {
                *summary.rejected.entry(r.code()).or_default() += 1;
                Mined::Rejected(RejectLine {
                    instance_id,
                    commit: base.clone(),
                    base_commit: base.clone(),
                    subject: l.mutant.describe(&l.source),
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
        if opts.limit.is_some_and(|n| summary.tasks >= n) {
            done.store(true, Ordering::SeqCst);
        }
    }
    Ok(summary)
}

/// A mutant's task statement: the failing tests and what pytest said, never the mutation.
fn plain_statement(k: &check::Kept) -> String {
    let mut out = String::from(
        "Some of the test suite fails: the code it tests has a bug. Fix the code, not the tests.",
    );
    out.push_str(&statement::failures(&k.failing, &k.report));
    out
}

/// Ten hex digits of a hash of the mutant's module, range and replacement (stable from run
/// to run: the instance id's suffix and the ordering key).
fn hash_of(m: &Mutant) -> String {
    let mut h = Sha1::new();
    let r = &m.mutation;
    h.update(format!("{}\0{}\0{}\0{}", m.path, r.start, r.end, r.replacement).as_bytes());
    let digest = h.finalize();
    digest.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// `listed` in the order they are run (see the module docs); the same mutation twice (two
/// operators making one text) once.
fn ordered(listed: Vec<Listed>) -> Vec<Listed> {
    let mut by_function: BTreeMap<String, Vec<Listed>> = BTreeMap::new();
    let mut once = std::collections::HashSet::new();
    for l in listed {
        if once.insert(l.hash.clone()) {
            let key = format!("{}\0{}", l.mutant.path, l.mutant.function);
            by_function.entry(key).or_default().push(l);
        }
    }
    let mut functions: Vec<(String, Vec<Listed>)> = by_function
        .into_iter()
        .map(|(key, mut ms)| {
            ms.sort_by(|a, b| a.hash.cmp(&b.hash));
            ms.reverse(); // popped from the end: the smallest hash first
            let mut h = Sha1::new();
            h.update(key.as_bytes());
            let k: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
            (k, ms)
        })
        .collect();
    functions.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for (_, ms) in functions.iter_mut() {
            if let Some(m) = ms.pop() {
                out.push(m);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn listed(src: &str) -> Vec<Listed> {
        let text = std::sync::Arc::new(src.to_string());
        parse::mutants("m.py", src)
            .unwrap()
            .into_iter()
            .map(|mutant| Listed {
                hash: hash_of(&mutant),
                mutant,
                source: text.clone(),
            })
            .collect()
    }

    #[test]
    fn every_function_comes_before_any_function_s_second_mutant() {
        let src = "def a(x):\n    return x + 1 + 2 + 3\n\n\ndef b(x):\n    return x < 4\n\n\n\
                   def c(x):\n    if x:\n        return 5\n    return 6\n";
        let all = listed(src);
        let total = all.len();
        let order = ordered(all);
        assert_eq!(order.len(), total);
        let first: BTreeSet<&str> = order[..3]
            .iter()
            .map(|l| l.mutant.function.as_str())
            .collect();
        assert_eq!(first, BTreeSet::from(["a", "b", "c"]));
        // The same order every time, and ids of ten hex digits.
        let again: Vec<String> = ordered(listed(src)).into_iter().map(|l| l.hash).collect();
        let hashes: Vec<String> = order.iter().map(|l| l.hash.clone()).collect();
        assert_eq!(hashes, again);
        assert!(hashes
            .iter()
            .all(|h| h.len() == 10 && h.chars().all(|c| c.is_ascii_hexdigit())));
    }
}
