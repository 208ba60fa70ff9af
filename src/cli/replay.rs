//! `lilypad replay ID`: step through a recorded session in the interface, turn by turn, with
//! the same views as the live session (diffs included). Reads the session log; sends nothing.

use crate::session;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Session id (see `lilypad sessions`) or the path of a session log (.jsonl)
    pub session: String,
    /// Directory of session logs (default: the platform data dir's lilypad/sessions)
    #[arg(long, env = "LILYPAD_SESSION_DIR")]
    pub session_dir: Option<PathBuf>,
    /// Colour theme: dark, light, or a theme file
    #[arg(long, env = "LILYPAD_THEME")]
    pub theme: Option<String>,
}

pub(super) fn run(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let direct = PathBuf::from(&args.session);
    let path = if direct.is_file() {
        direct
    } else {
        let dir = args
            .session_dir
            .clone()
            .or_else(crate::config::sessions_dir)
            .context("cannot find the sessions directory; pass --session-dir")?;
        dir.join(format!("{}.jsonl", args.session))
    };
    let (_header, lines) =
        session::read_log(&path).with_context(|| format!("reading {}", path.display()))?;
    let events = lines.into_iter().map(|(_, e)| e).collect();
    let theme = super::interactive::theme(args.theme.as_deref())?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(crate::tui::replay(theme, events))?;
    Ok(ExitCode::SUCCESS)
}
