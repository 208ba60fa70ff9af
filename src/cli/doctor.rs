//! `lilypad doctor`.
use crate::config::Settings;
use std::process::ExitCode;
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}
pub fn run(_args: &DoctorArgs, _s: &Settings) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet")
}
