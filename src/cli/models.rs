//! `lilypad models`: the GGUF models in the Hugging Face cache (name, revision, file, size,
//! path), whoever pulled them.

use crate::config::Settings;
use crate::hub::Cache;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ModelsArgs {}

pub(super) fn run(_args: &ModelsArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let root = settings
        .hub
        .cache_dir
        .clone()
        .ok_or(crate::hub::HubError::NoCache)?;
    let models = Cache { root: root.clone() }.list()?;
    if models.is_empty() {
        eprintln!(
            "no models in {}: get one with `lilypad pull ORG/NAME[:TAG]`",
            root.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<40} {:<14} {:<40} {:>10}  path",
        "name", "revision", "file", "size"
    );
    for m in models {
        let revision = if m.refs.is_empty() {
            m.commit.chars().take(12).collect()
        } else {
            m.refs.join(",")
        };
        println!(
            "{:<40} {:<14} {:<40} {:>10}  {}",
            m.repo,
            revision,
            m.file,
            format!("{:.1} MB", m.size as f64 / 1e6),
            m.path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
