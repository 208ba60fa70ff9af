//! `lilypad info F.gguf`.
use std::process::ExitCode;
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// GGUF file to describe
    pub file: std::path::PathBuf,
}
pub fn run(_args: &InfoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet")
}
