//! Command-line parsing and dispatch: one file per subcommand, each a thin shell over the
//! library. No logic lives here beyond turning arguments into settings and printing results.
//! `anyhow` is allowed in this module (the binary's edge).

mod bench;
mod convert;
mod demo;
mod doctor;
mod export;
mod generate;
mod harness;
mod info;
mod interactive;
mod options;
mod parse;
mod prompt;
mod quant_check;
mod quantize;
mod replay;
mod resume;
mod run;
mod run_args;
mod run_batch;
mod serve;
mod sessions;
mod sweep;
mod tiny_model;
mod tool;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

use crate::config::Settings;
use options::EngineArgs;

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
    pub session: options::SessionArgs,

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
    Info(info::InfoArgs),
    /// Say what is available: model, GPU offload, layers that would be offloaded.
    Doctor(doctor::DoctorArgs),
    /// Run one tool call in a sandbox and print its result exactly as the model would see it.
    Tool(tool::ToolArgs),
    /// Convert a Hugging Face Qwen3.5 checkpoint (safetensors) to a GGUF file.
    Convert(convert::ConvertArgs),
    /// Quantise a bf16/f16 GGUF file with llama.cpp's quantizer (q4_k_m, q5_k_m, q6_k, ...).
    Quantize(quantize::QuantizeArgs),
    /// Measure what a quantisation costs: KL divergence, top-1 agreement and perplexity
    /// against the reference model, on the model's own kind of text.
    QuantCheck(quant_check::QuantCheckArgs),
    /// Generate from a raw prompt with the in-process engine and print the figures.
    Generate(generate::GenerateArgs),
    /// Run the agent headless on one task or a batch of tasks.
    Run(Box<run_args::RunArgs>),
    /// Continue a recorded session: in the interface on a terminal, headless otherwise.
    Resume(Box<resume::ResumeArgs>),
    /// List recorded sessions.
    Sessions(sessions::SessionsArgs),
    /// Export a recorded session as Markdown, a self-contained HTML page, or JSON.
    Export(export::ExportArgs),
    /// Write a tiny random-weight model (for tests and trying things out; its output is noise).
    TinyModel(tiny_model::TinyModelArgs),
    /// Print the exact prompt text the model would see for a conversation file.
    Prompt(prompt::PromptArgs),
    /// Parse raw model output into reasoning, content and tool calls (JSON).
    Parse(parse::ParseArgs),
    /// A scripted session on a bundled repository: the whole review flow, no model needed.
    Demo(demo::DemoArgs),
    /// Step through a recorded session in the interface.
    Replay(replay::ReplayArgs),
    /// Serve the model over an OpenAI-compatible API (/v1/chat/completions), for a team.
    Serve(serve::ServeArgs),
    /// Measure Lilypad against baselines in the same run (agent turns, resume, interface).
    Bench(bench::BenchArgs),
    /// Harness profiles: import the system prompt and tools from your copy of Leaf.
    Harness(harness::HarnessArgs),
    /// Remove the containers, pods and workspaces that killed Lilypad processes left behind.
    Sweep(sweep::SweepArgs),
}

/// Parse the process arguments, run the subcommand, and turn its outcome into an exit code.
pub fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    // Settings first, so that the config file's `[log]` level applies to the diagnostics.
    let mut overrides: crate::config::Overrides = (&cli.engine).into();
    overrides.sandbox = sandbox_flags(&cli).into();
    if let Some(Command::Run(a)) = &cli.command {
        overrides
            .sandbox
            .image_registry
            .clone_from(&a.image_registry);
        overrides.sandbox.pull_secrets.clone_from(&a.pull_secret);
    }
    // The repository's own `.lilypad/config.toml` is a layer of the settings.
    overrides.repo = session_repo(&cli)
        .cloned()
        .or_else(|| std::env::current_dir().ok());
    let mut settings = match Settings::load(&overrides) {
        Ok(s) => s,
        Err(err) => {
            eprintln!("error: {err:#}");
            return ExitCode::from(1);
        }
    };
    if cli.no_alt_screen {
        settings.interface.alternate_screen = false;
    }
    // The interface owns the screen: its diagnostics go to a file instead of over it.
    let draws = match &cli.command {
        None | Some(Command::Demo(_)) | Some(Command::Replay(_)) => true,
        Some(Command::Resume(r)) => resume::uses_interface(r),
        _ => false,
    };
    let to = if draws {
        LogTo::File(crate::config::log_file())
    } else {
        LogTo::Stderr
    };
    init_tracing(to, &settings.log.filter());
    match run(cli, settings) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli, settings: Settings) -> anyhow::Result<ExitCode> {
    let Some(command) = cli.command else {
        let attempts =
            (cli.attempts > 1 || cli.check.is_some()).then(|| interactive::AttemptsChoice {
                count: u32::from(cli.attempts),
                check: cli.check.clone(),
            });
        return interactive::run_default(
            cli.task,
            &(&cli.session).into(),
            cli.theme.as_deref(),
            &settings,
            attempts,
        );
    };
    match command {
        Command::Demo(args) => demo::run(&args, &settings),
        Command::Replay(args) => replay::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Doctor(args) => doctor::run(&args, &settings),
        Command::Prompt(args) => prompt::run(&args, &settings),
        Command::Parse(args) => parse::run(&args),
        Command::Tool(args) => tool::run(&args, &settings),
        Command::TinyModel(args) => tiny_model::run(&args),
        Command::Generate(args) => generate::run(&args, &settings),
        Command::Run(args) => run::run(&args, &settings, &cli.engine),
        Command::Sessions(args) => sessions::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Resume(args) => resume::run(&args, &settings, cli.theme.as_deref()),
        Command::Convert(args) => convert::run(&args),
        Command::Quantize(args) => quantize::run(&args),
        Command::QuantCheck(args) => quant_check::run(&args, &settings),
        Command::Serve(args) => serve::run(&args, &settings),
        Command::Bench(args) => bench::run(&args, &settings),
        Command::Harness(args) => harness::run(&args),
        Command::Sweep(args) => sweep::run(&args, &settings),
    }
}

/// The sandbox flags of the command being run (they go into the settings' `[sandbox]`).
fn sandbox_flags(cli: &Cli) -> &options::SandboxArgs {
    match &cli.command {
        None => &cli.session.sandbox,
        Some(Command::Run(a)) => &a.session.sandbox,
        Some(Command::Resume(a)) => &a.session.sandbox,
        Some(Command::Tool(a)) => &a.sandbox,
        Some(Command::Bench(a)) => &a.sandbox,
        Some(Command::Sweep(a)) => &a.sandbox,
        Some(_) => &cli.session.sandbox,
    }
}

/// The `--repo` of the command being run, if it takes one and was given it.
fn session_repo(cli: &Cli) -> Option<&std::path::PathBuf> {
    match &cli.command {
        None => cli.session.repo.as_ref(),
        Some(Command::Run(a)) => a.session.repo.as_ref(),
        Some(Command::Resume(a)) => a.session.repo.as_ref(),
        Some(_) => None,
    }
}

/// Rust ignores SIGPIPE, so `lilypad sessions | head` would panic on a closed pipe; a
/// command-line tool should simply stop, as other Unix tools do.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal disposition to its default at start-up, before any thread
    // exists, has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Where diagnostics (`tracing`, and llama.cpp's log through it) are written.
enum LogTo {
    Stderr,
    /// Appended to this file; `None` (no data directory) or a file that cannot be opened
    /// drops them, since the screen is not an option.
    File(Option<std::path::PathBuf>),
}

fn init_tracing(to: LogTo, level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_new(level).unwrap_or_else(|e| {
        eprintln!("warning: log level {level:?} is not a valid filter ({e}); using `warn`");
        EnvFilter::new("warn")
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match to {
        LogTo::Stderr => builder.with_writer(std::io::stderr).try_init(),
        LogTo::File(path) => {
            let file = path.and_then(|p| {
                std::fs::create_dir_all(p.parent()?).ok()?;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .ok()
            });
            match file {
                Some(f) => builder
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(f))
                    .try_init(),
                None => builder.with_writer(std::io::sink).try_init(),
            }
        }
    };
}
