//! Putting one session together, the same way for the interface and the headless runner:
//! open the sandbox (or take a pod made ahead of need), say what its image lacks, restore a
//! resumed session (its patch, its turn records, the model's memory), build the agent's
//! configuration, write the session header with its provenance (or reopen the log being
//! continued), and start the agent ([`super::start`]).
//!
//! Owns: the order of those steps and what is cleaned up when one fails (a sandbox opened for
//! a session that then cannot start is closed). Does not own: the policy each caller chooses
//! (approval policy, whether the task is sent now or by the interface, the engine sequence),
//! showing progress (callers pass a function), or consuming events (the interface draws them;
//! `crate::headless` collects them into an outcome).

use super::resume::{self, Recorded};
use super::{
    agent_config, header, image_notice, session_dir, start, EngineChoice, LaunchError, Running,
    SessionOptions,
};
use crate::agent::ApprovalPolicy;
use crate::config::Settings;
use crate::engine::{SequenceId, TemplatedModel};
use crate::protocol::{Event, Op};
use crate::sandbox::{self, Sandbox, SandboxExt, SandboxPool, SandboxSpec};
use crate::session::{self, Provenance, SessionLog};
use std::path::Path;
use std::sync::Arc;

/// Facts about the run that the session header records beside what the session knows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFacts {
    /// The model with its hash (computed once per batch).
    pub model: Option<crate::session::ModelIdentity>,
    pub preset: Option<String>,
    pub attempt: Option<u32>,
    /// The limits the run was made under (recorded in the provenance).
    pub limits: Option<crate::session::RunLimits>,
}

/// How a session begins.
pub enum Beginning {
    /// A new session of `task` (recorded in its header; empty for none yet).
    New { task: String },
    /// A recorded session continued: its patch and turn records restored in the fresh
    /// sandbox, its conversation rebuilt, its log appended to; an unfinished task goes on.
    Resumed(Box<Recorded>),
}

/// What a step of the start-up tells its caller.
#[derive(Debug, Clone, PartialEq)]
pub enum StartStep {
    /// The sandbox is being opened (the image built or set up first when the settings ask).
    OpeningSandbox,
    /// A line from the image's build or setup.
    Image(String),
    /// The resumed session's files go back into the sandbox.
    RestoringFiles,
    /// The resumed session's model memory is being read back.
    RestoringMemory,
}

/// A started session and what its caller needs beside the running agent.
pub struct Started {
    pub running: Running,
    pub sandbox: Arc<dyn Sandbox>,
    /// What the sandbox image lacks for this repository (shown at start), if anything.
    pub notice: Option<String>,
    /// The recorded events of a resumed session (empty for a new one).
    pub earlier: Vec<Event>,
    /// The provenance the session header records.
    pub provenance: Option<Provenance>,
    /// The system prompt the conversation started with.
    pub system_prompt: String,
}

/// The choices one session is started with (see the module docs).
pub struct SessionBuilder<'a> {
    settings: &'a Settings,
    opts: &'a SessionOptions,
    choice: &'a EngineChoice,
    spec: SandboxSpec,
    policy: ApprovalPolicy,
    sequence: SequenceId,
    facts: RunFacts,
    send_task: bool,
    restore_memory: bool,
    pool: Option<&'a SandboxPool>,
    progress: Option<&'a (dyn Fn(StartStep) + Send + Sync)>,
    tokens: Option<crate::agent::TokenLog>,
}

impl<'a> SessionBuilder<'a> {
    /// A session on `spec`'s sandbox with the model `choice` names (recorded in the header),
    /// the default approval policy, engine sequence 0, and the task left to the caller.
    pub fn new(
        settings: &'a Settings,
        opts: &'a SessionOptions,
        choice: &'a EngineChoice,
        spec: SandboxSpec,
    ) -> Self {
        Self {
            settings,
            opts,
            choice,
            spec,
            policy: ApprovalPolicy::default(),
            sequence: SequenceId::DEFAULT,
            facts: RunFacts::default(),
            send_task: false,
            restore_memory: false,
            pool: None,
            progress: None,
            tokens: None,
        }
    }

    /// Keep every model turn's tokens and their log-probabilities in `log` (rollouts).
    pub fn tokens(mut self, log: Option<crate::agent::TokenLog>) -> Self {
        self.tokens = log;
        self
    }

    /// The approval policy the session starts from (`--approve` goes over it).
    pub fn policy(mut self, policy: ApprovalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The engine sequence of the conversation (a batch gives each task its own).
    pub fn sequence(mut self, sequence: SequenceId) -> Self {
        self.sequence = sequence;
        self
    }

    /// Facts the header's provenance records beside what the session knows.
    pub fn facts(mut self, facts: RunFacts) -> Self {
        self.facts = facts;
        self
    }

    /// Send a new session's task as its first message at once (the headless runner does; the
    /// interface sends it itself).
    pub fn send_task(mut self, send: bool) -> Self {
        self.send_task = send;
        self
    }

    /// Read a resumed session's saved model memory back (where the engine is the session's
    /// own; a batch's shared engine keeps its sequences).
    pub fn restore_memory(mut self, restore: bool) -> Self {
        self.restore_memory = restore;
        self
    }

    /// Take the sandbox from pods made ahead of need (a Kubernetes batch).
    pub fn pool(mut self, pool: Option<&'a SandboxPool>) -> Self {
        self.pool = pool;
        self
    }

    /// Told each step of the start-up.
    pub fn progress(mut self, progress: &'a (dyn Fn(StartStep) + Send + Sync)) -> Self {
        self.progress = Some(progress);
        self
    }

    pub fn spec(&self) -> &SandboxSpec {
        &self.spec
    }

    fn step(&self, step: StartStep) {
        if let Some(p) = self.progress {
            p(step);
        }
    }

    /// Open the sandbox and start the session on `model`.
    pub async fn start(
        self,
        model: Arc<TemplatedModel>,
        beginning: Beginning,
    ) -> Result<Started, LaunchError> {
        if !self.spec.repo.is_dir() {
            return Err(LaunchError::NotADirectory(self.spec.repo.clone()));
        }
        self.step(StartStep::OpeningSandbox);
        let report = |line: &str| self.step(StartStep::Image(line.to_string()));
        let sandbox = sandbox::open_from(&self.spec, self.pool, &report).await?;
        let notice = image_notice(sandbox.as_ref(), &self.spec).await;
        match self.begin(model, beginning, sandbox.clone()).await {
            Ok((running, earlier, provenance, system_prompt)) => Ok(Started {
                running,
                sandbox,
                notice,
                earlier,
                provenance,
                system_prompt,
            }),
            Err(e) => {
                // The start-up error is the one to report; a sandbox that fails to close is
                // swept by the next session.
                let _ = sandbox.close().await;
                Err(e)
            }
        }
    }

    async fn begin(
        &self,
        model: Arc<TemplatedModel>,
        beginning: Beginning,
        sandbox: Arc<dyn Sandbox>,
    ) -> Result<(Running, Vec<Event>, Option<Provenance>, String), LaunchError> {
        match beginning {
            Beginning::Resumed(rec) => {
                self.step(StartStep::RestoringFiles);
                resume::restore_patch(sandbox.as_ref(), &rec.log_path.with_extension("patch"))
                    .await?;
                resume::seed_turns(sandbox.as_ref(), &rec.log_path).await?;
                if self.restore_memory {
                    self.load_memory(&model, &rec.log_path).await;
                }
                let history = session::rebuild(&rec.header.system_prompt, &rec.events);
                let mut config = agent_config(
                    self.settings,
                    self.opts,
                    &self.settings.prompt,
                    self.policy,
                    &rec.header.session_id,
                )?;
                config.sequence = self.sequence;
                config.tokens.clone_from(&self.tokens);
                config.instructions = super::instructions::for_resumed(
                    self.settings,
                    self.opts,
                    &self.spec.repo,
                    &history.messages,
                )?;
                let log = resume::reopen_log(&rec)?;
                let rec = *rec;
                let running = start(model, sandbox, config, history, log);
                if !rec.finished() {
                    let _ = running.ops.send(Op::Continue);
                }
                Ok((
                    running,
                    rec.events,
                    rec.header.provenance,
                    rec.header.system_prompt,
                ))
            }
            Beginning::New { task } => {
                let session_id = session::new_session_id();
                let mut config = agent_config(
                    self.settings,
                    self.opts,
                    &self.settings.prompt,
                    self.policy,
                    &session_id,
                )?;
                config.sequence = self.sequence;
                config.tokens.clone_from(&self.tokens);
                let docs = super::instructions::read(self.settings, self.opts, &self.spec.repo)?;
                config.instructions = docs.as_ref().map(super::instructions::for_agent);
                let mut header = header(&config, &self.spec, self.choice, &task);
                if let Some(d) = &docs {
                    header.project_docs = super::instructions::records(d);
                }
                if let Some(p) = &mut header.provenance {
                    p.image_digest = sandbox.image_digest();
                    if self.facts.model.is_some() {
                        p.model.clone_from(&self.facts.model);
                    }
                    p.preset.clone_from(&self.facts.preset);
                    p.attempt = self.facts.attempt;
                    p.limits.clone_from(&self.facts.limits);
                }
                let log = SessionLog::create(&session_dir(self.opts)?, &header)?;
                let system_prompt = config.system_prompt.clone();
                let running = start(model, sandbox, config, Default::default(), log);
                if self.send_task && !task.is_empty() {
                    let _ = running.ops.send(Op::UserMessage { text: task });
                }
                Ok((running, Vec::new(), header.provenance, system_prompt))
            }
        }
    }

    /// The saved model memory of the session at `log`, when there is one; a memory that does
    /// not load costs only time (the conversation is read again).
    async fn load_memory(&self, model: &Arc<TemplatedModel>, log: &Path) {
        let state = log.with_extension("state");
        if !state.exists() {
            return;
        }
        self.step(StartStep::RestoringMemory);
        let m = model.clone();
        let loaded = tokio::task::spawn_blocking(move || m.load_state(&state).map(|_| ()))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        if let Err(e) = loaded {
            tracing::warn!(
                "the saved model memory was not used ({e}); the conversation is read again"
            );
        }
    }
}
