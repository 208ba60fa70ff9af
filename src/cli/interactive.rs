//! Starting an interactive session behind the interface: load the model and open the sandbox
//! on a background task that reports progress to the screen, then hand the running agent to
//! `tui::run`. Shared by `lilypad [TASK]` and `lilypad demo`.

use crate::agent::ApprovalPolicy;
use crate::config::Settings;
use crate::engine::TemplatedModel;
use crate::launch::{
    self, resume, Beginning, EngineChoice, SessionBuilder, SessionOptions, StartStep,
};
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::tui::{self, PatchSource, SessionLink, SessionOutcome, Startup, TuiOptions};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// How to get the model.
pub(super) enum ModelPlan {
    /// Already built (the demo's scripted model).
    Ready(Arc<TemplatedModel>),
    /// Load it in the background (may take a while: progress is shown).
    Load(EngineChoice),
}

/// Everything needed to start the session.
pub(super) struct Plan {
    pub settings: Settings,
    pub opts: SessionOptions,
    pub model: ModelPlan,
    pub engine_label: EngineChoice,
    pub spec: SandboxSpec,
    pub task: Option<String>,
    pub tui: TuiOptions,
    /// A recorded session to reopen instead of starting a new one.
    pub resume: Option<resume::Recorded>,
    /// Several attempts at the task, side by side (`--attempts N`, N > 1).
    pub attempts: Option<AttemptsChoice>,
}

/// `--attempts N` and the check each attempt runs when it finishes.
#[derive(Debug, Clone)]
pub(super) struct AttemptsChoice {
    pub count: usize,
    pub check: Option<String>,
}

/// What the session left behind, for the summary.
pub(super) struct Finished {
    pub outcome: SessionOutcome,
    /// Session logs (one per attempt with `--attempts`).
    pub log_paths: Vec<PathBuf>,
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

/// Run the session in the interface until the person quits; the sandbox is closed after.
pub(super) async fn run(plan: Plan) -> anyhow::Result<Finished> {
    let (tx, rx) = unbounded_channel();
    let tui_options = plan.tui.clone();
    let starter = tokio::spawn(start(plan, tx));
    let outcome = tui::run(tui_options, rx).await?;
    let started = if starter.is_finished() {
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
type Started = Vec<(Arc<dyn Sandbox>, PathBuf)>;

/// Load, open, start; report each step. Returns the sandboxes and log paths to clean up after.
async fn start(plan: Plan, tx: UnboundedSender<Startup>) -> Option<Started> {
    match try_start(plan, &tx).await {
        Ok(v) => Some(v),
        Err(e) => {
            let _ = tx.send(Startup::Failed(e.into()));
            None
        }
    }
}

async fn try_start(plan: Plan, tx: &UnboundedSender<Startup>) -> anyhow::Result<Started> {
    if let Some(a) = plan.attempts.clone() {
        return start_attempts(plan, a, tx).await;
    }
    let model = match plan.model {
        ModelPlan::Ready(m) => m,
        ModelPlan::Load(choice) => {
            progress(tx, "loading the model", Some(0.0));
            let (settings, ptx) = (plan.settings.clone(), tx.clone());
            tokio::task::spawn_blocking(move || {
                launch::build_model(&choice, &settings, &settings.prompt, move |f| {
                    progress(&ptx, "loading the model", Some(f as f64));
                })
            })
            .await??
        }
    };
    let (spec, resumed) = (plan.spec.clone(), plan.resume.is_some());
    let ptx = tx.clone();
    let report = move |step: StartStep| {
        let line = match step {
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
    // Said once the resumed transcript is shown, so that it comes after it.
    let mut policy_notice = None;
    let (beginning, policy) = match plan.resume {
        Some(rec) => {
            let resumed = rec.policy();
            // `--approve` goes over the resumed policy: that is how it is loosened again.
            if plan.opts.approve.is_none() {
                policy_notice = resumed.notice();
            }
            (Beginning::Resumed(Box::new(rec)), resumed.policy)
        }
        None => (
            Beginning::New {
                task: plan.task.clone().unwrap_or_default(),
            },
            ApprovalPolicy::default(),
        ),
    };
    let started = SessionBuilder::new(
        &plan.settings,
        &plan.opts,
        &plan.engine_label,
        plan.spec.clone(),
    )
    .policy(policy)
    .restore_memory(true)
    .progress(&report)
    .start(model, beginning)
    .await?;
    if let Some(notice) = started.notice {
        let _ = tx.send(Startup::Notice(notice));
    }
    let sandbox = started.sandbox;
    let log_path = started.running.log_path.clone();
    // A resumed session's rules were saved with it; new ones go to the config file.
    let rules = if resumed {
        None
    } else {
        rule_store(&plan.settings, &plan.spec)
    };
    let _ = tx.send(Startup::Ready(SessionLink {
        ops: started.running.ops,
        events: started.running.events,
        patch: Some(Arc::new(SandboxPatch(sandbox.clone()))),
        history: started.earlier,
        rules,
        log: Some(log_path.clone()),
    }));
    if let Some(notice) = policy_notice {
        let _ = tx.send(Startup::Notice(notice));
    }
    Ok(vec![(sandbox, log_path)])
}

/// `--attempts N`: the model once (a scripted engine once per attempt), N sandboxes, N
/// sessions of the task decoded together, each with its own seed, and the check after each.
async fn start_attempts(
    plan: Plan,
    choice: AttemptsChoice,
    tx: &UnboundedSender<Startup>,
) -> anyhow::Result<Started> {
    use crate::launch::attempts;
    let task = plan
        .task
        .clone()
        .ok_or_else(|| anyhow::anyhow!("--attempts needs the task on the command line"))?;
    let models = match plan.model {
        ModelPlan::Ready(m) => vec![m; choice.count],
        ModelPlan::Load(engine) => {
            progress(tx, "loading the model", Some(0.0));
            let (settings, ptx, n) = (plan.settings.clone(), tx.clone(), choice.count);
            tokio::task::spawn_blocking(move || {
                attempts::attempt_models(&engine, &settings, n, move |f| {
                    progress(&ptx, "loading the model", Some(f as f64));
                })
            })
            .await??
        }
    };
    progress(
        tx,
        &format!(
            "starting {} {} sandboxes on copies of {}",
            choice.count,
            plan.spec.kind(),
            plan.spec.repo.display()
        ),
        None,
    );
    let ptx = tx.clone();
    let report = move |line: &str| {
        progress(&ptx, &format!("preparing the sandbox image: {line}"), None);
    };
    let base_seed = plan
        .settings
        .engine
        .sampling
        .seed
        .unwrap_or_else(attempts::fresh_base_seed);
    let started = attempts::start_attempts(
        attempts::AttemptsPlan {
            settings: &plan.settings,
            opts: &plan.opts,
            spec: &plan.spec,
            choice: &plan.engine_label,
            task: &task,
            count: choice.count,
            base_seed,
            policy: attempts_policy(plan.spec.kind()),
        },
        models,
        &report,
    )
    .await?;
    if let Some(first) = started.first() {
        if let Some(notice) = launch::image_notice(first.sandbox.as_ref(), &plan.spec).await {
            let _ = tx.send(Startup::Notice(notice));
        }
    }
    let check = crate::launch::check::CheckSpec::from_settings(
        choice.check.as_deref(),
        &plan.settings.sandbox,
    );
    let mut links = Vec::new();
    let mut cleanup = Vec::new();
    for a in started {
        let running = match &check {
            Some(c) => attempts::with_check(a.running, a.sandbox.clone(), c.clone()),
            None => a.running,
        };
        cleanup.push((a.sandbox.clone(), running.log_path.clone()));
        links.push(tui::AttemptLink {
            link: SessionLink {
                ops: running.ops,
                events: running.events,
                patch: Some(Arc::new(SandboxPatch(a.sandbox.clone()))),
                history: Vec::new(),
                rules: rule_store(&plan.settings, &plan.spec),
                log: Some(running.log_path.clone()),
            },
            seed: a.seed,
        });
    }
    let _ = tx.send(Startup::Attempts(links));
    Ok(cleanup)
}

/// The approval policy attempts start from (`--approve` goes over it): every attempt works on
/// its own copy and nothing reaches the working tree until the reviewer applies a patch, so
/// edits run without asking; commands too in a container, whose network is off, but not on
/// the host.
fn attempts_policy(kind: crate::sandbox::SandboxKind) -> ApprovalPolicy {
    use crate::agent::Policy;
    let mut p = ApprovalPolicy {
        edits: Policy::Auto,
        ..ApprovalPolicy::default()
    };
    if kind != crate::sandbox::SandboxKind::Host {
        p.commands = Policy::Auto;
    }
    p
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

/// The theme from the flag (or `LILYPAD_THEME`), dark by default.
/// Where the command palette's prompt files are: the person's own
/// (`…/lilypad/prompts/` in the config directory), then the repository's
/// (`.lilypad/prompts/`), which override them by name.
pub(super) fn prompt_dirs(repo: &std::path::Path) -> Vec<PathBuf> {
    crate::config::prompts_dir()
        .into_iter()
        .chain([repo.join(".lilypad").join("prompts")])
        .collect()
}

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
) -> anyhow::Result<std::process::ExitCode> {
    use anyhow::Context;
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
    let plan = Plan {
        settings: settings.clone(),
        opts: opts.clone(),
        model: ModelPlan::Load(choice.clone()),
        engine_label: choice,
        spec,
        task: task.clone(),
        tui: TuiOptions {
            theme: theme(theme_name)?,
            repo: Some(repo.clone()),
            task,
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
            prompt_dirs: prompt_dirs(&repo),
            check: settings.sandbox.check.clone(),
        },
        resume: None,
        attempts,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let finished = rt.block_on(run(plan))?;
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    eprintln!("{}", summary(&finished));
    Ok(std::process::ExitCode::SUCCESS)
}
