//! `lilypad export ID|--last [--format md|html|json] [-o FILE]`: a recorded session as one file.

use super::options::SessionArgs;
use crate::export::{self, Format};
use crate::launch::{resume, SessionOptions};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormatArg {
    /// Markdown, reasoning and results folded in <details>
    Md,
    /// One self-contained HTML page with coloured diffs
    Html,
    /// The documented JSON structure (docs/export.md)
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Session id (or a prefix of it)
    pub id: Option<String>,
    /// Export the newest session
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "md")]
    pub format: FormatArg,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionArgs,
}

pub(super) fn run(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    if args.id.is_none() && !args.last {
        anyhow::bail!("give a session id (see `lilypad sessions`) or --last");
    }
    let opts = SessionOptions::from(&args.session);
    let rec = resume::find(&opts, args.id.as_deref())?;
    let doc = export::read(&rec.log_path)?;
    let format = match args.format {
        FormatArg::Md => Format::Markdown,
        FormatArg::Html => Format::Html,
        FormatArg::Json => Format::Json,
    };
    let text = export::render(&doc, format)?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
