//! `lilypad tool NAME ARGS.json`: run one tool call in a fresh sandbox (a copy of `--workdir`)
//! and print its result exactly as the model would see it. Changes stay in the copy unless
//! `--apply` is given; their patch goes to stderr.

use crate::protocol::ToolCall;
use crate::sandbox::{self, SandboxKind};
use crate::tools::{ToolLimits, Tools};
use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ToolArgs {
    /// Tool name: Read, Write, Edit, Glob or Bash
    pub name: String,
    /// The call's arguments as a JSON object: a file, `-` for stdin, or inline `{...}`
    pub args: String,
    /// Where the call runs (default docker; host only on request: it contains nothing but
    /// the files), and the sandbox's image and cluster
    #[command(flatten)]
    pub sandbox: super::options::SandboxArgs,
    /// The repository to copy into the sandbox [default: the current directory]
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Apply the call's changes to --workdir afterwards (git apply)
    #[arg(long)]
    pub apply: bool,
}

pub(super) fn run(args: &ToolArgs, settings: &crate::config::Settings) -> anyhow::Result<ExitCode> {
    let text = if args.args == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading arguments from stdin")?;
        s
    } else if args.args.trim_start().starts_with('{') {
        args.args.clone()
    } else {
        std::fs::read_to_string(&args.args).with_context(|| format!("reading {}", args.args))?
    };
    let value: serde_json::Value = serde_json::from_str(&text).context("arguments are not JSON")?;
    let Some(arguments) = value.as_object().cloned() else {
        bail!("arguments must be a JSON object");
    };
    let repo = match &args.workdir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let spec = crate::launch::SandboxOptions::from(&args.sandbox).spec(
        &settings.sandbox,
        &repo,
        SandboxKind::Docker,
    );
    if let sandbox::KindSettings::Host(host) = &spec.settings {
        eprintln!("{}", sandbox::host_notice(host));
    }
    let call = ToolCall {
        id: "call_0".into(),
        name: args.name.clone(),
        arguments,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let sb = sandbox::open_reporting(&spec, &|l| eprintln!("sandbox: {l}")).await?;
        let result = Tools::new(sb.clone(), ToolLimits::default())
            .run(&call)
            .await;
        let mut out = std::io::stdout().lock();
        out.write_all(result.content.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
        let patch = crate::sandbox::workspace::Checkout::of(sb.as_ref())
            .export_patch()
            .await;
        sb.close().await?;
        let patch = patch?;
        if !patch.is_empty() {
            if args.apply {
                sandbox::workspace::apply_to_repository(&repo, &patch)?;
                eprintln!("applied the changes to {}", repo.display());
            } else {
                eprintln!("the call changed files in the sandbox copy (pass --apply to apply):");
                std::io::stderr().write_all(&patch)?;
            }
        }
        Ok(if result.is_error {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    })
}
