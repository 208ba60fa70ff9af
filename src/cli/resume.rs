//! `lilypad resume [ID|--last]`: continue a recorded session headless, either where it stopped
//! (an unfinished task) or with a follow-up `--message`.

use super::options::SessionArgs;
use crate::config::Settings;
use crate::headless::{headless_policy, render_line};
use crate::launch::{self, resume, SessionOptions};
use crate::protocol::{Event, Op};
use anyhow::Context;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Session id (or a prefix of it); default with --last: the newest
    pub id: Option<String>,
    /// Resume the newest session
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// A follow-up instruction (needed when the session's task has finished)
    #[arg(long)]
    pub message: Option<String>,
    /// Print events as JSON lines
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}

pub(super) fn run(args: &ResumeArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    if args.id.is_none() && !args.last {
        anyhow::bail!("give a session id (see `lilypad sessions`) or --last");
    }
    let mut opts = SessionOptions::from(&args.session);
    let rec = resume::find(&opts, args.id.as_deref())?;
    let op = match (&args.message, rec.finished()) {
        (Some(m), _) => Op::UserMessage { text: m.clone() },
        (None, false) => Op::Continue,
        (None, true) => anyhow::bail!(
            "session {} has finished its task; give a follow-up with --message TEXT",
            rec.header.session_id
        ),
    };
    let choice = match &opts.engine {
        Some(_) => launch::EngineChoice::from_options(&opts, settings)?,
        None => rec
            .engine()
            .context("the session log does not say which engine it used; pass --engine")?,
    };
    opts.sandbox.kind.get_or_insert(rec.sandbox_kind());
    let spec = launch::sandbox_spec(settings, &opts, &rec.header.repo, rec.sandbox_kind());
    let rt = tokio::runtime::Runtime::new()?;
    let model = launch::build_model(&choice, settings, &settings.prompt, |_| {})?;
    let state = rec.log_path.with_extension("state");
    if state.exists() {
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
        let history = crate::session::rebuild_messages(&rec.header.system_prompt, &rec.events);
        let policy = headless_policy(spec.kind, opts.allow_host);
        let config = launch::agent_config(
            settings,
            &opts,
            &settings.prompt,
            policy,
            &rec.header.session_id,
        )?;
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
