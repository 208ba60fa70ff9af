//! A candidate's two runs in the sandbox ([`validate`]): its tests at the base commit with the
//! test patch applied, then again with the gold patch as well, each in a fresh sandbox on a
//! checkout made for it; the two JUnit reports become `FAIL_TO_PASS` (passing with the gold
//! patch, not before: failing, erroring, or not collected) and `PASS_TO_PASS` (passing both
//! times), or a [`Rejection`] that says why the candidate is dropped.
//!
//! Only the test patch's pytest modules run, as `TEST_CMD -p no:cacheprovider --rootdir=.
//! --continue-on-collection-errors --junitxml=.git/lilypad-junit.xml FILES...` in the
//! repository's folder (the report's place: [`REPORT_PATH`]): one
//! module that cannot be imported before the fix (the test imports what the fix adds) leaves
//! the others running. pytest's own output goes to the run's standard error and the report is
//! printed on its standard output when pytest ends, so it comes back with the run (one command
//! per run; a report too long to keep is read from the sandbox after). Tests that do not run with the gold patch (no XML, a module that cannot
//! be collected, nothing collected, the time limit) drop the candidate.
//!
//! Owns: the checkouts, the runs and the comparison. Does not own: which commits are
//! candidates (`super::history`) or parsing the XML (`super::junit`).

use super::git::{self, GitError};
use super::history::Candidate;
use super::junit::{Outcome, Report};
use super::MineError;
use crate::sandbox::{ExecExit, ExecRequest, SandboxKind, SandboxSettings};
use std::path::Path;
use std::time::Duration;

/// Where the report is written, relative to the sandbox's root (the folder the tests run in):
/// inside the workspace's own `.git`, which every sandbox kind has (a fresh one Lilypad made,
/// or an adopted repository's) and reads back from its root, the contained host sandbox too,
/// whose `/tmp` is private to its commands. A file there is in no test id, no patch or diff
/// and no turn record (they never include `.git`), and it goes with the sandbox. pytest makes
/// the folder when it is missing.
pub const REPORT_PATH: &str = ".git/lilypad-junit.xml";
/// Bytes of each of a run's streams kept (its last lines are a rejection's reason).
const KEEP_BYTES: usize = 1 << 20;

/// How the tests run: in which sandbox, with which command, for how long.
#[derive(Debug, Clone)]
pub struct TestRunner {
    /// The `[sandbox]` settings with the flags applied (image, Dockerfile, limits, ...).
    pub settings: SandboxSettings,
    /// `--sandbox`, else the settings' kind, else Docker.
    pub kind: Option<SandboxKind>,
    /// The pytest command the run's own options are appended to.
    pub test_cmd: String,
    pub timeout: Duration,
    /// Pods made ahead of need, as a batch's are, when the runs go to Kubernetes
    /// ([`super::mine`] starts it; `None` for the other kinds).
    pub pool: Option<std::sync::Arc<crate::sandbox::SandboxPool>>,
    /// The sandboxes of finished runs, still being removed (shared by the runner's clones).
    pub closing: Closing,
}

/// Sandboxes of finished runs being removed in the background: a run's result does not wait
/// for its container to go (removing one takes a tenth to a third of a second, a good share
/// of a short test run), and [`Closing::wait`] waits for every removal started so far. Whoever
/// makes a runner waits before returning, so that no container outlives the command.
#[derive(Debug, Clone, Default)]
pub struct Closing(std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>);

impl Closing {
    /// Close `sandbox` in the background (on the current runtime).
    fn close(&self, sandbox: std::sync::Arc<dyn crate::sandbox::Sandbox>) {
        let handle = tokio::spawn(async move {
            if let Err(e) = sandbox.close().await {
                tracing::warn!(error = %e, "a test sandbox did not close");
            }
        });
        self.handles().push(handle);
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, Vec<tokio::task::JoinHandle<()>>> {
        // A poisoned lock only means a panic elsewhere mid-push; the list is still valid.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait until every sandbox handed to [`Self::close`] so far is removed.
    pub async fn wait(&self) {
        let handles = std::mem::take(&mut *self.handles());
        for h in handles {
            if let Err(e) = h.await {
                tracing::warn!(error = %e, "removing a test sandbox stopped");
            }
        }
    }
}

impl TestRunner {
    /// The kind the runs go to: `--sandbox`, else the settings' kind, else Docker.
    pub fn resolved_kind(&self) -> SandboxKind {
        self.kind
            .or(self.settings.kind)
            .unwrap_or(SandboxKind::Docker)
    }
}

/// Which of a candidate's two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunName {
    /// The base commit with the test patch.
    Base,
    /// The base commit with the test patch and the gold patch.
    Gold,
}

impl RunName {
    pub fn word(self) -> &'static str {
        match self {
            RunName::Base => "base",
            RunName::Gold => "gold",
        }
    }
}

/// Why a candidate is dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    /// A patch does not apply at the base commit.
    PatchDoesNotApply { patch: &'static str, why: String },
    /// The tests did not run (see the module docs).
    TestsDoNotRun { run: RunName, why: String },
    /// The tests ran, and none went from failing to passing.
    NoFailToPass {
        passing_both: usize,
        failing_with_gold: Vec<String>,
    },
}

impl Rejection {
    /// The reason as one word, for the rejects file.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::PatchDoesNotApply { .. } => "patch_does_not_apply",
            Rejection::TestsDoNotRun { .. } => "tests_do_not_run",
            Rejection::NoFailToPass { .. } => "no_fail_to_pass",
        }
    }

    /// The reason in words.
    pub fn detail(&self) -> String {
        match self {
            Rejection::PatchDoesNotApply { patch, why } => format!("the {patch} does not apply: {why}"),
            Rejection::TestsDoNotRun { run, why } => {
                format!("the tests do not run ({} run): {why}", run.word())
            }
            Rejection::NoFailToPass {
                passing_both,
                failing_with_gold,
            } => format!(
                "no test goes from failing to passing ({passing_both} pass both times; failing with the gold patch: {})",
                if failing_with_gold.is_empty() { "none".to_string() } else { failing_with_gold.join(", ") }
            ),
        }
    }
}

/// A candidate's tests, sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
    /// The base run's report (the failures the problem statement shows).
    pub base: Report,
    /// The image the sandbox ran: the named one, else its digest.
    pub image: String,
}

/// Run `candidate`'s tests twice (see the module docs) on a checkout of `repo`.
pub async fn validate(
    repo: &Path,
    candidate: &Candidate,
    runner: &TestRunner,
) -> Result<Result<Validated, Rejection>, MineError> {
    let tmp = tempfile::Builder::new()
        .prefix("lilypad-mine-")
        .tempdir()
        .map_err(|source| MineError::Io {
            what: "a scratch folder".into(),
            source,
        })?;
    let checkout = tmp.path().join("repo");
    let (from, to) = (repo.to_path_buf(), checkout.clone());
    let base = candidate.base.clone();
    tokio::task::spawn_blocking(move || check_out(&from, &to, &base)).await??;
    if let Err(why) = apply(&checkout, &candidate.test_patch).await? {
        return Ok(Err(Rejection::PatchDoesNotApply {
            patch: "test patch",
            why,
        }));
    }
    let files = &candidate.run_files;
    let (base_run, _) = match run(&checkout, files, runner, RunName::Base).await? {
        Ok(r) => r,
        Err(rejection) => return Ok(Err(rejection)),
    };
    if let Err(why) = apply(&checkout, &candidate.patch).await? {
        return Ok(Err(Rejection::PatchDoesNotApply {
            patch: "gold patch",
            why,
        }));
    }
    let (gold_run, image) = match run(&checkout, files, runner, RunName::Gold).await? {
        Ok(r) => r,
        Err(rejection) => return Ok(Err(rejection)),
    };
    let gold_fails = |why: String| {
        Ok(Err(Rejection::TestsDoNotRun {
            run: RunName::Gold,
            why,
        }))
    };
    if let Some(e) = gold_run.file_errors.first() {
        return gold_fails(format!(
            "{} cannot be collected: {}",
            e.file,
            last_lines(&e.text, 3)
        ));
    }
    if gold_run.cases.is_empty() {
        return gold_fails("no tests were collected".into());
    }
    let before = base_run.outcomes();
    let mut fail_to_pass = Vec::new();
    let mut pass_to_pass = Vec::new();
    let mut failing_with_gold = Vec::new();
    for (id, after) in gold_run.outcomes() {
        match (before.get(id), after) {
            (Some(Outcome::Passed), Outcome::Passed) => pass_to_pass.push(id.to_string()),
            (None | Some(Outcome::Failed | Outcome::Error), Outcome::Passed) => {
                fail_to_pass.push(id.to_string())
            }
            (_, Outcome::Failed | Outcome::Error) => failing_with_gold.push(id.to_string()),
            _ => {}
        }
    }
    if fail_to_pass.is_empty() {
        return Ok(Err(Rejection::NoFailToPass {
            passing_both: pass_to_pass.len(),
            failing_with_gold,
        }));
    }
    Ok(Ok(Validated {
        fail_to_pass,
        pass_to_pass,
        base: base_run,
        image,
    }))
}

/// A shared clone of `repo` at `to`, checked out at `commit` (only the commit's files are
/// written; the objects are borrowed from `repo`, which is only read).
pub fn check_out(repo: &Path, to: &Path, commit: &str) -> Result<(), GitError> {
    // git runs in `to`'s folder, so a relative `repo` is made absolute first (a path that
    // cannot be is left as it is, for git to name in its error).
    let repo = std::path::absolute(repo).unwrap_or_else(|_| repo.to_path_buf());
    let (repo_s, to_s) = (repo.to_string_lossy(), to.to_string_lossy());
    let parent = to.parent().unwrap_or(to);
    git::run(
        parent,
        &["clone", "-q", "--shared", "--no-checkout", &repo_s, &to_s],
        None,
    )?;
    git::run(
        to,
        &[
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "-q",
            "--detach",
            commit,
        ],
        None,
    )?;
    Ok(())
}

/// Apply `patch` to the checkout's files: `Err` with git's words when it does not apply.
pub async fn apply(checkout: &Path, patch: &str) -> Result<Result<(), String>, MineError> {
    if patch.trim().is_empty() {
        return Ok(Ok(()));
    }
    let (dir, patch) = (checkout.to_path_buf(), patch.as_bytes().to_vec());
    let applied = tokio::task::spawn_blocking(move || {
        git::run(&dir, &["apply", "--whitespace=nowarn", "-"], Some(&patch))
    })
    .await?;
    match applied {
        Ok(_) => Ok(Ok(())),
        Err(GitError::Failed { stderr, .. }) => Ok(Err(stderr)),
        Err(e) => Err(e.into()),
    }
}

/// The command of one run over `files`: pytest's output to standard error, then the report
/// (if pytest wrote one) on standard output, and pytest's exit status.
pub fn command(test_cmd: &str, files: &[String]) -> String {
    let quoted: Vec<String> = files.iter().map(|f| shell_quote(f)).collect();
    format!(
        "rm -f {REPORT_PATH}; {{ {test_cmd} -p no:cacheprovider --rootdir=. \
         --continue-on-collection-errors --junitxml={REPORT_PATH} {}; }} 1>&2; s=$?; \
         cat {REPORT_PATH} 2>/dev/null; exit $s",
        quoted.join(" ")
    )
}

/// `s` as one shell word.
fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// One run of the tests in a sandbox.
#[derive(Debug, Clone)]
pub struct TestRun {
    /// The report, or why there is none (no XML, the time limit, XML that cannot be read).
    pub report: Result<Report, String>,
    /// The image the sandbox ran: the named one, else its digest.
    pub image: String,
    /// The exit status (`None`: timed out).
    pub exit_code: Option<i64>,
    /// The last lines of the run's output.
    pub tail: String,
    pub seconds: f64,
}

/// One run in a fresh sandbox on `checkout` over `files`.
pub async fn run_tests(
    checkout: &Path,
    files: &[String],
    runner: &TestRunner,
) -> Result<TestRun, MineError> {
    let spec = runner
        .settings
        .spec(checkout, runner.kind, SandboxKind::Docker);
    let sandbox = crate::sandbox::open_from(&spec, runner.pool.as_deref(), &|_| {}).await?;
    let outcome = async {
        let out = sandbox
            .exec(ExecRequest {
                command: command(&runner.test_cmd, files),
                cwd: sandbox.root().to_string(),
                timeout: runner.timeout,
                keep_bytes: KEEP_BYTES,
                stream: None,
            })
            .await?;
        let xml = if out.stdout.truncated() {
            // Longer than what a run keeps: read from where pytest wrote it.
            let report = format!("{}/{REPORT_PATH}", sandbox.root().trim_end_matches('/'));
            match sandbox.read(&report).await {
                Ok(x) => Some(x),
                Err(crate::sandbox::SandboxError::NotFound { .. }) => None,
                Err(e) => return Err(e),
            }
        } else {
            Some(out.stdout.head.clone()).filter(|x| !x.is_empty())
        };
        Ok((out, xml, sandbox.about().image_digest))
    }
    .await;
    runner.closing.close(sandbox);
    let (out, xml, digest) = outcome?;
    // pytest's words are on standard error (standard output is the report).
    let tail = last_lines(&String::from_utf8_lossy(&out.stderr.head), 5);
    let exit_code = match out.exit {
        ExecExit::TimedOut => None,
        ExecExit::Exited(c) => Some(c),
    };
    let report = match (exit_code, xml) {
        (None, _) => Err(format!("timed out after {} s", runner.timeout.as_secs())),
        (Some(code), None) => Err(format!("exit {code} and no JUnit XML: {tail}")),
        (Some(code), Some(xml)) => Report::parse(&String::from_utf8_lossy(&xml), files)
            .map_err(|e| format!("exit {code}: {e}")),
    };
    let image = runner
        .settings
        .image_ref()
        .or(digest)
        .unwrap_or_else(|| spec.image_label());
    Ok(TestRun {
        report,
        image,
        exit_code,
        tail,
        seconds: out.elapsed.as_secs_f64(),
    })
}

/// [`run_tests`], its report or why the tests did not run as a rejection.
async fn run(
    checkout: &Path,
    files: &[String],
    runner: &TestRunner,
    name: RunName,
) -> Result<Result<(Report, String), Rejection>, MineError> {
    let r = run_tests(checkout, files, runner).await?;
    Ok(r.report
        .map(|report| (report, r.image))
        .map_err(|why| Rejection::TestsDoNotRun { run: name, why }))
}

/// The last `n` non-empty lines of `text`, joined by " | ".
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_names_the_report_and_quotes_files() {
        let c = command(
            "python3 -m pytest",
            &["tests/test_a.py".into(), "tests/it's.py".into()],
        );
        assert_eq!(
            c,
            "rm -f .git/lilypad-junit.xml; { python3 -m pytest -p no:cacheprovider --rootdir=. \
             --continue-on-collection-errors --junitxml=.git/lilypad-junit.xml tests/test_a.py \
             'tests/it'\\''s.py'; } 1>&2; s=$?; cat .git/lilypad-junit.xml 2>/dev/null; exit $s"
        );
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "b | c");
    }
}
