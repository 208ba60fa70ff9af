//! The shape of the command line: the top-level flags and the subcommands, each with its own
//! flags in its file. Parsing only; `super::main` dispatches.

use super::engine_args::EngineArgs;
use clap::{Parser, Subcommand};

/// Lilypad: a sandboxed, reviewed coding agent in your terminal.
#[derive(Debug, Parser)]
#[command(name = "lilypad", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub engine: EngineArgs,

    #[command(subcommand)]
    pub command: Option<Command>,

    /// The task for an interactive session in the repository (without a subcommand)
    pub task: Option<String>,

    #[command(flatten)]
    pub session: super::options::SessionArgs,

    /// Colour theme of the interface: dark, light, or a theme file
    #[arg(long, env = "LILYPAD_THEME")]
    pub theme: Option<String>,

    /// Draw on the terminal's main screen instead of the alternate one: the last screen stays
    /// in the scrollback after exit [default: [interface] alternate_screen]
    #[arg(long, global = true)]
    pub no_alt_screen: bool,

    /// Run N attempts at the task at once, each in its own sandbox with its own seed, and
    /// review them side by side (build the patch from one or from hunks of several)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub attempts: u16,

    /// A command run in each attempt's sandbox when it finishes (its exit
    /// status says whether the attempt passed), e.g. "python -m pytest -q"
    #[arg(long)]
    pub check: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a GGUF model's metadata: architecture, size, context, vocabulary, template.
    Info(super::info::InfoArgs),
    /// Say what is available: model, GPU offload, layers that would be offloaded.
    Doctor(super::doctor::DoctorArgs),
    /// Run one tool call in a sandbox and print its result exactly as the model would see it.
    Tool(super::tool::ToolArgs),
    /// Convert a Hugging Face Qwen3.5 checkpoint (safetensors) to a GGUF file.
    Convert(super::convert::ConvertArgs),
    /// Quantise a bf16/f16 GGUF file with llama.cpp's quantizer (q4_k_m, q5_k_m, q6_k, ...).
    Quantize(super::quantize::QuantizeArgs),
    /// Measure what a quantisation costs: KL divergence, top-1 agreement and perplexity
    /// against the reference model, on the model's own kind of text.
    QuantCheck(super::quant_check::QuantCheckArgs),
    /// Generate from a raw prompt with the in-process engine and print the figures.
    Generate(super::generate::GenerateArgs),
    /// Run the agent headless on one task or a batch of tasks.
    Run(Box<super::run_args::RunArgs>),
    /// Continue a recorded session: in the interface on a terminal, headless otherwise.
    Resume(Box<super::resume::ResumeArgs>),
    /// List recorded sessions.
    Sessions(super::sessions::SessionsArgs),
    /// Export a recorded session as Markdown, a self-contained HTML page, or JSON.
    Export(super::export::ExportArgs),
    /// Write a tiny random-weight model (for tests and trying things out; its output is noise).
    TinyModel(super::tiny_model::TinyModelArgs),
    /// Print the exact prompt text the model would see for a conversation file.
    Prompt(super::prompt::PromptArgs),
    /// Parse raw model output into reasoning, content and tool calls (JSON).
    Parse(super::parse::ParseArgs),
    /// A scripted session on a bundled repository: the whole review flow, no model needed.
    Demo(super::demo::DemoArgs),
    /// Step through a recorded session in the interface.
    Replay(super::replay::ReplayArgs),
    /// Serve the model over an OpenAI-compatible API (/v1/chat/completions), for a team.
    Serve(super::serve::ServeArgs),
    /// Measure Lilypad against baselines in the same run (agent turns, resume, interface).
    Bench(super::bench::BenchArgs),
    /// Harness profiles: import the system prompt and tools from your copy of Leaf.
    Harness(super::harness::HarnessArgs),
    /// Remove the containers, pods and workspaces that killed Lilypad processes left behind.
    Sweep(super::sweep::SweepArgs),
    /// Download a model from the Hugging Face Hub into its shared cache (ORG/NAME[:TAG]): a
    /// GGUF file, or a safetensors checkpoint converted to GGUF.
    Pull(super::pull::PullArgs),
    /// List the pulled models (`models rm NAME[:TAG]` removes one).
    Models(super::models::ModelsArgs),
    /// Make task sets from repositories: `tasks mine REPO` turns a history into SWE-bench
    /// task lines, validated by their tests in the sandbox; `tasks mutate REPO` makes them
    /// from small bugs its tests catch.
    Tasks(super::tasks::TasksArgs),
}
