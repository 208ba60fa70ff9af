//! The agent: the turn loop that renders the conversation, runs the model, parses its output,
//! asks for approval where the policy says so, runs tool calls one after the other, and stops
//! for a reported reason. It speaks only [`Op`] in and [`Event`] out, runs on tokio, and talks
//! to whatever engine it is given through [`TemplatedModel`] (`crate::engine`).
//!
//! The rules are the ones the model was trained with (docs/agent.md, "The loop"): a reply without
//! tool calls ends the task and its content is the answer; a turn cut by the token cap does not run
//! its calls and ends the task; steps, context and wall time are limited; a malformed call is
//! answered with a readable error. At the end of each turn in which a Write, Edit or Bash call
//! came, the sandbox records the workspace's files as that turn (`Sandbox::record_turn`), before
//! the next turn can change them (and says so: `Event::TurnRecorded`). `Op::Rewind` goes back to
//! the end of an earlier turn: conversation, files and (through a pinned engine snapshot) the
//! model's memory (`run/rewind.rs`). Does not own: drawing, sandboxes (it calls [`Tools`]), prompt
//! text (the templated model renders it), the log format (`session`).

mod rules;
mod run;
mod tokens;

pub use crate::engine::{TemplatedModel, TurnRequest};
pub use crate::protocol::{ApprovalPolicy, Policy, PolicyOverride, PolicyParseError};
pub use rules::{suggested_prefix_words, CommandRule, SavedCommandRule};
pub use tokens::{TokenLog, TurnTokens};

use crate::engine::{SamplingParams, SequenceId};
use crate::prompt::ToolSpec;
use crate::protocol::{Event, Message, Op, ToolCall};
use crate::tools::Tools;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Limits and behaviour of one agent session.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub max_steps: u32,
    /// Context limit in tokens, counted from the engine's real token counts.
    pub context_limit: u32,
    /// Wall-time limit for one task.
    pub wall_time: Option<Duration>,
    pub max_turn_tokens: u32,
    pub sampling: SamplingParams,
    pub policy: ApprovalPolicy,
    /// Commands that run without asking under an `ask` policy (saved for the repository, and
    /// added by the person's reviews during the session).
    pub command_rules: Vec<CommandRule>,
    /// Pause after every turn until [`Op::Step`].
    pub step_mode: bool,
    pub system_prompt: String,
    pub tools: Vec<ToolSpec>,
    /// Shown in [`Event::SessionStarted`].
    pub session_id: String,
    /// The tools' caps and Bash timeouts (`[sandbox]` sets the timeouts).
    pub tool_limits: crate::tools::ToolLimits,
    /// The harness profile the prompt text came from (`name (sha1 ...)`), for the session log.
    pub harness: String,
    /// The engine sequence the conversation lives in: the default one, or one per task when
    /// several tasks share an engine (`lilypad run --tasks F --parallel N`).
    pub sequence: SequenceId,
    /// Keep every turn's prompt tokens and sampled tokens with their log-probabilities here
    /// (rollouts); `None`: the engine is not asked for them.
    pub tokens: Option<TokenLog>,
    /// The project instructions read at the head of the conversation's first user message
    /// (`None`: none found, or turned off).
    pub instructions: Option<Instructions>,
}

/// Project instructions as the agent passes them on: the files (as named in the block) and
/// the block, which ends where the person's message begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<String>,
    pub block: String,
}

impl AgentConfig {
    /// The limits the model was evaluated with, the default system prompt and the five tools.
    pub fn new(system_prompt: String, tools: Vec<ToolSpec>, sampling: SamplingParams) -> Self {
        Self {
            max_steps: 150,
            context_limit: 131_072,
            wall_time: Some(Duration::from_secs(10_800)),
            max_turn_tokens: 8192,
            sampling,
            policy: ApprovalPolicy::default(),
            command_rules: Vec::new(),
            step_mode: false,
            system_prompt,
            tools,
            session_id: String::new(),
            tool_limits: crate::tools::ToolLimits::default(),
            harness: String::new(),
            sequence: SequenceId::DEFAULT,
            tokens: None,
            instructions: None,
        }
    }
}

/// A running agent: send [`Op`]s, receive [`Event`]s. Dropping `ops` ends the session.
pub struct AgentHandle {
    pub ops: UnboundedSender<Op>,
    pub events: UnboundedReceiver<Event>,
    pub task: tokio::task::JoinHandle<()>,
}

/// Start an agent on the current tokio runtime. `history` resumes an earlier conversation
/// (empty for a new session: the system prompt is added from `config`).
pub fn spawn(
    model: Arc<TemplatedModel>,
    tools: Tools,
    config: AgentConfig,
    history: Vec<Message>,
) -> AgentHandle {
    spawn_resumed(model, tools, config, history, Vec::new())
}

/// [`spawn`] for a resumed session whose last task stopped with `pending` calls unanswered:
/// they run first (asking again where the policy asks) when the task continues
/// ([`Op::Continue`]); a new message answers them as not run instead.
pub fn spawn_resumed(
    model: Arc<TemplatedModel>,
    tools: Tools,
    config: AgentConfig,
    history: Vec<Message>,
    pending: Vec<ToolCall>,
) -> AgentHandle {
    spawn_continuing(model, tools, config, history, pending, Vec::new())
}

/// [`spawn_resumed`] with where each turn of `history` ended (`session::rebuild` works them
/// out from the log), so that [`Op::Rewind`] can go back to the turns before the resume and
/// the step count goes on from the log's.
pub fn spawn_continuing(
    model: Arc<TemplatedModel>,
    tools: Tools,
    config: AgentConfig,
    history: Vec<Message>,
    pending: Vec<ToolCall>,
    turns: Vec<crate::protocol::TurnEnd>,
) -> AgentHandle {
    let (op_tx, op_rx) = unbounded_channel();
    let (ev_tx, ev_rx) = unbounded_channel();
    let agent = run::Agent::new(model, tools, config, history, ev_tx)
        .with_pending(pending)
        .with_turns(turns);
    let task = tokio::spawn(agent.run(op_rx));
    AgentHandle {
        ops: op_tx,
        events: ev_rx,
        task,
    }
}
