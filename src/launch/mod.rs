//! Putting a session together from settings: the model (in-process, scripted, or remote), the
//! sandbox on a copy of the repository, the agent, and the session log that records every
//! event before passing it on. Every command that runs a session (the interface, `run` and a
//! batch's attempts, `resume`, `--attempts`, `demo`) starts it through one door,
//! [`SessionBuilder`], so they behave the same; the approval policy it starts with is chosen
//! in [`policy`]. Does not own consuming the events (the interface draws them; `crate::headless`
//! collects them into an outcome) or reading flags (`crate::cli`).

pub mod attempts;
mod beginning;
pub mod check;
pub mod describe;
pub mod devices;
mod instructions;
pub mod interface;
mod options;
pub mod policy;
pub mod provenance;
mod recorder;
pub mod resume;
pub mod serving;
mod session;

pub use beginning::{Beginning, RunFacts, StartStep, Started};
pub use instructions::for_resumed as resumed_instructions;
pub use options::{EngineFlag, SandboxOptions, SessionOptions, UnknownEngine};
pub use policy::Answerer;
pub use session::SessionBuilder;

use crate::agent::{self, AgentConfig, ApprovalPolicy};
use crate::config::{ModelSource, Settings};
use crate::engine::remote::{RemoteEngine, RemoteSettings};
use crate::engine::{EngineHandle, SamplingParams, ScriptEngine, TemplatedModel};
use crate::prompt::{PromptSettings, Renderer};
use crate::protocol::{Event, Op};
use crate::sandbox::{self, Sandbox, SandboxKind, SandboxSpec};
use crate::session::{Rebuilt, SessionHeader, SessionLog};
use crate::tools::Tools;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use thiserror::Error;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

#[derive(Debug, Error)]
pub enum LaunchError {
    #[error("no model: pass --model F.gguf or a pulled ORG/NAME[:TAG], set LILYPAD_MODEL, or use --engine script:FILE (see `lilypad doctor`)")]
    NoModel,
    /// `--model ORG/NAME[:TAG]` that is not in the Hugging Face cache.
    #[error("{0}")]
    NotPulled(String),
    #[error(transparent)]
    Remote(#[from] crate::engine::remote::RemoteError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Script(#[from] crate::engine::script::ScriptError),
    #[error(transparent)]
    Prompt(#[from] crate::prompt::PromptError),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// A digest lock that could not be read, or that does not pin every task's image.
    #[error(transparent)]
    ImageLock(#[from] crate::sandbox::image::lock::LockError),
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// A resumed session whose header records an approval policy that cannot be read.
    #[error("session log {}: the approval policy in its header cannot be read: {source}", log.display())]
    HeaderPolicy {
        log: PathBuf,
        #[source]
        source: crate::agent::PolicyParseError,
    },
    /// A saved session patch that exists but cannot be read: what the session changed is
    /// unknown, which is not the same as nothing.
    #[error("cannot read the saved session patch {}: {source}", path.display())]
    SavedPatch {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// [`SessionBuilder::start`] was given a beginning of several sessions.
    #[error("{0} attempts start {0} sessions: start them with SessionBuilder::start_all")]
    ManySessions(u32),
    /// A session was started with no model to run it on.
    #[error("no model was given to start the session with")]
    NothingToStart,
    #[error("cannot find the sessions directory; pass --session-dir")]
    NoSessionDir,
    #[error("cannot resume: {0}")]
    Resume(String),
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
}

/// How the model is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineChoice {
    Llama(PathBuf),
    Script(PathBuf),
    /// An OpenAI-compatible server (`--endpoint URL`; the rest from `[remote]`).
    Remote(String),
}

impl EngineChoice {
    /// The engine `--engine` names (already checked when the flags were read), with the
    /// model file or endpoint the settings give it.
    pub fn from_options(opts: &SessionOptions, settings: &Settings) -> Result<Self, LaunchError> {
        Self::from_flag(opts.engine.as_ref(), settings)
    }

    /// The engine `flag` names (none: the configured one), with the model file or endpoint
    /// the settings give it.
    pub fn from_flag(flag: Option<&EngineFlag>, settings: &Settings) -> Result<Self, LaunchError> {
        match (flag, &settings.remote.endpoint) {
            (Some(EngineFlag::Script(path)), _) => Ok(Self::Script(path.clone())),
            // An endpoint, from the flag or the config file, replaces the in-process engine.
            (None | Some(EngineFlag::Remote), Some(url)) => Ok(Self::Remote(url.clone())),
            (Some(EngineFlag::Remote), None) => {
                Err(crate::engine::remote::RemoteError::NoEndpoint.into())
            }
            (None | Some(EngineFlag::Llama), _) => match settings.model_source() {
                ModelSource::Configured(p)
                | ModelSource::Discovered(p)
                | ModelSource::Pulled { path: p, .. }
                | ModelSource::OnlyPulled { path: p, .. } => Ok(Self::Llama(p)),
                ModelSource::NotPulled { why, .. } => Err(LaunchError::NotPulled(why)),
                ModelSource::SeveralPulled { names } => Err(LaunchError::NotPulled(
                    crate::config::NoModel::Several(names.join(", ")).to_string(),
                )),
                ModelSource::Missing { .. } => Err(LaunchError::NoModel),
            },
        }
    }

    /// The form recorded in session headers.
    pub fn label(&self) -> String {
        match self {
            Self::Llama(p) => format!("llama:{}", p.display()),
            Self::Script(p) => format!("script:{}", p.display()),
            Self::Remote(url) => format!("remote:{url}"),
        }
    }

    pub fn parse_label(label: &str) -> Option<Self> {
        let (kind, rest) = label.split_once(':')?;
        match kind {
            "llama" => Some(Self::Llama(rest.into())),
            "script" => Some(Self::Script(rest.into())),
            "remote" => Some(Self::Remote(rest.into())),
            _ => None,
        }
    }
}

/// Build the model. `progress` receives model-loading progress (0 to 1).
pub fn build_model(
    choice: &EngineChoice,
    settings: &Settings,
    prompt: &PromptSettings,
    progress: impl FnMut(f32) + Send + 'static,
) -> Result<Arc<TemplatedModel>, LaunchError> {
    Ok(Arc::new(match choice {
        EngineChoice::Llama(path) => {
            let engine = EngineHandle::load(path, &settings.engine, progress)?;
            let template = prompt.choose_template(engine.model().chat_template.clone())?;
            TemplatedModel::new(Arc::new(engine), Renderer::new(template, prompt)?)
        }
        EngineChoice::Script(path) => {
            let mut engine = ScriptEngine::from_file(path)?;
            engine.piece_delay = std::time::Duration::from_millis(settings.script.piece_delay_ms);
            TemplatedModel::new(Arc::new(engine), Renderer::builtin(prompt)?)
        }
        EngineChoice::Remote(url) => {
            let engine = RemoteEngine::new(&RemoteSettings {
                endpoint: Some(url.clone()),
                tokenizer: crate::engine::remote::find_tokenizer(
                    settings.remote.tokenizer.as_deref(),
                    settings.engine.model.as_deref(),
                ),
                ..settings.remote.clone()
            })?;
            // Asks the server now, so that an unreachable server or a refused key fails here
            // and the status line names the model from the start.
            engine.connect()?;
            TemplatedModel::chat(Arc::new(engine))
        }
    }))
}

/// The sandbox specification from the settings' `[sandbox]` section and the options.
pub fn sandbox_spec(
    settings: &Settings,
    opts: &SessionOptions,
    repo: &Path,
    default: SandboxKind,
) -> SandboxSpec {
    opts.sandbox.spec(&settings.sandbox, repo, default)
}

/// The sessions directory in force.
pub fn session_dir(opts: &SessionOptions) -> Result<PathBuf, LaunchError> {
    opts.session_dir
        .clone()
        .or_else(crate::config::sessions_dir)
        .ok_or(LaunchError::NoSessionDir)
}

/// Agent limits from settings and options, with the approval policy the session starts with
/// ([`policy::starting_policy`]).
pub fn agent_config(
    settings: &Settings,
    opts: &SessionOptions,
    prompt: &PromptSettings,
    policy: ApprovalPolicy,
    session_id: &str,
) -> Result<AgentConfig, LaunchError> {
    let mut c = AgentConfig::new(
        prompt.system_prompt()?,
        prompt.tools()?,
        SamplingParams::from_settings(&settings.engine.sampling),
    );
    c.context_limit = settings.engine.ctx;
    c.max_turn_tokens = settings.engine.max_turn_tokens;
    if let Some(n) = opts.max_steps {
        c.max_steps = n;
    }
    if let Some(s) = opts.wall_time {
        c.wall_time = Some(std::time::Duration::from_secs(s));
    }
    c.step_mode = opts.step;
    c.policy = policy;
    c.session_id = session_id.to_string();
    let repo = match &opts.repo {
        Some(r) => r.clone(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    c.command_rules = settings.command_rules_for(&repo);
    let (default_timeout, max_timeout) = settings.sandbox.command_timeouts();
    if let Some(t) = max_timeout {
        c.tool_limits.max_timeout = t;
    }
    if let Some(t) = default_timeout {
        c.tool_limits.default_timeout = t.min(c.tool_limits.max_timeout);
    }
    c.harness = prompt.harness()?.label();
    if prompt.system_prompt.is_some()
        || prompt.system_prompt_file.is_some()
        || prompt.tools_file.is_some()
    {
        c.harness.push_str(" with overrides");
    }
    Ok(c)
}

/// A running session: send operations, receive events (already logged), and the sandbox
/// for the final patch.
pub struct Running {
    pub ops: UnboundedSender<Op>,
    pub events: UnboundedReceiver<Event>,
    pub sandbox: Arc<dyn Sandbox>,
    pub session_id: String,
    pub log_path: PathBuf,
    pub agent: tokio::task::JoinHandle<()>,
}

/// Start a session: the agent on `model` and `sandbox`, events logged to `log` before they
/// are passed on. `history` resumes a conversation (empty for a new session), with the calls
/// its last task left unanswered.
pub fn start(
    model: Arc<TemplatedModel>,
    sandbox: Arc<dyn Sandbox>,
    config: AgentConfig,
    history: Rebuilt,
    log: SessionLog,
) -> Running {
    let session_id = config.session_id.clone();
    tracing::info!(
        session = %session_id,
        log = %log.path().display(),
        model = %model.describe(),
        "session started"
    );
    let tools = Tools::new(sandbox.clone(), config.tool_limits.clone());
    let sequence = config.sequence;
    let handle = agent::spawn_continuing(
        model.clone(),
        tools,
        config,
        history.messages,
        history.pending,
        history.turns,
    );
    let log_path = log.path().to_path_buf();
    let events = recorder::record(handle.events, log, sandbox.clone(), model, sequence);
    Running {
        ops: handle.ops,
        events,
        sandbox,
        session_id,
        log_path,
        agent: handle.task,
    }
}

/// Open a sandbox on `repo` (must be a directory), building or setting up its image first
/// when the settings ask (progress on stderr, for commands without an interface).
pub async fn open_sandbox(spec: &SandboxSpec) -> Result<Arc<dyn Sandbox>, LaunchError> {
    open_sandbox_reporting(spec, &|line| eprintln!("sandbox: {line}")).await
}

/// [`open_sandbox`], telling `progress` about the image's build and setup.
pub async fn open_sandbox_reporting(
    spec: &SandboxSpec,
    progress: sandbox::image::Progress<'_>,
) -> Result<Arc<dyn Sandbox>, LaunchError> {
    if !spec.repo.is_dir() {
        return Err(LaunchError::NotADirectory(spec.repo.clone()));
    }
    Ok(sandbox::open_reporting(spec, progress).await?)
}

/// What the sandbox lacks for this repository (bash, git, and the toolchains its files ask
/// for), as a notice to show at start; `None` when nothing is missing. The host sandbox is
/// not checked (it is this machine), nor is a sandbox whose check cannot run.
pub async fn image_notice(sandbox: &dyn Sandbox, spec: &SandboxSpec) -> Option<String> {
    use sandbox::image::check;
    if spec.kind() == SandboxKind::Host {
        return None;
    }
    let names = match check::top_level(&spec.repo) {
        Ok(names) => names,
        Err(e) => {
            tracing::warn!(error = %e, "the sandbox image check did not run");
            return None;
        }
    };
    let missing = match check::check(sandbox, &names).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, "the sandbox image check did not run");
            return None;
        }
    };
    check::advice(&missing, &spec.image_label())
}

/// A header for a new session of `config` (its id, system prompt, policy and harness) on
/// `spec`'s repository and sandbox, with the provenance known at start
/// ([`provenance::basic`]: the model without its hash, sampling, seed, image, harness hash).
pub fn header(
    config: &AgentConfig,
    spec: &SandboxSpec,
    engine: &EngineChoice,
    task: &str,
) -> SessionHeader {
    SessionHeader {
        lilypad: env!("CARGO_PKG_VERSION").to_string(),
        session_id: config.session_id.clone(),
        created: crate::session::now_rfc3339(),
        repo: spec.repo.clone(),
        sandbox: format!("{:?}", spec.kind()).to_lowercase(),
        engine: engine.label(),
        task: task.to_string(),
        system_prompt: config.system_prompt.clone(),
        policy: Some(config.policy.spec()),
        harness: config.harness.clone(),
        provenance: Some(provenance::basic(config, spec, engine)),
        parent: None,
        parent_turn: None,
        project_docs: Vec::new(),
    }
}
