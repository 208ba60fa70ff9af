//! `lilypad parse [FILE]`: parse raw model output (standard input when no file is given) into
//! reasoning, content, tool calls with typed arguments, and errors, printed as JSON.

use anyhow::Context;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::prompt::{builtin_tools, parse_all, parse_tools, Start, ToolSchemas};

#[derive(Debug, clap::Args)]
pub struct ParseArgs {
    /// File with the model's raw output (standard input when absent). The output is taken to
    /// start inside reasoning, right after the prompt's `<think>`
    pub file: Option<PathBuf>,
    /// The output starts in visible content (the prompt was rendered with thinking off)
    #[arg(long)]
    pub no_thinking: bool,
    /// JSON tool list (flat or OpenAI form) whose schemas type the arguments; default: the five
    /// Lilypad tools
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
}

/// End-of-turn tokens a pasted output may still carry.
const STOP_TOKENS: &[&str] = &["<|im_end|>", "<|endoftext|>"];

pub(super) fn run(args: &ParseArgs) -> anyhow::Result<ExitCode> {
    let text = match &args.file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read standard input")?;
            text
        }
    };
    let tools = match &args.tools {
        Some(path) => parse_tools(
            &std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        )?,
        None => builtin_tools(),
    };
    let mut body = text.trim_end();
    while let Some(stop) = STOP_TOKENS.iter().find(|t| body.ends_with(**t)) {
        body = body[..body.len() - stop.len()].trim_end();
    }
    let start = if args.no_thinking {
        Start::Content
    } else {
        Start::Reasoning
    };
    let turn = parse_all(body, &ToolSchemas::new(&tools), start);
    println!("{}", serde_json::to_string_pretty(&turn)?);
    Ok(ExitCode::SUCCESS)
}
