//! A session behind the interface (`lilypad [TASK]`, `--attempts N`, `resume` on a terminal,
//! `demo`): the model loads and the sessions start through [`SessionBuilder`] on a background
//! task that reports each step to the screen, while `tui::run` draws; the sandboxes are closed
//! once the person quits.
//!
//! Owns: that background start and what the interface is handed (a `tui::SessionLink` per
//! session: operations, events, the session patch, the rules store). Does not own: the flags
//! and the interface's options (`crate::cli`), the policy (`super::policy`), or the sessions'
//! steps (`super::SessionBuilder`).

use super::{
    attempts, build_model, Answerer, Beginning, EngineChoice, LaunchError, SessionBuilder,
    SessionOptions, StartStep, Started,
};
use crate::config::Settings;
use crate::engine::TemplatedModel;
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::tui::{self, PatchSource, SessionLink, SessionOutcome, Startup, TuiOptions};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// How to get the model.
pub enum ModelPlan {
    /// Already built (the demo's scripted model).
    Ready(Arc<TemplatedModel>),
    /// Load it in the background (may take a while: progress is shown).
    Load(EngineChoice),
}

/// Everything needed to start the session.
pub struct Plan {
    pub settings: Settings,
    pub opts: SessionOptions,
    pub model: ModelPlan,
    /// The engine recorded in the session header.
    pub engine_label: EngineChoice,
    pub spec: SandboxSpec,
    /// A new session, a recorded one to reopen, or several attempts side by side.
    pub beginning: Beginning,
    /// With attempts: the check each runs when it finishes (`--check`).
    pub check: Option<String>,
    pub tui: TuiOptions,
}

/// What the session left behind, for the summary.
pub struct Finished {
    pub outcome: SessionOutcome,
    /// Session logs (one per attempt with `--attempts`).
    pub log_paths: Vec<PathBuf>,
}

/// Why the interface could not run.
#[derive(Debug, thiserror::Error)]
pub enum InterfaceError {
    #[error(transparent)]
    Tui(#[from] tui::TuiError),
    /// The task that loads the model stopped without an answer (it panicked).
    #[error("the model-loading task failed: {0}")]
    Loading(#[source] tokio::task::JoinError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

struct SandboxPatch(Arc<dyn Sandbox>);

#[async_trait::async_trait]
impl PatchSource for SandboxPatch {
    async fn export(&self) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(crate::sandbox::workspace::Checkout::of(self.0.as_ref())
            .export_patch()
            .await?)
    }
}

/// Rules saved to the config file for the session's repository.
struct ConfigRules {
    config: PathBuf,
    repo: PathBuf,
}

impl tui::RuleStore for ConfigRules {
    fn save_command_prefix(
        &self,
        prefix: &str,
    ) -> Result<PathBuf, Box<dyn std::error::Error + Send + Sync>> {
        crate::config::append_command_rule(&self.config, &self.repo, prefix)?;
        Ok(self.config.clone())
    }
}

fn rule_store(settings: &Settings, spec: &SandboxSpec) -> Option<Arc<dyn tui::RuleStore>> {
    let config = settings.source.clone()?;
    Some(Arc::new(ConfigRules {
        config,
        repo: spec.repo.clone(),
    }))
}

/// Run the session in the interface until the person quits; the sandboxes are closed after.
pub async fn run(plan: Plan) -> Result<Finished, InterfaceError> {
    let (tx, rx) = unbounded_channel();
    let tui_options = plan.tui.clone();
    let starter = tokio::spawn(start(plan, tx));
    let outcome = tui::run(tui_options, rx).await?;
    let started = if starter.is_finished() {
        // A start that failed was shown in the interface already.
        starter.await.ok().flatten()
    } else {
        starter.abort();
        None
    };
    let mut log_paths = Vec::new();
    for (sandbox, log) in started.unwrap_or_default() {
        let _ = sandbox.close().await;
        log_paths.push(log);
    }
    Ok(Finished { outcome, log_paths })
}

fn progress(tx: &UnboundedSender<Startup>, label: &str, fraction: Option<f64>) {
    let _ = tx.send(Startup::Progress {
        label: label.to_string(),
        fraction,
    });
}

/// The sandboxes to close and the session logs, once the interface is done.
type Opened = Vec<(Arc<dyn Sandbox>, PathBuf)>;

/// Load, open, start; report each step, and a failure to the interface.
async fn start(plan: Plan, tx: UnboundedSender<Startup>) -> Option<Opened> {
    match try_start(plan, &tx).await {
        Ok(v) => Some(v),
        Err(e) => {
            let _ = tx.send(Startup::Failed(Box::new(e)));
            None
        }
    }
}

async fn try_start(plan: Plan, tx: &UnboundedSender<Startup>) -> Result<Opened, InterfaceError> {
    let attempts = match &plan.beginning {
        Beginning::Attempts { count, .. } => Some(*count),
        _ => None,
    };
    let count = attempts.unwrap_or(1);
    let models = match plan.model {
        ModelPlan::Ready(m) => vec![m],
        ModelPlan::Load(choice) => {
            progress(tx, "loading the model", Some(0.0));
            let (settings, ptx) = (plan.settings.clone(), tx.clone());
            let report = move |f: f32| progress(&ptx, "loading the model", Some(f64::from(f)));
            tokio::task::spawn_blocking(move || match attempts {
                None => build_model(&choice, &settings, &settings.prompt, report).map(|m| vec![m]),
                Some(n) => attempts::attempt_models(&choice, &settings, n, report),
            })
            .await
            .map_err(InterfaceError::Loading)??
        }
    };
    let (spec, ptx) = (plan.spec.clone(), tx.clone());
    let report = move |step: StartStep| {
        let line = match step {
            StartStep::OpeningSandbox if count > 1 => format!(
                "starting {count} {} sandboxes on copies of {}",
                spec.kind(),
                spec.repo.display()
            ),
            StartStep::OpeningSandbox => format!(
                "starting the {} sandbox on a copy of {}",
                spec.kind(),
                spec.repo.display()
            ),
            StartStep::Image(line) => format!("preparing the sandbox image: {line}"),
            StartStep::RestoringFiles => "restoring the session's changes in the sandbox".into(),
            StartStep::RestoringMemory => "restoring the model's memory".into(),
        };
        progress(&ptx, &line, None);
    };
    // A resumed session's rules were saved with it; new ones go to the config file.
    let rules = match &plan.beginning {
        Beginning::Resumed(_) => None,
        _ => rule_store(&plan.settings, &plan.spec),
    };
    let started = SessionBuilder::new(
        &plan.settings,
        &plan.opts,
        &plan.engine_label,
        plan.spec.clone(),
    )
    .answerer(Answerer::Person)
    .restore_memory(true)
    .progress(&report)
    .start_all(models, plan.beginning)
    .await?;
    let check =
        super::check::CheckSpec::from_settings(plan.check.as_deref(), &plan.settings.sandbox);
    hand_over(started, attempts.is_some(), check, rules, tx)
}

/// Hand the started sessions to the interface: one session as it is, attempts side by side
/// (each with the check after its tasks); notices after the transcript they follow.
fn hand_over(
    started: Vec<Started>,
    as_attempts: bool,
    check: Option<super::check::CheckSpec>,
    rules: Option<Arc<dyn tui::RuleStore>>,
    tx: &UnboundedSender<Startup>,
) -> Result<Opened, InterfaceError> {
    let mut opened = Vec::new();
    let mut links = Vec::new();
    let mut later = Vec::new();
    for s in started {
        if let Some(notice) = s.notice {
            let _ = tx.send(Startup::Notice(notice));
        }
        later.extend(s.policy_notice);
        let running = match (&check, as_attempts) {
            (Some(c), true) => attempts::with_check(s.running, s.sandbox.clone(), c.clone()),
            _ => s.running,
        };
        opened.push((s.sandbox.clone(), running.log_path.clone()));
        let link = SessionLink {
            ops: running.ops,
            events: running.events,
            patch: Some(Arc::new(SandboxPatch(s.sandbox.clone()))),
            history: s.earlier,
            rules: rules.clone(),
            log: Some(running.log_path.clone()),
        };
        links.push((link, s.attempt.map_or(0, |(_, seed)| seed)));
    }
    if as_attempts {
        let links = links
            .into_iter()
            .map(|(link, seed)| tui::AttemptLink { link, seed })
            .collect();
        let _ = tx.send(Startup::Attempts(links));
    } else {
        for (link, _) in links {
            let _ = tx.send(Startup::Ready(link));
        }
    }
    for notice in later {
        // Said once the resumed transcript is shown, so that it comes after it.
        let _ = tx.send(Startup::Notice(notice));
    }
    Ok(opened)
}
