//! `lilypad sessions`: the recorded sessions, oldest first.

use super::options::SessionArgs;
use crate::launch::SessionOptions;
use crate::session::list_sessions;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}

pub(super) fn run(args: &SessionsArgs) -> anyhow::Result<ExitCode> {
    let dir = crate::launch::session_dir(&SessionOptions::from(&args.session))?;
    let list = list_sessions(&dir)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        println!("no sessions in {}", dir.display());
    }
    for s in &list {
        let task: String = s
            .task
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        println!(
            "{}  {}  {:>3} turns  {:<12}  {}  {}",
            s.id,
            s.created,
            s.turns,
            s.last_finish.as_deref().unwrap_or("unfinished"),
            s.repo.display(),
            task
        );
    }
    Ok(ExitCode::SUCCESS)
}
