//! `lilypad harness import PATH`: write a harness profile (system prompt and tools) from the
//! user's own copy of Leaf, so the model reads the exact text it was trained with. The text is
//! read from `frognano/harness/leaf/tools.py` as Python literals (never executed) and stays on
//! this machine, in the config directory.

use crate::prompt::{find_leaf_tools, import_leaf, Harness};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct HarnessArgs {
    #[command(subcommand)]
    pub command: HarnessCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum HarnessCommand {
    /// Read Leaf's system prompt and tool schemas from a checkout, an installed package
    /// (site-packages/frognano) or tools.py itself, and write a profile
    Import {
        /// The Leaf checkout, installed package directory or tools.py
        path: PathBuf,
        /// The profile's name
        #[arg(long, default_value = "leaf")]
        name: String,
        /// Where to write it [default: the config directory's lilypad/harness/NAME.toml]
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
}

pub(super) fn run(args: &HarnessArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        HarnessCommand::Import { path, name, out } => {
            let tools_py = find_leaf_tools(path)?;
            let profile = import_leaf(&tools_py, name)?;
            let out = match out {
                Some(p) => p.clone(),
                None => crate::config::harness_dir()
                    .context("no config directory on this platform: pass --out FILE")?
                    .join(format!("{name}.toml")),
            };
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&out, &profile).with_context(|| format!("writing {}", out.display()))?;
            let h = Harness::load(&out)?;
            println!(
                "wrote {}: {} tools, from {}",
                out.display(),
                h.tools.len(),
                tools_py.display()
            );
            println!("profile {}", h.label());
            println!(
                "use it with --harness {} or `harness = \"{}\"` under [prompt] in the config file",
                out.display(),
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
