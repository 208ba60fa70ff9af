//! `lilypad resume [ID|--last]`: continue a recorded session. On a terminal it reopens the
//! interface with the transcript rebuilt, in the session's own sandbox kind and approval
//! policy, asking again for any approval that was pending; with `--json` or without a terminal
//! it runs headless, with the session's policy where nobody can be asked (`ask` becomes
//! `deny`), never a looser one. `--at-turn K` forks a new session from turn K of the old one
//! (conversation and files of that turn) and continues that one instead.

use super::interactive;
use super::options::SessionArgs;
use crate::config::Settings;
use crate::headless::render_line;
use crate::launch::interface::{ModelPlan, Plan};
use crate::launch::{self, resume, Answerer, Beginning, SessionBuilder, SessionOptions, StartStep};
use crate::protocol::{Event, Op};
use crate::sandbox::SandboxSpec;
use anyhow::Context;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Session id (or a prefix of it); default with --last: the newest
    pub id: Option<String>,
    /// Resume the newest session
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// A follow-up instruction (needed headless when the session's task has finished)
    #[arg(long)]
    pub message: Option<String>,
    /// Fork a new session from the end of turn K of this one (its conversation and files),
    /// leaving the old session as it is
    #[arg(long, value_name = "K")]
    pub at_turn: Option<u32>,
    /// Print events as JSON lines (headless)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}

pub(super) fn run(
    args: &ResumeArgs,
    settings: &Settings,
    theme: Option<&str>,
) -> anyhow::Result<ExitCode> {
    if args.id.is_none() && !args.last {
        anyhow::bail!("give a session id (see `lilypad sessions`) or --last");
    }
    let mut opts = SessionOptions::from(&args.session);
    let rec = resume::find(&opts, args.id.as_deref())?;
    // A header whose policy cannot be read fails here, before any model loads.
    rec.policy()?;
    let rec = match args.at_turn {
        Some(turn) => {
            let forked = resume::fork(&rec, turn)?;
            eprintln!(
                "session {} forked from {} at turn {turn}",
                forked.header.session_id, rec.header.session_id
            );
            forked
        }
        None => rec,
    };
    let choice = match &opts.engine {
        Some(_) => launch::EngineChoice::from_options(&opts, settings)?,
        None => rec
            .engine()
            .context("the session log does not say which engine it used; pass --engine")?,
    };
    opts.sandbox.kind = Some(rec.sandbox_kind());
    let spec = launch::sandbox_spec(settings, &opts, &rec.header.repo, rec.sandbox_kind());
    if uses_interface(args) {
        return in_interface(args, rec, opts, choice, spec, settings, theme);
    }
    headless(args, rec, opts, choice, spec, settings)
}

/// Whether this resume opens the interface: on a terminal, unless `--json`.
pub(super) fn uses_interface(args: &ResumeArgs) -> bool {
    !args.json && std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Reopen the review in the interface.
fn in_interface(
    args: &ResumeArgs,
    rec: resume::Recorded,
    opts: SessionOptions,
    choice: launch::EngineChoice,
    spec: SandboxSpec,
    settings: &Settings,
    theme: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let mut notices = Vec::new();
    if spec.kind() == crate::sandbox::SandboxKind::Host {
        notices.push(crate::sandbox::HOST_WARNING.to_string());
    }
    let repo = rec.header.repo.clone();
    // A follow-up given on the command line is sent once the session is back.
    let tui = interactive::tui_options(
        settings,
        &repo,
        args.message.clone(),
        theme,
        opts.step,
        notices,
    )?;
    let plan = Plan {
        settings: settings.clone(),
        opts,
        model: ModelPlan::Load(choice.clone()),
        engine_label: choice,
        spec,
        beginning: Beginning::Resumed(Box::new(rec)),
        check: None,
        tui,
    };
    interactive::open(plan)?;
    Ok(ExitCode::SUCCESS)
}

/// Continue without an interface, printing events.
fn headless(
    args: &ResumeArgs,
    rec: resume::Recorded,
    opts: SessionOptions,
    choice: launch::EngineChoice,
    spec: SandboxSpec,
    settings: &Settings,
) -> anyhow::Result<ExitCode> {
    if args.message.is_none() && rec.finished() {
        anyhow::bail!(
            "session {} has finished its task; give a follow-up with --message TEXT",
            rec.header.session_id
        );
    }
    let rt = tokio::runtime::Runtime::new()?;
    let model = launch::build_model(&choice, settings, &settings.prompt, |_| {})?;
    let report = |step: StartStep| match step {
        StartStep::Image(line) => eprintln!("sandbox: {line}"),
        StartStep::RestoringMemory => eprintln!("restoring the model's memory"),
        _ => {}
    };
    let code = rt.block_on(async {
        let started = SessionBuilder::new(settings, &opts, &choice, spec)
            .answerer(Answerer::Nobody {
                allow_host: opts.allow_host,
            })
            .follow_up(args.message.clone())
            .restore_memory(true)
            .progress(&report)
            .start(model, Beginning::Resumed(Box::new(rec)))
            .await?;
        if let Some(notice) = &started.notice {
            eprintln!("warning: {notice}");
        }
        if let Some(note) = &started.policy_notice {
            eprintln!("note: {note}");
        }
        let mut running = started.running;
        let mut out = std::io::stdout();
        let mut reason = None;
        while let Some(e) = running.events.recv().await {
            let line = if args.json {
                serde_json::to_string(&e)?
            } else {
                render_line(&e)
            };
            if !line.is_empty() {
                let _ = writeln!(out, "{line}");
            }
            if let Event::TaskFinished { reason: r, .. } = e {
                reason = Some(r);
                let _ = running.ops.send(Op::Shutdown);
            }
        }
        let _ = running.agent.await;
        let _ = started.sandbox.close().await;
        Ok::<_, anyhow::Error>(reason.map_or(1, |r| r.exit_code()))
    })?;
    Ok(ExitCode::from(code))
}
