//! `lilypad bench mine`: validations per hour through `lilypad tasks mine` (its checkouts, its
//! Docker sandboxes, JUnit XML read back) against the same work done by hand: for each
//! candidate, the same checkouts and patches with git, and the same pytest commands in `docker
//! run --rm --network none` on the same image. One at a time on both sides (`--jobs 1`), so
//! the ratio is the harness's overhead, not parallelism.
//!
//! The repository is written here: a package with one function per commit and its test, each
//! commit a candidate whose test goes from failing to passing. The image must run
//! `python3 -m pytest` (`--image`; the bench says so and measures nothing without one).
//!
//! Owns: the repository, the timing of both sides. Does not own: mining (`crate::tasks`).

use super::{Figure, Report};
use crate::sandbox::{SandboxKind, SandboxSettings};
use crate::tasks::{git, history, validate, MineOptions, TestRunner};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TEST_CMD: &str = "python3 -m pytest";

#[derive(Debug, thiserror::Error)]
pub enum MineBenchError {
    #[error("bench mine: {what}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error(transparent)]
    Mine(#[from] crate::tasks::MineError),
    #[error("bench mine: the by-hand run {what} failed: {stderr}")]
    ByHand { what: String, stderr: String },
    #[error("bench mine: mining found {found} tasks of the {expected} the repository holds")]
    Unequal { found: usize, expected: usize },
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> MineBenchError {
    move |source| MineBenchError::Io { what, source }
}

/// The timing of both sides over `candidates` candidates (two test runs each).
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub candidates: usize,
    pub harness_seconds: f64,
    pub by_hand_seconds: f64,
}

impl Outcome {
    fn per_hour(&self, seconds: f64) -> f64 {
        (2 * self.candidates) as f64 * 3600.0 / seconds.max(1e-9)
    }

    pub fn figures(&self) -> Vec<Figure> {
        let (h, b) = (
            self.per_hour(self.harness_seconds),
            self.per_hour(self.by_hand_seconds),
        );
        vec![Figure {
            bench: "mine".into(),
            name: format!(
                "validation runs per hour, {} candidates (over all rounds), one at a time",
                self.candidates
            ),
            value: h,
            unit: "runs/h".into(),
            baseline: "the same checkouts and pytest commands by hand in docker run".into(),
            baseline_value: b,
            ratio: h / b.max(1e-9),
            better: "higher".into(),
            target: Some(0.9),
        }]
    }
}

/// Write the bench repository in `dir` with `n` candidate commits after a root.
fn write_repo(dir: &Path, n: usize) -> Result<(), MineBenchError> {
    std::fs::create_dir_all(dir.join("pkg")).map_err(io("creating the repository"))?;
    std::fs::create_dir_all(dir.join("tests")).map_err(io("creating the repository"))?;
    let g = |args: &[&str]| {
        git::run(
            dir,
            &[
                &["-c", "user.name=bench", "-c", "user.email=bench@lilypad"],
                args,
            ]
            .concat(),
            None,
        )
    };
    g(&["init", "-q"])?;
    let write = |path: &str, text: &str| {
        std::fs::write(dir.join(path), text).map_err(io("writing the repository"))
    };
    write("pkg/__init__.py", "")?;
    write("pkg/calc.py", "")?;
    write("tests/test_calc.py", "import pkg.calc as calc\n")?;
    g(&["add", "-A"])?;
    g(&["commit", "-qm", "Start"])?;
    let (mut code, mut tests) = (String::new(), String::from("import pkg.calc as calc\n"));
    for i in 0..n {
        code.push_str(&format!("\n\ndef f{i}(x):\n    return x + {i}\n"));
        tests.push_str(&format!(
            "\n\ndef test_f{i}():\n    assert calc.f{i}(1) == {}\n",
            i + 1
        ));
        write("pkg/calc.py", &code)?;
        write("tests/test_calc.py", &tests)?;
        g(&["add", "-A"])?;
        g(&["commit", "-qm", &format!("Add f{i}")])?;
    }
    Ok(())
}

/// One candidate by hand: a checkout at its base, the test patch, a run; the gold patch, a run.
fn by_hand(
    repo: &Path,
    c: &history::Candidate,
    image: &str,
    scratch: &Path,
) -> Result<(), MineBenchError> {
    let checkout = scratch.join(&c.commit.short);
    validate::check_out(repo, &checkout, &c.base)?;
    let command = validate::command(TEST_CMD, &c.run_files);
    for (what, patch) in [("test patch", &c.test_patch), ("gold patch", &c.patch)] {
        git::run(
            &checkout,
            &["apply", "--whitespace=nowarn", "-"],
            Some(patch.as_bytes()),
        )?;
        let mount = format!("{}:/repo", checkout.display());
        let out = Command::new("docker")
            .args([
                "run",
                "--rm",
                "--network",
                "none",
                "-v",
                &mount,
                "-w",
                "/repo",
            ])
            .args([image, "sh", "-c", &command])
            .output()
            .map_err(io("starting docker"))?;
        // pytest exits 1 when a test fails (the base run's); only a missing report is a failure.
        if !matches!(out.status.code(), Some(0 | 1)) {
            return Err(MineBenchError::ByHand {
                what: format!("{what} of {}", c.commit.short),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
    }
    Ok(())
}

/// Mine `candidates` commits through the harness and do the same by hand, `rounds` times,
/// the two sides taking turns to go first (so a machine whose load drifts during the bench
/// weighs on both alike); each side's time is its sum over the rounds.
pub async fn run(
    image: &str,
    settings: &SandboxSettings,
    candidates: usize,
    rounds: usize,
) -> Result<Outcome, MineBenchError> {
    let scratch = tempfile::tempdir().map_err(io("a scratch folder"))?;
    let repo = scratch.path().join("repo");
    write_repo(&repo, candidates)?;
    let opts = MineOptions {
        repo: repo.clone(),
        since: None,
        limit: None,
        jobs: 1,
        max_files: 8,
        runner: TestRunner {
            settings: SandboxSettings {
                image: Some(image.to_string()),
                ..settings.clone()
            },
            kind: Some(SandboxKind::Docker),
            test_cmd: TEST_CMD.into(),
            timeout: Duration::from_secs(300),
            pool: None,
            closing: Default::default(),
        },
        describer: None,
    };
    let commits = history::commits(&repo, None)?;
    let found: Vec<history::Candidate> = commits
        .iter()
        .map(|c| history::classify(&repo, c, 8))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let (mut harness_seconds, mut by_hand_seconds) = (0.0, 0.0);
    for round in 0..rounds.max(1) {
        for side in [round % 2, 1 - round % 2] {
            let t = Instant::now();
            if side == 0 {
                let summary =
                    crate::tasks::mine(&opts, &mut std::io::sink(), &mut std::io::sink(), &|_| {})
                        .await?;
                if summary.tasks != candidates {
                    return Err(MineBenchError::Unequal {
                        found: summary.tasks,
                        expected: candidates,
                    });
                }
                harness_seconds += t.elapsed().as_secs_f64();
            } else {
                let hand = scratch.path().join(format!("by-hand-{round}"));
                std::fs::create_dir_all(&hand).map_err(io("a scratch folder"))?;
                for c in &found {
                    by_hand(&repo, c, image, &hand)?;
                }
                by_hand_seconds += t.elapsed().as_secs_f64();
            }
        }
    }
    Ok(Outcome {
        candidates: candidates * rounds.max(1),
        harness_seconds,
        by_hand_seconds,
    })
}

/// The bench as `lilypad bench mine` runs it.
pub(super) fn bench(
    quick: bool,
    settings: &SandboxSettings,
    report: &mut Report,
) -> Result<(), super::suite::BenchError> {
    let Some(image) = settings.image_ref() else {
        report.notes.push(
            "mine: not measured: give --image, an image that runs `python3 -m pytest`".into(),
        );
        return Ok(());
    };
    let (n, rounds) = if quick { (2, 1) } else { (8, 3) };
    eprintln!(
        "bench mine: {n} candidates, {rounds} rounds, through the harness and by hand in {image}..."
    );
    let rt = tokio::runtime::Runtime::new().map_err(super::suite::io("starting the runtime"))?;
    let o = rt.block_on(run(&image, settings, n, rounds))?;
    report.figures.extend(o.figures());
    Ok(())
}
