//! The sections of a `lilypad bench` run that load the in-process engine: the scripted session
//! (`agent-turns` and `resume` on one engine), `engine` against its reference loop in a child
//! process, `decode` (with several sequences together too), `grammar` and `sequences`.
//!
//! Owns: the model file each section uses (the given GGUF, or a random-weight one written into
//! the run's temporary directory), the engine settings each loads with (always on the CPU but
//! for `decode`, which keeps the configured GPU layers), and the notes describing them. Does
//! not own: the measurements (`agent_turns`, `resume`, `engine`, `decode`).

use super::suite::{io, BenchError, Options};
use super::{agent_turns, decode as d, engine as e, resume, Report};
use crate::config::EngineSettings;
use crate::engine::EngineHandle;
use std::path::Path;

/// Load the engine from `path` with `settings`.
pub(super) fn load(path: &Path, settings: &EngineSettings) -> Result<EngineHandle, BenchError> {
    EngineHandle::load(path, settings, |_| {}).map_err(|source| BenchError::Load {
        path: path.to_path_buf(),
        source,
    })
}

/// The given model, or a bench-shaped random-weight one of width `embd` written into `dir`.
pub(super) fn model_path(
    opts: &Options,
    dir: &Path,
    embd: u64,
) -> Result<std::path::PathBuf, BenchError> {
    super::model_path(opts.gguf.as_deref(), dir, embd).map_err(|source| BenchError::WriteModel {
        what: "writing the bench model",
        source,
    })
}

/// The bench model of the serving benches: `--embd` wide, at most 64 in a quick run.
fn small_model_path(opts: &Options, dir: &Path) -> Result<std::path::PathBuf, BenchError> {
    let embd = if opts.quick {
        opts.embd.min(64)
    } else {
        opts.embd
    };
    model_path(opts, dir, embd)
}

/// `agent-turns` and `resume`, whichever `opts` asks for, on one engine.
pub(super) fn session(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    report: &mut Report,
) -> Result<(), BenchError> {
    use super::suite::Which;
    let (turns, embd, repeats) = if opts.quick {
        (opts.turns.min(4), opts.embd.min(64), 1)
    } else {
        (opts.turns, opts.embd, opts.repeats)
    };
    let path = model_path(opts, dir, embd)?;
    let mut es = settings.clone();
    es.ctx = if opts.quick { 16_384 } else { 65_536 };
    es.batch = 512;
    es.ubatch = 512;
    if es.threads == 0 {
        es.threads = 1;
    }
    es.gpu_layers = Some(es.gpu_layers.unwrap_or(0));
    let engine = load(&path, &es)?;
    let m = engine.model();
    report.notes.push(format!(
        "engine model: {} ({}, {} parameters, {} layers), ctx {}, {} thread(s), CPU",
        if opts.gguf.is_some() {
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
    if matches!(opts.which, Which::AgentTurns | Which::All) {
        eprintln!("bench agent-turns: {turns} turns...");
        let baseline_every = if opts.quick { 1 } else { opts.baseline_every };
        let o = agent_turns::run(&engine, turns, baseline_every)?;
        if o.not_extended > 0 {
            report.notes.push(format!(
                "agent-turns: {} request(s) rewound or re-read instead of extending memory",
                o.not_extended
            ));
        }
        report.figures.extend(o.figures());
    }
    if matches!(opts.which, Which::AgentTurns | Which::All) {
        session_against_server(opts, &engine, &path, &es, turns, dir, report)?;
    }
    if matches!(opts.which, Which::Resume | Which::All) {
        eprintln!("bench resume: {turns} turns, {repeats} repeat(s)...");
        let o = resume::run(&engine, turns, repeats, dir)?;
        report.figures.extend(o.figures());
        resume_against_server(opts, &engine, &path, &es, (turns, repeats), dir, report)?;
    }
    Ok(())
}

/// The resume bench against llama-server's slot save and restore, when llama-server is built.
fn resume_against_server(
    opts: &Options,
    engine: &EngineHandle,
    path: &Path,
    es: &EngineSettings,
    (turns, repeats): (usize, usize),
    dir: &Path,
    report: &mut Report,
) -> Result<(), BenchError> {
    use super::peers::server::Server;
    let Some(program) = opts.peer("llama-server") else {
        report.notes.push(
            "resume: llama-server not found (--llama-tools or LILYPAD_LLAMA_TOOLS_DIR): not compared with its slot restore".into(),
        );
        return Ok(());
    };
    let slots = dir.join("llama-server-slots");
    std::fs::create_dir_all(&slots).map_err(io("making llama-server's slot directory"))?;
    let extra = vec!["--slot-save-path".to_string(), slots.display().to_string()];
    eprintln!("bench resume: starting llama-server (--slot-save-path)...");
    let server = Server::start(
        &program,
        path,
        es.threads,
        es.ctx,
        &extra,
        &dir.join("llama-server-resume.log"),
    )?;
    eprintln!("bench resume: {repeats} resume(s) each against llama-server's slot restore...");
    let o = super::resume_server::run(engine, &server, turns, repeats, dir)?;
    drop(server);
    report.notes.push(format!(
        "resume against {}: one slot, ctx {}, {} thread(s), CPU, --slot-save-path; its own times (medians): restore {:.1} ms, then reading the new prompt tokens {:.1} ms; Lilypad's state file {} tokens, the slot file {} tokens",
        program.display(),
        es.ctx,
        es.threads,
        o.server_restore_ms,
        o.server_prompt_ms,
        o.state_tokens,
        o.server_saved.tokens
    ));
    report.figures.extend(o.figures());
    Ok(())
}

/// The scripted session sent turn by turn to llama-server (each of
/// [`super::agent_server::SETTINGS`]) and to `engine`, when llama-server is built.
fn session_against_server(
    opts: &Options,
    engine: &EngineHandle,
    path: &Path,
    es: &EngineSettings,
    turns: usize,
    dir: &Path,
    report: &mut Report,
) -> Result<(), BenchError> {
    use super::peers::server::Server;
    let Some(program) = opts.peer("llama-server") else {
        report.notes.push(
            "agent-turns: llama-server not found (--llama-tools or LILYPAD_LLAMA_TOOLS_DIR; scripts/build-llama-tools.sh builds it): not compared with it".into(),
        );
        return Ok(());
    };
    let mut servers = Vec::new();
    for (i, (label, extra)) in super::agent_server::SETTINGS.iter().enumerate() {
        let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        let log = dir.join(format!("llama-server-{i}.log"));
        eprintln!("bench agent-turns: starting llama-server ({label})...");
        let server = Server::start(&program, path, es.threads, es.ctx, &extra, &log)?;
        servers.push((label.to_string(), server));
    }
    eprintln!("bench agent-turns: {turns} turns against llama-server...");
    let o = super::agent_server::run(engine, &servers, turns)?;
    drop(servers);
    report.notes.push(format!(
        "agent-turns against {}: one slot, ctx {}, {} thread(s), CPU; each turn's prompt as the engine's token ids to /completion with cache_prompt, 1 predicted token; settings: {}",
        program.display(),
        es.ctx,
        es.threads,
        super::agent_server::SETTINGS
            .iter()
            .map(|(l, a)| format!("{l} = [{}]", a.join(" ")))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    report.figures.extend(o.figures());
    report.tables.push(o.table());
    Ok(())
}

/// `engine`: rounds alternating Lilypad's side and the reference loop's, the reference run by
/// this same binary as `lilypad bench engine-reference` in a child process.
pub(super) fn engine(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let (embd, reps) = if opts.quick {
        (64, 1)
    } else {
        (opts.engine_embd, 5)
    };
    let path = model_path(opts, dir, embd)?;
    // Rounds alternate the two sides, so a change in the machine's load over the run hits
    // both alike.
    let rounds = if opts.quick { 1 } else { 5 };
    eprintln!(
        "bench engine: pp{} / tg{}, {rounds} rounds of {reps} runs each side...",
        e::PP,
        e::TG
    );
    let mut es = settings.clone();
    es.ctx = e::CTX;
    es.batch = e::PP as u32;
    es.ubatch = e::PP as u32;
    es.threads = threads;
    es.gpu_layers = Some(0);
    let engine = load(&path, &es)?;
    let m = engine.model();
    report.notes.push(format!(
        "engine: model {} ({} parameters, {} layers), ctx {}, batch {}, {threads} thread(s), CPU, {rounds} rounds per side in alternating order, each the mean of {reps} runs after a warm-up",
        if opts.gguf.is_some() { path.display().to_string() } else { format!("random-weight n_embd {embd}") },
        m.parameters,
        m.layers,
        e::CTX,
        e::PP
    ));
    let exe = std::env::current_exe().map_err(io("finding the lilypad binary"))?;
    let llama_bench = opts.peer("llama-bench");
    let (baseline, target) = match &llama_bench {
        Some(p) => {
            report.notes.push(format!(
                "engine: baseline {} (-p {} -n {} -t {threads} -b {} -ub {} -ngl 0 -r {reps}), same GGUF",
                p.display(),
                e::PP,
                e::TG,
                e::PP,
                e::PP
            ));
            ("llama-bench, same GGUF", 0.98)
        }
        None => {
            report.notes.push(
                "engine: llama-bench not found (--llama-tools or LILYPAD_LLAMA_TOOLS_DIR; scripts/build-llama-tools.sh builds it): the baseline is the bare llama-cpp-2 loop".into(),
            );
            ("bare llama-cpp-2 loop, llama-bench procedure", 0.97)
        }
    };
    let (mut refs, mut lilys) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Odd rounds run Lilypad's side first: neither side always runs second.
        if round % 2 == 1 {
            lilys.push(e::lilypad(&engine, reps)?);
        }
        if let Some(program) = &llama_bench {
            refs.push(super::peers::llama_bench::run_on(
                program,
                &path,
                threads,
                e::PP as u32,
                reps,
            )?);
            if round % 2 == 0 {
                lilys.push(e::lilypad(&engine, reps)?);
            }
            continue;
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
            .map_err(io("running the reference loop"))?;
        if !out.status.success() {
            return Err(BenchError::ReferenceFailed {
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        refs.push(
            serde_json::from_slice::<e::Speeds>(&out.stdout)
                .map_err(BenchError::ReferenceOutput)?,
        );
        if round % 2 == 0 {
            lilys.push(e::lilypad(&engine, reps)?);
        }
    }
    let (reference, lily) = (e::Speeds::mean_of(&refs), e::Speeds::mean_of(&lilys));
    if lily.tg_min_tokens < e::TG {
        report.notes.push(format!(
            "engine: a tg run stopped at an end-of-generation token after {} tokens",
            lily.tg_min_tokens
        ));
    }
    report
        .figures
        .extend(e::figures(lily, reference, baseline, target));
    Ok(())
}

/// `decode`: generation speed of the given or a Qwen3.5-4B-shaped model against the given or
/// the measured memory bandwidth.
pub(super) fn decode(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let path = match &opts.gguf {
        Some(p) => p.clone(),
        None => {
            let spec = if opts.quick {
                super::bench_spec(64)
            } else {
                four_b(opts)?
            };
            let path = dir.join("decode.gguf");
            eprintln!(
                "bench decode: writing a random-weight model (n_embd {}, {} layers)...",
                spec.n_embd, spec.n_layer
            );
            crate::testmodel::write(&path, &spec).map_err(|source| BenchError::WriteModel {
                what: "writing the decode model",
                source,
            })?;
            path
        }
    };
    let (weight_bytes, parameters) =
        d::weight_bytes(&path).map_err(|source| BenchError::ReadModel {
            path: path.clone(),
            source,
        })?;
    let mut es = settings.clone();
    es.ctx = 4_096;
    es.threads = threads;
    es.sequences = 8;
    let gpu_layers = es.gpu_layers.unwrap_or(0);
    es.gpu_layers = Some(gpu_layers);
    let engine = load(&path, &es)?;
    let (tokens, reps) = if opts.quick {
        (16, 1)
    } else {
        (opts.decode_tokens, 3)
    };
    eprintln!("bench decode: {reps} runs of {tokens} tokens...");
    let (tps, fewest) = d::tokens_per_second(&engine, tokens, reps)?;
    let per_sequence = (tokens / 4).max(8);
    eprintln!("bench decode: 1, 2, 4 and 8 sequences of {per_sequence} tokens together...");
    let rows = super::sequences::aggregate(&engine, &[1, 2, 4, 8], per_sequence, reps)?;
    drop(engine);
    let together = super::sequences::Outcome {
        bench: "decode",
        rows,
        model: if opts.gguf.is_some() || opts.quick {
            "decode model".into()
        } else {
            "Qwen3.5-4B shape".into()
        },
        target_at_4: (opts.gguf.is_none() && !opts.quick).then_some(3.0),
    };

    let (limit, limit_source) = match opts.peak_gbs {
        Some(g) => (g * 1e9, "given memory bandwidth (--peak-gbs)".to_string()),
        None => {
            let bytes = if opts.quick { 64 << 20 } else { 2 << 30 };
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
        opts.gguf.as_ref().map_or_else(
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
    report.figures.extend(together.figures());
    Ok(())
}

/// `grammar`: the bench model (with the real vocabulary when `--vocab-dir` is given, since the
/// grammar's cost per token grows with the vocabulary), on the CPU.
pub(super) fn grammar(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let path = match (&opts.gguf, &opts.vocab_dir) {
        (Some(p), _) => p.clone(),
        (None, Some(vdir)) => {
            let vocab = crate::testmodel::vocab::qwen35(vdir, 248_320).map_err(|source| {
                BenchError::Vocab {
                    dir: vdir.clone(),
                    source,
                }
            })?;
            let mut spec = super::bench_spec(opts.embd);
            spec.vocab = vocab;
            let path = dir.join("grammar.gguf");
            crate::testmodel::write(&path, &spec).map_err(|source| BenchError::WriteModel {
                what: "writing the grammar bench model",
                source,
            })?;
            path
        }
        (None, None) => model_path(opts, dir, opts.embd)?,
    };
    let mut es = settings.clone();
    es.ctx = 4096;
    es.threads = threads;
    es.gpu_layers = Some(0);
    let engine = load(&path, &es)?;
    let m = engine.model();
    let (tokens, runs) = if opts.quick {
        (16, 1)
    } else {
        (96, opts.repeats.max(3))
    };
    eprintln!("bench grammar: {runs} run(s) of {tokens} tokens each way...");
    let o = super::grammar::run(&engine, tokens, runs)?;
    report.notes.push(format!(
        "grammar: an accepted pick costs {:.4} ms more per token than no grammar, a rejected one {:.3} ms more than an accepted one; overhead per token inside a call = accept cost + rejection rate x reject cost{}",
        o.accept_ms(),
        o.reject_ms(),
        o.implied_rejection_rate()
            .map(|r| format!(" (the sampled arm's extra time, at this reject cost, implies a rejection rate of {r:.2})"))
            .unwrap_or_default()
    ));
    report.notes.push(format!(
        "grammar model: {} ({} parameters, vocabulary {}), {threads} thread(s), CPU",
        path.display(),
        m.parameters,
        m.vocabulary
    ));
    report.figures.extend(o.figures());
    Ok(())
}

/// `logprobs`: the grammar bench's model (the real vocabulary with `--vocab-dir`: rating costs
/// a pass over the vocabulary per token), or `--gguf`, on the CPU unless `--gpu-layers` says
/// otherwise.
pub(super) fn logprobs(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let path = match (&opts.gguf, &opts.vocab_dir) {
        (Some(p), _) => p.clone(),
        (None, Some(vdir)) => {
            let vocab = crate::testmodel::vocab::qwen35(vdir, 248_320).map_err(|source| {
                BenchError::Vocab {
                    dir: vdir.clone(),
                    source,
                }
            })?;
            let mut spec = super::bench_spec(opts.embd);
            spec.vocab = vocab;
            let path = dir.join("logprobs.gguf");
            crate::testmodel::write(&path, &spec).map_err(|source| BenchError::WriteModel {
                what: "writing the logprobs bench model",
                source,
            })?;
            path
        }
        (None, None) => model_path(opts, dir, opts.embd)?,
    };
    let mut es = settings.clone();
    es.ctx = 4096;
    es.threads = threads;
    es.gpu_layers = Some(es.gpu_layers.unwrap_or(0));
    let engine = load(&path, &es)?;
    let (tokens, runs) = if opts.quick {
        (16, 1)
    } else {
        (128, opts.repeats.max(3))
    };
    eprintln!("bench logprobs: {runs} run(s) of {tokens} tokens, three ways...");
    let o = super::logprobs::run(&engine, tokens, runs)?;
    let m = engine.model();
    report.notes.push(format!(
        "logprobs: one rating takes {:.1} us on a {}-token vocabulary ({:.1} us with the top 20): {:.1}% of a token's time at 100 tokens/s, {:.1}% at 200; the three ways generated {} tokens",
        o.rate_us,
        o.vocabulary,
        o.rate_top20_us,
        100.0 * o.share_at(100.0),
        100.0 * o.share_at(200.0),
        if o.same_tokens { "the same" } else { "DIFFERENT" }
    ));
    report.notes.push(format!(
        "logprobs model: {} ({} parameters, vocabulary {}), {threads} thread(s), {} layer(s) on the GPU",
        path.display(),
        m.parameters,
        m.vocabulary,
        m.gpu_layers
    ));
    report.figures.extend(o.figures());
    Ok(())
}

/// Qwen3.5-4B's shape, with the real vocabulary when `--vocab-dir` is given.
fn four_b(opts: &Options) -> Result<crate::testmodel::TinySpec, BenchError> {
    let vocab = match &opts.vocab_dir {
        Some(dir) => {
            crate::testmodel::vocab::qwen35(dir, 248_320).map_err(|source| BenchError::Vocab {
                dir: dir.clone(),
                source,
            })?
        }
        None => crate::testmodel::vocab::synthetic(),
    };
    Ok(d::four_b_spec(vocab))
}

/// `mtp`: the given model (which must have an MTP layer) or a random-weight one with an MTP
/// block: the bench model, or Qwen3.5-4B's shape with `--embd 2560`; on the CPU unless
/// `--gpu-layers` says otherwise.
pub(super) fn mtp(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let path = match &opts.gguf {
        Some(p) => p.clone(),
        None => {
            let mut spec = match (opts.quick, opts.embd) {
                (true, _) => super::bench_spec(64),
                (false, 2560) => four_b(opts)?,
                (false, embd) => super::bench_spec(embd),
            };
            spec.mtp = true;
            let path = dir.join("mtp.gguf");
            crate::testmodel::write(&path, &spec).map_err(|source| BenchError::WriteModel {
                what: "writing the MTP bench model",
                source,
            })?;
            path
        }
    };
    let mut es = settings.clone();
    // Room for the long prompt of the prompt-reading row (about 6,500 tokens).
    es.ctx = 16_384;
    es.threads = threads;
    es.gpu_layers = Some(es.gpu_layers.unwrap_or(0));
    let (tokens, runs, prompt_repeats) = if opts.quick {
        (24, 1, 40)
    } else {
        (128, opts.repeats.max(3), 160)
    };
    eprintln!("bench mtp: {runs} run(s) of 3 prompts x {tokens} tokens, three ways...");
    let o = super::mtp::run(&path, &es, tokens, runs, prompt_repeats)?;
    report.notes.push(format!(
        "mtp model: {}, {threads} thread(s), {} GPU layers",
        path.display(),
        es.gpu_layers.unwrap_or(0)
    ));
    report.notes.push(o.note());
    report.figures.extend(o.figures());
    Ok(())
}

/// `sequences`: the bench model on the CPU, several sequences decoded together against one,
/// then `lilypad serve` with 4 concurrent clients against one at a time.
pub(super) fn sequences(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let path = small_model_path(opts, dir)?;
    let mut es = settings.clone();
    es.ctx = 8192;
    es.threads = threads;
    es.sequences = 8;
    es.conversation_slots = 8;
    es.gpu_layers = Some(0);
    let engine = std::sync::Arc::new(load(&path, &es)?);
    let tokens = if opts.quick { 16 } else { 128 };
    eprintln!("bench sequences: 1, 2, 4 and 8 sequences of {tokens} tokens together...");
    let rows = super::sequences::aggregate(&engine, &[1, 2, 4, 8], tokens, 3)?;
    let m = engine.model();
    report.notes.push(format!(
        "sequences model: {} ({} parameters), {threads} thread(s), CPU; exactly {tokens} greedy tokens per sequence (end-of-generation ignored, as llama-batched-bench does), wall time until the last ends",
        path.display(),
        m.parameters
    ));
    let o = super::sequences::Outcome {
        bench: "sequences",
        rows,
        model: "bench model".into(),
        target_at_4: None,
    };
    report.figures.extend(o.figures());
    report
        .figures
        .push(super::mixed::run(&path, &es, opts.quick)?);
    eprintln!("bench attempts: 3 attempts together and one after the other...");
    let a = super::attempts::run(engine.clone(), 3, tokens as u32).map_err(BenchError::Attempts)?;
    report.notes.push(format!(
        "attempts: the agent's first prompt ({} tokens) read once and forked into 3 sequences, decoded together with a seed each, against 3 attempts one after the other from empty memory; {} sampled tokens each",
        a.prompt_tokens, a.tokens
    ));
    report.figures.push(a.figure());
    match opts.peer("llama-batched-bench") {
        Some(program) => {
            eprintln!("bench sequences: llama-batched-bench at 1, 2, 4 and 8 sequences...");
            let peer = super::peers::batched::run_on(
                &program,
                &path,
                threads,
                es.ctx,
                &[1, 2, 4, 8],
                tokens,
            )?;
            report.notes.push(format!(
                "sequences: baseline {} -c {} -npp 1 -ntg {tokens} -npl 1,2,4,8 -kvu -t {threads} -ngl 0 (speed_tg: its generation phase only; Lilypad's figure also reads each one-token prompt and starts each request)",
                program.display(),
                es.ctx
            ));
            report
                .figures
                .extend(super::sequences::against_batched(&o.rows, &peer));
        }
        None => report.notes.push(
            "sequences: llama-batched-bench not found (--llama-tools or LILYPAD_LLAMA_TOOLS_DIR): not compared with it".into(),
        ),
    }
    eprintln!("bench sequences: lilypad serve, 4 clients together and one at a time...");
    let s = super::sequences::serve(engine, 4, tokens as u32)?;
    report.figures.push(s.figure());
    Ok(())
}

/// `team`: serving a team on the bench model: `lilypad serve --replicas 2` against one replica,
/// then `lilypad serve` against `llama-server` (when found) on the same agent-shaped workload.
pub(super) fn team(
    opts: &Options,
    settings: &EngineSettings,
    dir: &Path,
    threads: u32,
    report: &mut Report,
) -> Result<(), BenchError> {
    let path = small_model_path(opts, dir)?;
    report
        .figures
        .push(super::replicas::run(&path, settings, threads, opts.quick)?);
    match opts.peer("llama-server") {
        Some(program) => report.figures.extend(super::team::run(
            &path,
            settings,
            threads,
            &program,
            dir,
            opts.quick,
        )?),
        None => report.notes.push(
            "team: llama-server not found (--llama-tools or LILYPAD_LLAMA_TOOLS_DIR): serving a team not compared with it".into(),
        ),
    }
    Ok(())
}
