//! `lilypad tasks filter`: every mined task attempted K times by the configured engine, each
//! task's solve rate written, and the tasks the rule keeps (`crate::tasks::filter`) written as
//! the lines they were read as. The attempts are a batch like `lilypad run --tasks F
//! --attempts K` ([`super::run_batch`]): the same seeds, sandboxes, verifier, rollouts and
//! crash-safe results, in the folder `OUT.attempts/` beside the kept file, so a filter that was
//! stopped and started again with the same output runs only the attempts that have no result.
//! The solve rates and the kept tasks are made from those recorded results when the batch
//! ends, so they are the same whether the attempts ran in one go or over several.
//!
//! Results recorded by another engine or under other seeds are refused
//! ([`FilterError::OtherRun`]): a filter for a new round of weights needs its own output.
//!
//! Owns: reading the set (mined lines only: they have tests to score an attempt by), the
//! tallies, the files and the report's text. Does not own: running attempts (`super::batch`)
//! or the rule (`crate::tasks::filter`).

use super::batch::{run_batch, BatchError, BatchPlan, BatchSummary};
use super::kind::{BatchTask, TaskKind};
use super::leaf::{judge, Status};
use super::results::{write_atomic, ResultStore};
use super::sources::{parse_tasks, SourceError};
use crate::config::Settings;
use crate::launch::{EngineChoice, LaunchError, SessionOptions};
use crate::session::SessionError;
use crate::tasks::filter::{decide, histogram, render_histogram, KeepRule, SolveRate, Verdict};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a filter stopped.
#[derive(Debug, Error)]
pub enum FilterError {
    #[error("reading {}: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{} holds no task", file.display())]
    NoTasks { file: PathBuf },
    #[error(
        "{} line {line}: task {id} has no tests to score an attempt by (`test_cmd`, \
         `test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`, `repo` and `base_commit`, as `lilypad \
         tasks mine` writes them)",
        file.display()
    )]
    NotMined {
        file: PathBuf,
        line: usize,
        id: String,
    },
    #[error(
        "{}: attempt {attempt} of {id} was run {what}; this filter runs {now}. The attempts \
         of a new round of weights need an output of their own (-o), or remove the folder",
        dir.display()
    )]
    OtherRun {
        dir: PathBuf,
        id: String,
        attempt: u32,
        what: String,
        now: String,
    },
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error(transparent)]
    Write(#[from] SessionError),
    #[error("a solve-rates line: {0}")]
    Json(#[from] serde_json::Error),
}

/// The tasks to filter, with the lines they were read from (written back unchanged).
#[derive(Debug, Clone)]
pub struct MinedSet {
    pub tasks: Vec<BatchTask>,
    /// Each task's line as it was read, in the same order.
    pub lines: Vec<String>,
}

/// Read a file of mined task lines; every task must be a mined one (see [`FilterError`]).
pub fn read_set(file: &Path) -> Result<MinedSet, FilterError> {
    let text = std::fs::read_to_string(file).map_err(|source| FilterError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    let tasks = parse_tasks(&text, file)?;
    // `parse_tasks` reads every line that is not blank, in order.
    let numbered: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    for (t, (n, _)) in tasks.iter().zip(&numbered) {
        if !matches!(t.kind, TaskKind::Mined(_)) {
            return Err(FilterError::NotMined {
                file: file.to_path_buf(),
                line: n + 1,
                id: t.instance_id.clone(),
            });
        }
    }
    if tasks.is_empty() {
        return Err(FilterError::NoTasks {
            file: file.to_path_buf(),
        });
    }
    let lines = numbered.iter().map(|(_, l)| l.to_string()).collect();
    Ok(MinedSet { tasks, lines })
}

/// Where a filter writes: the kept tasks, the solve rates and the attempts' batch folder.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPaths {
    pub kept: PathBuf,
    pub rates: PathBuf,
    pub attempts: PathBuf,
}

impl FilterPaths {
    /// The kept file `kept` and, beside it, `STEM.rates.jsonl` and `STEM.attempts/`
    /// (`kept.jsonl` gives `kept.rates.jsonl` and `kept.attempts/`).
    pub fn beside(kept: &Path) -> Self {
        let stem = kept
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            kept: kept.to_path_buf(),
            rates: kept.with_file_name(format!("{stem}.rates.jsonl")),
            attempts: kept.with_file_name(format!("{stem}.attempts")),
        }
    }

    /// The default kept file of the tasks file `tasks`: `STEM.kept.jsonl` beside it.
    pub fn default_kept(tasks: &Path) -> PathBuf {
        let stem = tasks
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        tasks.with_file_name(format!("{stem}.kept.jsonl"))
    }
}

/// A filter: the set, the rule, where it writes, and the batch its attempts run as (its
/// `tasks` and `out` are the set's and `paths.attempts`; its `attempts` is K).
#[derive(Debug, Clone)]
pub struct FilterPlan {
    pub set: MinedSet,
    pub rule: KeepRule,
    pub paths: FilterPaths,
    pub batch: BatchPlan,
}

/// What a filter found.
#[derive(Debug, Clone)]
pub struct FilterSummary {
    /// Every task's tally and verdict, in the set's order (the solve-rates file).
    pub rates: Vec<SolveRate>,
    /// Attempts per task.
    pub k: u32,
    pub rule: KeepRule,
    pub paths: FilterPaths,
    pub batch: BatchSummary,
}

/// Run the filter's attempts (those without a result), then write the solve rates and the kept
/// tasks; see the module docs.
pub async fn run_filter(
    settings: &Settings,
    opts: &SessionOptions,
    plan: FilterPlan,
) -> Result<FilterSummary, FilterError> {
    let FilterPlan {
        set,
        rule,
        paths,
        mut batch,
    } = plan;
    batch.tasks = set.tasks.clone();
    batch.out = paths.attempts.clone();
    let k = batch.attempts.max(1);
    batch.attempts = k;
    let store = ResultStore::new(&paths.attempts);
    let engine = EngineChoice::from_options(opts, settings)?.label();
    same_run(&store, &set.tasks, k, &engine, batch.base_seed)?;
    let summary = run_batch(settings, opts, batch).await?;
    let mut rates: Vec<SolveRate> = set
        .tasks
        .iter()
        .map(|t| tally(&store, &t.instance_id, k))
        .collect();
    decide(&mut rates, &rule);
    let mut text = String::new();
    for r in &rates {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    write_atomic(&paths.rates, text.as_bytes())?;
    let mut kept = String::new();
    for (r, line) in rates.iter().zip(&set.lines) {
        if r.verdict.kept() {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    write_atomic(&paths.kept, kept.as_bytes())?;
    Ok(FilterSummary {
        rates,
        k,
        rule,
        paths,
        batch: summary,
    })
}

/// Refuse results of another run in the attempts folder: another engine, or another seed for
/// the same attempt (see the module docs).
fn same_run(
    store: &ResultStore,
    tasks: &[BatchTask],
    k: u32,
    engine: &str,
    base_seed: u32,
) -> Result<(), FilterError> {
    for t in tasks {
        for n in 1..=k {
            let Some(r) = store.load(&t.instance_id, n).filter(|r| r.finished()) else {
                continue;
            };
            let seed = super::attempt_seed(base_seed, n);
            let what = if r.model_name_or_path != engine {
                Some((format!("by {}", r.model_name_or_path), engine.to_string()))
            } else if r.seed != seed {
                Some((
                    format!("with seed {}", r.seed),
                    format!("it with seed {seed} (--seed {base_seed})"),
                ))
            } else {
                None
            };
            if let Some((what, now)) = what {
                return Err(FilterError::OtherRun {
                    dir: store.dir(&t.instance_id, n),
                    id: t.instance_id.clone(),
                    attempt: n,
                    what,
                    now,
                });
            }
        }
    }
    Ok(())
}

/// A task's tally over attempts 1 to `k` as recorded: completed attempts (resolved when their
/// reward is at least 1, as Leaf scores them), and errors (an attempt with no result counts as
/// one).
fn tally(store: &ResultStore, id: &str, k: u32) -> SolveRate {
    let (mut attempts, mut resolved, mut errors) = (0, 0, 0);
    for n in 1..=k {
        match store.load(id, n).map(|r| judge(&r)) {
            Some((Status::Completed, reward, _)) => {
                attempts += 1;
                if reward.is_some_and(|x| x >= 1.0) {
                    resolved += 1;
                }
            }
            Some((Status::Error, ..)) | None => errors += 1,
        }
    }
    SolveRate::new(id, attempts, resolved, errors)
}

impl FilterSummary {
    /// Tasks with the verdict `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.rates.iter().filter(|r| r.verdict == v).count()
    }

    /// The report: the histogram of solve rates, pass@1 and pass@K over the decided tasks,
    /// what was kept and dropped, and where the files are.
    pub fn report(&self) -> String {
        let k = self.k;
        let decided: Vec<&SolveRate> = self.rates.iter().filter(|r| r.decided()).collect();
        let mut s = format!(
            "solve rates of {} tasks, {k} attempts each (resolved/attempts):\n",
            decided.len()
        );
        s.push_str(&render_histogram(&histogram(&self.rates, k), 40));
        let mean_pass = |kk: u64| {
            let v: Vec<f64> = decided
                .iter()
                .filter_map(|r| super::pass_at_k(u64::from(r.attempts), u64::from(r.resolved), kk))
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        if let (Some(p1), Some(pk)) = (mean_pass(1), mean_pass(u64::from(k))) {
            let _ = writeln!(s, "pass@1 {p1:.4}, pass@{k} {pk:.4}");
        }
        let (kept, unsolved, dropped, undecided) = (
            self.count(Verdict::Kept),
            self.count(Verdict::KeptUnsolved),
            self.count(Verdict::Dropped),
            self.count(Verdict::Undecided),
        );
        let _ = write!(
            s,
            "kept {} ({kept} with {}",
            kept + unsolved,
            self.rule.band
        );
        if let Some(share) = self.rule.unsolved {
            let never = decided.iter().filter(|r| r.resolved == 0).count();
            let _ = write!(
                s,
                ", {unsolved} of {never} never solved by share {} and seed {}",
                share.get(),
                self.rule.seed
            );
        }
        let _ = writeln!(s, "), dropped {dropped}");
        if undecided > 0 {
            let _ = writeln!(
                s,
                "undecided {undecided}: an attempt ended in an error (see {}); the same command \
                 run again retries it",
                self.paths.attempts.join("report.md").display()
            );
        }
        let _ = writeln!(
            s,
            "solve rates in {}, kept tasks in {}, attempts in {}",
            self.paths.rates.display(),
            self.paths.kept.display(),
            self.paths.attempts.display()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_sit_beside_the_kept_file() {
        let p = FilterPaths::beside(Path::new("runs/round-2.jsonl"));
        assert_eq!(p.rates, Path::new("runs/round-2.rates.jsonl"));
        assert_eq!(p.attempts, Path::new("runs/round-2.attempts"));
        assert_eq!(
            FilterPaths::default_kept(Path::new("data/mined.jsonl")),
            Path::new("data/mined.kept.jsonl")
        );
    }

    #[test]
    fn a_set_is_read_as_its_lines_and_only_mined_tasks_are_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mined = |id: &str| {
            serde_json::json!({
                "instance_id": id, "repo": "/r", "base_commit": "abc",
                "problem_statement": "fix it", "test_patch": "", "test_cmd": "pytest",
                "FAIL_TO_PASS": "[\"t.py::a\"]", "PASS_TO_PASS": "[]", "extra": [1, 2]
            })
            .to_string()
        };
        let file = dir.path().join("m.jsonl");
        let text = format!("{}\n\n{}\n", mined("a"), mined("b"));
        std::fs::write(&file, &text).unwrap();
        let set = read_set(&file).unwrap();
        assert_eq!(set.lines, [mined("a"), mined("b")]);
        assert_eq!(set.tasks[1].instance_id, "b");
        std::fs::write(
            &file,
            format!("{}\n{{\"instance_id\":\"c\",\"task\":\"t\"}}\n", mined("a")),
        )
        .unwrap();
        let e = read_set(&file).unwrap_err();
        assert!(
            matches!(&e, FilterError::NotMined { line: 2, id, .. } if id == "c"),
            "{e:?}"
        );
        std::fs::write(&file, "\n").unwrap();
        assert!(matches!(read_set(&file), Err(FilterError::NoTasks { .. })));
    }
}
