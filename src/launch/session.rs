//! Putting sessions together, the same way for every command that runs one (the interface,
//! `run` and a batch's attempts, `resume` with or without the interface, `--attempts`, `demo`):
//! choose the starting approval policy ([`super::policy`]), open the sandbox (or take a pod
//! made ahead of need), say what its image lacks, restore a resumed session (its patch, its
//! turn records, the model's memory), build the agent's configuration, write the session
//! header with its provenance (or reopen the log being continued), and start the agent
//! ([`super::start`]). Attempts are new sessions numbered from 1, each with the seed and
//! engine sequence [`super::attempts`] gives its number; what a session begins from is
//! [`super::beginning`].
//!
//! Owns: the order of those steps and what is cleaned up when one fails (a sandbox opened for
//! a session that then cannot start is closed). Does not own: who answers approvals and
//! whether the task is sent now or by the interface (callers say), showing progress (callers
//! pass a function), or consuming events (the interface draws them; `crate::headless`
//! collects them into an outcome).

use super::attempts::{attempt_seed, attempt_sequence, share_first_prompt};
use super::beginning::{Beginning, Numbering, RunFacts, StartStep, Started};
use super::policy::{starting_policy, Answerer};
use super::resume::{self, Recorded};
use super::{
    agent_config, header, image_notice, session_dir, start, EngineChoice, LaunchError,
    SessionOptions,
};
use crate::agent::{AgentConfig, ApprovalPolicy};
use crate::config::Settings;
use crate::engine::{SequenceId, TemplatedModel};
use crate::protocol::Op;
use crate::sandbox::{self, Sandbox, SandboxExt, SandboxPool, SandboxSpec};
use crate::session::{self, SessionLog};
use std::path::Path;
use std::sync::Arc;

/// The choices one session is started with (see the module docs).
pub struct SessionBuilder<'a> {
    settings: &'a Settings,
    opts: &'a SessionOptions,
    choice: &'a EngineChoice,
    spec: SandboxSpec,
    answerer: Answerer,
    follow_up: Option<String>,
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
    /// answered by a person, on engine sequence 0, with the task left to the caller.
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
            answerer: Answerer::Person,
            follow_up: None,
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

    /// Who answers approvals: the starting policy follows from it
    /// ([`super::policy::starting_policy`]).
    pub fn answerer(mut self, answerer: Answerer) -> Self {
        self.answerer = answerer;
        self
    }

    /// A message a resumed session is sent at once, instead of going on with an unfinished
    /// task (a headless `resume --message`).
    pub fn follow_up(mut self, message: Option<String>) -> Self {
        self.follow_up = message;
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

    /// Start the one session of a new or resumed beginning on `model` (a single attempt
    /// too); several attempts go through [`Self::start_all`].
    pub async fn start(
        self,
        model: Arc<TemplatedModel>,
        beginning: Beginning,
    ) -> Result<Started, LaunchError> {
        if let Beginning::Attempts { count, .. } = &beginning {
            if *count > 1 {
                return Err(LaunchError::ManySessions(*count));
            }
        }
        let mut all = self.start_all(vec![model], beginning).await?;
        all.pop().ok_or(LaunchError::NothingToStart)
    }

    /// Start every session `beginning` asks for: one for a new or resumed session, `count`
    /// for attempts, session `i` on `models[i]` (the last model serves the rest, so one
    /// shared engine is given once). The starting policy is chosen, and a resumed log's
    /// checked, before any sandbox opens.
    pub async fn start_all(
        self,
        models: Vec<Arc<TemplatedModel>>,
        beginning: Beginning,
    ) -> Result<Vec<Started>, LaunchError> {
        if !self.spec.repo.is_dir() {
            return Err(LaunchError::NotADirectory(self.spec.repo.clone()));
        }
        let chosen = starting_policy(
            self.answerer,
            &beginning,
            self.spec.kind(),
            self.opts.approve.as_ref(),
        )?;
        let count = match &beginning {
            Beginning::Attempts { count, .. } => (*count).max(1),
            _ => 1,
        };
        // Session `i` on `models[i]`, the last model serving the rest.
        let models: Vec<_> = (0..count as usize)
            .filter_map(|i| models.get(i).or(models.last()).cloned())
            .collect();
        let sandboxes = self.open_sandboxes(count).await?;
        let notice = match sandboxes.first() {
            Some(s) => image_notice(s.as_ref(), &self.spec).await,
            None => None,
        };
        let begun = match (
            models.first().cloned(),
            sandboxes.first().cloned(),
            beginning,
        ) {
            (Some(model), Some(sandbox), Beginning::Resumed(rec)) => self
                .resumed(model, *rec, chosen.policy, sandbox)
                .await
                .map(|s| vec![s]),
            (Some(_), Some(_), Beginning::New { task }) => {
                self.new_sessions(models, &task, &sandboxes, chosen.policy, Numbering::Plain)
                    .await
            }
            (
                Some(_),
                Some(_),
                Beginning::Attempts {
                    task, base_seed, ..
                },
            ) => {
                let numbering = Numbering::Set { base_seed };
                self.new_sessions(models, &task, &sandboxes, chosen.policy, numbering)
                    .await
            }
            (
                Some(_),
                Some(_),
                Beginning::Attempt {
                    task,
                    number,
                    base_seed,
                },
            ) => {
                let numbering = Numbering::One { number, base_seed };
                self.new_sessions(models, &task, &sandboxes, chosen.policy, numbering)
                    .await
            }
            // No model or no sandbox: nothing to start (callers give at least one model).
            _ => Err(LaunchError::NothingToStart),
        };
        match begun {
            Ok(mut all) => {
                if let Some(first) = all.first_mut() {
                    first.notice = notice;
                    first.policy_notice = chosen.notice;
                }
                Ok(all)
            }
            Err(e) => {
                // The start-up error is the one to report; a sandbox that fails to close is
                // swept by the next session.
                for s in &sandboxes {
                    let _ = s.close().await;
                }
                Err(e)
            }
        }
    }

    /// `count` sandboxes: the first alone (so that an image is built once), then the rest
    /// together; all closed again when one fails.
    async fn open_sandboxes(&self, count: u32) -> Result<Vec<Arc<dyn Sandbox>>, LaunchError> {
        self.step(StartStep::OpeningSandbox);
        let report = |line: &str| self.step(StartStep::Image(line.to_string()));
        let first = sandbox::open_from(&self.spec, self.pool, &report).await?;
        let rest = (1..count).map(|_| sandbox::open_from(&self.spec, self.pool, &report));
        match futures_util::future::try_join_all(rest).await {
            Ok(more) => Ok(std::iter::once(first).chain(more).collect()),
            Err(e) => {
                let _ = first.close().await;
                Err(e.into())
            }
        }
    }

    /// The session `rec` recorded, continued in `sandbox`.
    async fn resumed(
        &self,
        model: Arc<TemplatedModel>,
        rec: Recorded,
        policy: ApprovalPolicy,
        sandbox: Arc<dyn Sandbox>,
    ) -> Result<Started, LaunchError> {
        self.step(StartStep::RestoringFiles);
        resume::restore_patch(sandbox.as_ref(), &rec.log_path.with_extension("patch")).await?;
        resume::seed_turns(sandbox.as_ref(), &rec.log_path).await?;
        if self.restore_memory {
            self.load_memory(&model, &rec.log_path).await;
        }
        let history = session::rebuild(&rec.header.system_prompt, &rec.events);
        let mut config = self.config(policy, &rec.header.session_id, self.sequence, None)?;
        config.instructions = super::instructions::for_resumed(
            self.settings,
            self.opts,
            &self.spec.repo,
            &history.messages,
        )?;
        let log = resume::reopen_log(&rec)?;
        let running = start(model, sandbox.clone(), config, history, log);
        let op = match &self.follow_up {
            Some(text) => Some(Op::UserMessage { text: text.clone() }),
            None => (!rec.finished()).then_some(Op::Continue),
        };
        if let Some(op) = op {
            let _ = running.ops.send(op);
        }
        Ok(Started {
            running,
            sandbox,
            notice: None,
            earlier: rec.events,
            provenance: rec.header.provenance,
            system_prompt: rec.header.system_prompt,
            policy_notice: None,
            attempt: None,
        })
    }

    /// New sessions of `task`, one per sandbox; attempts are seeded (and a set of them
    /// sequenced) by their number, a set's first prompt read once where they share an engine.
    async fn new_sessions(
        &self,
        models: Vec<Arc<TemplatedModel>>,
        task: &str,
        sandboxes: &[Arc<dyn Sandbox>],
        policy: ApprovalPolicy,
        numbering: Numbering,
    ) -> Result<Vec<Started>, LaunchError> {
        let dir = session_dir(self.opts)?;
        let docs = super::instructions::read(self.settings, self.opts, &self.spec.repo)?;
        let mut configs = Vec::with_capacity(sandboxes.len());
        let mut numbers = Vec::with_capacity(sandboxes.len());
        for n in (1..).take(sandboxes.len()) {
            let (sequence, number) = match numbering {
                Numbering::Plain => (self.sequence, None),
                Numbering::Set { base_seed } => (attempt_sequence(n), Some((n, base_seed))),
                Numbering::One { number, base_seed } => (self.sequence, Some((number, base_seed))),
            };
            let seed = number.map(|(n, base)| attempt_seed(base, n));
            let mut config = self.config(policy, &session::new_session_id(), sequence, seed)?;
            config.instructions = docs.as_ref().map(super::instructions::for_agent);
            configs.push(config);
            numbers.push(number.map(|(n, _)| n));
        }
        if matches!(numbering, Numbering::Set { .. }) {
            share_first_prompt(&models, &configs, task).await;
        }
        let mut out = Vec::with_capacity(configs.len());
        for ((number, config), (model, sandbox)) in numbers
            .into_iter()
            .zip(configs)
            .zip(models.into_iter().zip(sandboxes))
        {
            let attempt = number.map(|n| (n, config.sampling.seed));
            let mut header = header(&config, &self.spec, self.choice, task);
            if let Some(d) = &docs {
                header.project_docs = super::instructions::records(d);
            }
            if let Some(p) = &mut header.provenance {
                p.image_digest = sandbox.image_digest();
                if self.facts.model.is_some() {
                    p.model.clone_from(&self.facts.model);
                }
                p.preset.clone_from(&self.facts.preset);
                p.attempt = attempt.map(|(n, _)| n).or(self.facts.attempt);
                p.limits.clone_from(&self.facts.limits);
            }
            let log = SessionLog::create(&dir, &header)?;
            let system_prompt = config.system_prompt.clone();
            let running = start(model, sandbox.clone(), config, Default::default(), log);
            if (self.send_task || numbering != Numbering::Plain) && !task.is_empty() {
                let _ = running.ops.send(Op::UserMessage {
                    text: task.to_string(),
                });
            }
            out.push(Started {
                running,
                sandbox: sandbox.clone(),
                notice: None,
                earlier: Vec::new(),
                provenance: header.provenance,
                system_prompt,
                policy_notice: None,
                attempt,
            });
        }
        Ok(out)
    }

    /// The agent's configuration for session `id`.
    fn config(
        &self,
        policy: ApprovalPolicy,
        id: &str,
        sequence: SequenceId,
        seed: Option<u32>,
    ) -> Result<AgentConfig, LaunchError> {
        let mut config = agent_config(self.settings, self.opts, &self.settings.prompt, policy, id)?;
        config.sequence = sequence;
        config.tokens.clone_from(&self.tokens);
        if let Some(seed) = seed {
            config.sampling.seed = seed;
        }
        Ok(config)
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
