//! Command-line parsing and dispatch: one file per subcommand, each a thin shell over the
//! library. No logic lives here beyond turning arguments into settings and printing results.
//! `anyhow` is allowed in this module (the binary's edge).

mod args;
mod bench;
mod convert;
mod demo;
mod doctor;
mod engine_args;
mod export;
mod generate;
mod harness;
mod info;
mod interactive;
mod models;
mod options;
mod parse;
mod process;
mod prompt;
mod pull;
mod pull_checkpoint;
mod quant_check;
mod quantize;
mod replay;
mod resume;
mod run;
mod run_args;
mod run_batch;
mod serve;
mod sessions;
mod sweep;
mod tasks;
mod tasks_filter;
mod tasks_mine;
mod tasks_mutate;
mod tasks_out;
mod tiny_model;
mod tool;

pub use args::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

use crate::config::Settings;

/// Parse the process arguments, run the subcommand, and turn its outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if process::ends_quietly_on_a_closed_pipe(cli.command.as_ref()) {
        process::restore_sigpipe();
    }
    // Settings first, so that the config file's `[log]` level applies to the diagnostics.
    let mut overrides: crate::config::Overrides = (&cli.engine).into();
    overrides.sandbox = sandbox_flags(&cli).into();
    if let Some(Command::Run(a)) = &cli.command {
        overrides
            .sandbox
            .image_registry
            .clone_from(&a.image_registry);
        overrides.sandbox.pull_secrets.clone_from(&a.pull_secret);
    }
    // The repository's own `.lilypad/config.toml` is a layer of the settings.
    overrides.repo = session_repo(&cli)
        .cloned()
        .or_else(|| std::env::current_dir().ok());
    let mut settings = match Settings::load(&overrides) {
        Ok(s) => s,
        Err(err) => {
            eprintln!("error: {err:#}");
            return ExitCode::from(1);
        }
    };
    if cli.no_alt_screen {
        settings.interface.alternate_screen = false;
    }
    // The interface owns the screen: its diagnostics go to a file instead of over it.
    let draws = match &cli.command {
        None | Some(Command::Demo(_)) | Some(Command::Replay(_)) => true,
        Some(Command::Resume(r)) => resume::uses_interface(r),
        _ => false,
    };
    let to = if draws {
        process::LogTo::File(crate::config::log_file())
    } else {
        process::LogTo::Stderr
    };
    process::init_tracing(to, &settings.log.filter());
    match run(cli, settings) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli, settings: Settings) -> anyhow::Result<ExitCode> {
    let Some(command) = cli.command else {
        let attempts =
            (cli.attempts > 1 || cli.check.is_some()).then(|| interactive::AttemptsChoice {
                count: u32::from(cli.attempts),
                check: cli.check.clone(),
            });
        return interactive::run_default(
            cli.task,
            &(&cli.session).into(),
            cli.theme.as_deref(),
            &settings,
            attempts,
        );
    };
    match command {
        Command::Demo(args) => demo::run(&args, &settings),
        Command::Replay(args) => replay::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Doctor(args) => doctor::run(&args, &settings),
        Command::Prompt(args) => prompt::run(&args, &settings),
        Command::Parse(args) => parse::run(&args),
        Command::Tool(args) => tool::run(&args, &settings),
        Command::TinyModel(args) => tiny_model::run(&args),
        Command::Generate(args) => generate::run(&args, &settings),
        Command::Run(args) => run::run(&args, &settings, &cli.engine),
        Command::Sessions(args) => sessions::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Resume(args) => resume::run(&args, &settings, cli.theme.as_deref()),
        Command::Convert(args) => convert::run(&args),
        Command::Quantize(args) => quantize::run(&args),
        Command::QuantCheck(args) => quant_check::run(&args, &settings),
        Command::Serve(args) => serve::run(&args, &settings),
        Command::Bench(args) => bench::run(&args, &settings),
        Command::Harness(args) => harness::run(&args),
        Command::Sweep(args) => sweep::run(&args, &settings),
        Command::Pull(args) => pull::run(&args, &settings),
        Command::Models(args) => models::run(&args, &settings),
        Command::Tasks(args) => tasks::run(&args, &settings),
    }
}

/// The sandbox flags of the command being run (they go into the settings' `[sandbox]`).
fn sandbox_flags(cli: &Cli) -> &options::SandboxArgs {
    match &cli.command {
        None => &cli.session.sandbox,
        Some(Command::Run(a)) => &a.session.sandbox,
        Some(Command::Resume(a)) => &a.session.sandbox,
        Some(Command::Tool(a)) => &a.sandbox,
        Some(Command::Bench(a)) => &a.sandbox,
        Some(Command::Sweep(a)) => &a.sandbox,
        Some(Command::Tasks(a)) => match &a.command {
            tasks::TasksCommand::Mine(m) => &m.sandbox,
            tasks::TasksCommand::Mutate(m) => &m.sandbox,
            tasks::TasksCommand::Filter(f) => &f.session.sandbox,
        },
        Some(_) => &cli.session.sandbox,
    }
}

/// The `--repo` of the command being run, if it takes one and was given it.
fn session_repo(cli: &Cli) -> Option<&std::path::PathBuf> {
    match &cli.command {
        None => cli.session.repo.as_ref(),
        Some(Command::Run(a)) => a.session.repo.as_ref(),
        Some(Command::Resume(a)) => a.session.repo.as_ref(),
        Some(Command::Tasks(a)) => match &a.command {
            tasks::TasksCommand::Mine(m) => Some(&m.repo),
            tasks::TasksCommand::Mutate(m) => Some(&m.repo),
            tasks::TasksCommand::Filter(f) => f.session.repo.as_ref(),
        },
        Some(_) => None,
    }
}
