//! `lilypad pull ORG/NAME[:TAG]`: a GGUF repository's file into the Hugging Face cache, or a
//! safetensors checkpoint's files then their conversion ([`super::pull_checkpoint`]), with
//! one line of progress per file (and a bar on a terminal).

use crate::config::Settings;
use crate::hub::{self, ModelName, Progress, RepoKind};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The model: ORG/NAME[:TAG] (the tag picks the GGUF file, e.g. Q4_K_M; none: Q4_K_M,
    /// then Q8_0, then the first; for a safetensors checkpoint the tag is the type)
    pub name: String,
    /// The branch, tag or commit to pull
    #[arg(long, default_value = "main")]
    pub revision: String,
    /// For a safetensors checkpoint: the type to convert to (q8_0, q4_k_m, bf16, ...; default:
    /// the one `lilypad doctor` says fits this machine)
    #[arg(long = "type")]
    pub ty: Option<String>,
}

fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / 1e6)
}

/// What a pull prints as it goes: a line per file, a bar on a terminal.
pub(super) fn reporter(name: &ModelName, revision: &str) -> impl FnMut(Progress) {
    let terminal = std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let (name, revision) = (name.clone(), revision.to_string());
    move |p: Progress| match p {
        Progress::Resolved { commit, files } => {
            eprintln!("{name} at {revision} ({commit}): {}", files.join(", "));
        }
        Progress::Cached { file, path } => {
            eprintln!("{file}: already in the cache ({})", path.display());
        }
        Progress::Started {
            file,
            size,
            resume_from,
        } => {
            if resume_from > 0 {
                eprintln!("{file}: resuming after {}", megabytes(resume_from));
            }
            if terminal {
                let b = ProgressBar::new(size.unwrap_or(0));
                if let Ok(style) = ProgressStyle::with_template(
                    "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta} left",
                ) {
                    b.set_style(style);
                }
                b.set_message(file);
                bar = Some(b);
            }
        }
        Progress::Bytes { done, .. } => {
            if let Some(b) = &bar {
                b.set_position(done);
            }
        }
        Progress::Finished {
            file,
            received,
            seconds,
            verified,
        } => {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            let rate = received as f64 / seconds.max(1e-3) / 1e6;
            let check = if verified { ", sha256 checked" } else { "" };
            eprintln!(
                "{file}: {} in {seconds:.1} s ({rate:.1} MB/s){check}",
                megabytes(received)
            );
        }
    }
}

pub(super) fn run(args: &PullArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let name = ModelName::parse(&args.name)?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let plan = rt.block_on(hub::plan(&settings.hub, &name, &args.revision))?;
    if plan.kind == RepoKind::Checkpoint {
        return super::pull_checkpoint::run(&rt, args, settings, &name, &plan);
    }
    if args.ty.is_some() {
        anyhow::bail!(
            "--type converts a safetensors checkpoint; {} holds GGUF files: choose one with {}:TAG",
            plan.repo,
            plan.repo
        );
    }
    let mut report = reporter(&name, &args.revision);
    let files = rt.block_on(hub::fetch(&settings.hub, &plan, &plan.files, &mut report))?;
    if let Some(first) = files.first() {
        if plan.offline {
            eprintln!("HF_HUB_OFFLINE is set: using the cached copy");
        }
        println!("{}", first.display());
        eprintln!("use it with: lilypad --model {name}");
    }
    Ok(ExitCode::SUCCESS)
}
