//! `lilypad resume [ID|--last]`: continue a recorded session. On a terminal it reopens the
//! interface with the transcript rebuilt, in the session's own sandbox kind and approval
//! policy, asking again for any approval that was pending; with `--json` or without a terminal
//! it runs headless, with the session's policy where nobody can be asked (`ask` becomes
//! `deny`), never a looser one. `--at-turn K` forks a new session from turn K of the old one
//! (conversation and files of that turn) and continues that one instead.

use super::interactive::{self, ModelPlan, Plan};
use super::options::SessionArgs;
use crate::config::Settings;
use crate::headless::render_line;
use crate::launch::{self, resume, SessionOptions};
use crate::protocol::{Event, Op};
use crate::sandbox::SandboxSpec;
use crate::tui::TuiOptions;
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
    let plan = Plan {
        settings: settings.clone(),
        opts: opts.clone(),
        model: ModelPlan::Load(choice.clone()),
        engine_label: choice,
        spec,
        task: None,
        tui: TuiOptions {
            theme: interactive::theme(theme)?,
            repo: Some(repo.clone()),
            // A follow-up given on the command line is sent once the session is back.
            task: args.message.clone(),
            step_mode: opts.step,
            notices,
            reasoning: settings.interface.reasoning,
            keys: settings.interface.keys,
            screen: settings.interface.screen(),
            notify_command: settings.interface.notify_command.clone(),
            notify: (
                settings.interface.notify_method,
                settings.interface.notify.clone(),
            ),
            history: crate::config::history_file(),
            prompt_dirs: interactive::prompt_dirs(&repo),
            check: settings.sandbox.check.clone(),
        },
        resume: Some(rec),
        attempts: None,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let finished = rt.block_on(interactive::run(plan))?;
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    eprintln!("{}", interactive::summary(&finished));
    Ok(ExitCode::SUCCESS)
}

/// Continue without an interface, printing events.
fn headless(
    args: &ResumeArgs,
    rec: resume::Recorded,
    mut opts: SessionOptions,
    choice: launch::EngineChoice,
    spec: SandboxSpec,
    settings: &Settings,
) -> anyhow::Result<ExitCode> {
    let op = match (&args.message, rec.finished()) {
        (Some(m), _) => Op::UserMessage { text: m.clone() },
        (None, false) => Op::Continue,
        (None, true) => anyhow::bail!(
            "session {} has finished its task; give a follow-up with --message TEXT",
            rec.header.session_id
        ),
    };
    // The recorded policy, minus asking: an `--approve` flag cannot loosen it here.
    opts.approve = None;
    let resumed = rec.policy();
    if let Some(d) = resumed.declined {
        eprintln!(
            "note: the approval policy was loosened to `{}` during the session; a headless resume keeps `{}` (and asks nobody)",
            d.short_spec(),
            resumed.policy.short_spec()
        );
    }
    let policy = resumed.policy.without_asking();
    let rt = tokio::runtime::Runtime::new()?;
    let model = launch::build_model(&choice, settings, &settings.prompt, |_| {})?;
    let state = rec.log_path.with_extension("state");
    if state.exists() && args.at_turn.is_none() {
        match model.load_state(&state) {
            Ok(Some(n)) => eprintln!("restored {n} tokens of the model's memory"),
            Ok(None) => {}
            Err(e) => eprintln!(
                "note: the saved model memory was not used ({e}); the conversation is read again"
            ),
        }
    }
    let code = rt.block_on(async {
        let sandbox = launch::open_sandbox(&spec).await?;
        resume::restore_patch(sandbox.as_ref(), &rec.log_path.with_extension("patch")).await?;
        resume::seed_turns(sandbox.as_ref(), &rec.log_path).await?;
        let history = crate::session::rebuild(&rec.header.system_prompt, &rec.events);
        let mut config = launch::agent_config(
            settings,
            &opts,
            &settings.prompt,
            policy,
            &rec.header.session_id,
        )?;
        config.instructions =
            launch::resumed_instructions(settings, &opts, &spec.repo, &history.messages)?;
        let log = resume::reopen_log(&rec)?;
        let mut running = launch::start(model, sandbox.clone(), config, history, log);
        let _ = running.ops.send(op);
        let mut out = std::io::stdout();
        let mut reason = None;
        while let Some(e) = running.events.recv().await {
            let line = if args.json {
                serde_json::to_string(&e).unwrap_or_default()
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
        let _ = sandbox.close().await;
        Ok::<_, launch::LaunchError>(reason.map_or(1, |r| r.exit_code()))
    })?;
    Ok(ExitCode::from(code))
}
