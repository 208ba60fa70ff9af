//! `lilypad [TASK]` (and `--attempts N`): the interface's options from the flags and the
//! settings, and the line printed when the interface closes. Shared with `resume` and `demo`,
//! which open the interface too. The session itself starts in `crate::launch::interface`.

use crate::config::Settings;
use crate::launch::interface::{self, Finished, ModelPlan, Plan};
use crate::launch::{self, attempts, Beginning, EngineChoice, SessionOptions};
use crate::tui::{self, TuiOptions};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `--attempts N` and the check each attempt runs when it finishes.
#[derive(Debug, Clone)]
pub(super) struct AttemptsChoice {
    pub count: u32,
    pub check: Option<String>,
}

/// The interface's options for a session in `repo`, from the settings.
pub(super) fn tui_options(
    settings: &Settings,
    repo: &Path,
    task: Option<String>,
    theme_name: Option<&str>,
    step: bool,
    notices: Vec<String>,
) -> anyhow::Result<TuiOptions> {
    Ok(TuiOptions {
        theme: theme(theme_name)?,
        repo: Some(repo.to_path_buf()),
        task,
        step_mode: step,
        notices,
        reasoning: settings.interface.reasoning,
        keys: settings.interface.keys,
        diff: settings.interface.diff,
        highlight_limit: settings.interface.highlight_limit,
        screen: settings.interface.screen(),
        notify_command: settings.interface.notify_command.clone(),
        notify: (
            settings.interface.notify_method,
            settings.interface.notify.clone(),
        ),
        history: crate::config::history_file(),
        prompt_dirs: prompt_dirs(repo),
        check: settings.sandbox.check.clone(),
    })
}

/// Run `plan` in the interface and print the summary when it closes.
pub(super) fn open(plan: Plan) -> anyhow::Result<Finished> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let finished = rt.block_on(interface::run(plan))?;
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    eprintln!("{}", summary(&finished));
    Ok(finished)
}

/// The line printed after the screen is restored.
pub(super) fn summary(f: &Finished) -> String {
    use crate::tui::PatchDecision as P;
    let patch = match &f.outcome.patch {
        P::Applied { repo } => format!("the session patch was applied to {}", repo.display()),
        P::Saved { path } => format!("the session patch was saved to {}", path.display()),
        P::Discarded => "the session patch was discarded".into(),
        P::Empty => "the session changed nothing".into(),
        P::Undecided => "the session patch was not applied".into(),
    };
    let log = match &f.log_paths[..] {
        [] => String::new(),
        [one] => format!("; log: {}", one.display()),
        many => format!(
            "; logs: {}",
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let id = if f.outcome.session_id.is_empty() {
        String::new()
    } else {
        format!("session {}: ", f.outcome.session_id)
    };
    format!("{id}{patch}{log}")
}

/// Where the command palette's prompt files are: the person's own
/// (`…/lilypad/prompts/` in the config directory), then the repository's
/// (`.lilypad/prompts/`), which override them by name.
pub(super) fn prompt_dirs(repo: &Path) -> Vec<PathBuf> {
    crate::config::prompts_dir()
        .into_iter()
        .chain([repo.join(".lilypad").join("prompts")])
        .collect()
}

/// The theme from the flag (or `LILYPAD_THEME`), dark by default.
pub(super) fn theme(name: Option<&str>) -> anyhow::Result<tui::Theme> {
    Ok(tui::Theme::load(name.unwrap_or("dark"))?)
}

/// `lilypad [TASK]`: an interactive session in the repository (the current directory unless
/// `--repo`), in a Docker sandbox unless `--sandbox` says otherwise.
pub(super) fn run_default(
    task: Option<String>,
    opts: &SessionOptions,
    theme_name: Option<&str>,
    settings: &Settings,
    attempts: Option<AttemptsChoice>,
) -> anyhow::Result<ExitCode> {
    let repo = match &opts.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let repo =
        std::fs::canonicalize(&repo).with_context(|| format!("opening {}", repo.display()))?;
    let choice = EngineChoice::from_options(opts, settings)?;
    let spec = launch::sandbox_spec(settings, opts, &repo, crate::sandbox::SandboxKind::Docker);
    let mut notices = Vec::new();
    if let crate::sandbox::KindSettings::Host(host) = &spec.settings {
        notices.push(crate::sandbox::host_notice(host));
    }
    let (beginning, check) = match attempts {
        Some(a) => (
            Beginning::Attempts {
                task: task
                    .clone()
                    .context("--attempts needs the task on the command line")?,
                count: a.count,
                base_seed: settings
                    .engine
                    .sampling
                    .seed
                    .unwrap_or_else(attempts::fresh_base_seed),
            },
            a.check,
        ),
        None => (
            Beginning::New {
                task: task.clone().unwrap_or_default(),
            },
            None,
        ),
    };
    let plan = Plan {
        settings: settings.clone(),
        opts: opts.clone(),
        model: ModelPlan::Load(choice.clone()),
        engine_label: choice,
        spec,
        beginning,
        check,
        tui: tui_options(settings, &repo, task, theme_name, opts.step, notices)?,
    };
    open(plan)?;
    Ok(ExitCode::SUCCESS)
}
