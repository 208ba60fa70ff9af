//! `lilypad models`: the GGUF models in the Hugging Face cache (name, revision, file, size,
//! path), whoever pulled them; `lilypad models rm NAME[:TAG]` removes one and says what it
//! freed.

use crate::config::Settings;
use crate::hub::{Cache, HubError, ModelName};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub action: Option<ModelsAction>,
}

#[derive(Debug, clap::Subcommand)]
pub enum ModelsAction {
    /// Remove a pulled model from the cache: ORG/NAME:TAG its file, ORG/NAME everything of
    /// the repository (blobs another snapshot still uses stay)
    Rm {
        /// ORG/NAME[:TAG]
        name: String,
    },
}

fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / 1e6)
}

/// Bytes as a person reads them: exact under a megabyte.
fn amount(n: u64) -> String {
    if n < 1_000_000 {
        format!("{n} bytes")
    } else {
        megabytes(n)
    }
}

pub(super) fn run(args: &ModelsArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let root = settings.hub.cache_dir.clone().ok_or(HubError::NoCache)?;
    let cache = Cache { root: root.clone() };
    if let Some(ModelsAction::Rm { name }) = &args.action {
        return remove(settings, &ModelName::parse(name)?);
    }
    let mut models = cache.list()?;
    if let Some(dir) = &settings.hub.converted_dir {
        models.extend(crate::hub::Store { root: dir.clone() }.list(&cache)?);
    }
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
            m.name(),
            revision,
            m.file,
            megabytes(m.size),
            m.path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(settings: &Settings, name: &ModelName) -> anyhow::Result<ExitCode> {
    let removed = crate::hub::remove(&settings.hub, name)?;
    for f in &removed.files {
        eprintln!("removed {}", f);
    }
    if !removed.refs.is_empty() {
        eprintln!(
            "removed refs {} (no snapshot left for them)",
            removed.refs.join(", ")
        );
    }
    let gone = if removed.repo_gone {
        format!("; {} is gone from the cache", name.repo)
    } else {
        String::new()
    };
    println!(
        "{name}: {} file(s) and {} blob(s) removed, {} freed{gone}",
        removed.files.len(),
        removed.blobs,
        amount(removed.bytes)
    );
    Ok(ExitCode::SUCCESS)
}
