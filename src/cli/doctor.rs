//! `lilypad doctor`: what Lilypad would use and whether it will work (see `crate::doctor`).

use crate::config::Settings;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}

pub(super) fn run(_args: &DoctorArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let verdict = crate::doctor::run(settings, &mut std::io::stdout().lock())?;
    Ok(ExitCode::from(verdict.exit_code()))
}
