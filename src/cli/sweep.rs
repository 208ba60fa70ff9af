//! `lilypad sweep`: remove what killed Lilypad processes left behind (containers, pods and
//! their ConfigMaps, found by Lilypad's labels; host-side workspaces), see
//! `crate::sandbox::sweep`.

use super::options::SandboxArgs;
use crate::config::Settings;
use crate::sandbox::sweep::SweepError;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Where to look: `--kubeconfig`, `--kube-context` and `--kube-namespace` for the
    /// cluster (default: the config file's `[sandbox.kube]`, then KUBECONFIG)
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

pub(super) fn run(_args: &SweepArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new()?;
    let here = std::env::current_dir()?;
    let swept = rt.block_on(crate::sandbox::sweep::sweep_all(
        &settings.sandbox,
        &here,
        true,
    ));
    let line = |what: &str, r: &Result<usize, SweepError>| match r {
        Ok(n) => println!("{what}: removed {n}"),
        Err(e) => println!(
            "{what}: not swept ({})",
            e.to_string().lines().next().unwrap_or("")
        ),
    };
    line("docker containers", &swept.docker);
    line("kubernetes sessions", &swept.kube);
    println!("workspaces: removed {}", swept.workspaces);
    Ok(ExitCode::SUCCESS)
}
