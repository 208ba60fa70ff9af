//! Command-line parsing and dispatch: one file per subcommand, each a thin shell over the
//! library. No logic lives here beyond turning arguments into settings and printing results.
//! `anyhow` is allowed in this module (the binary's edge).

mod convert;
mod doctor;
mod generate;
mod info;
mod parse;
mod prompt;
mod serve;
mod tiny_model;
mod tool;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

use crate::config::{EngineFlags, Settings};

/// Lilypad: a sandboxed, reviewed coding agent in your terminal.
#[derive(Debug, Parser)]
#[command(name = "lilypad", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub engine: EngineFlags,

    #[command(subcommand)]
    pub command: Command,
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
    /// Generate from a raw prompt with the in-process engine and print the figures.
    Generate(generate::GenerateArgs),
    /// Write a tiny random-weight model (for tests and trying things out; its output is noise).
    TinyModel(tiny_model::TinyModelArgs),
    /// Print the exact prompt text the model would see for a conversation file.
    Prompt(prompt::PromptArgs),
    /// Parse raw model output into reasoning, content and tool calls (JSON).
    Parse(parse::ParseArgs),
    /// Serve the model over an OpenAI-compatible API (/v1/chat/completions), for a team.
    Serve(serve::ServeArgs),
}

/// Parse the process arguments, run the subcommand, and turn its outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&cli.engine)?;
    match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Doctor(args) => doctor::run(&args, &settings),
        Command::Prompt(args) => prompt::run(&args, &settings),
        Command::Parse(args) => parse::run(&args),
        Command::Tool(args) => tool::run(&args),
        Command::TinyModel(args) => tiny_model::run(&args),
        Command::Generate(args) => generate::run(&args, &settings),
        Command::Convert(args) => convert::run(&args),
        Command::Serve(args) => serve::run(&args, &settings),
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("LILYPAD_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
