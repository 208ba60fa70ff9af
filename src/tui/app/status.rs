//! What the status line shows: model, sandbox, step n/max, context used, tokens per second,
//! elapsed time, the approval policy in force and what the agent is doing, all derived from
//! events.

use crate::protocol::{ApprovalPolicy, Event};
use std::time::{Duration, Instant};

/// What the agent is doing, as far as the interface knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentState {
    /// Loading the model, starting the sandbox.
    #[default]
    Starting,
    /// Ready for the task.
    WaitingForTask,
    Generating,
    /// An approval is pending.
    WaitingForReview,
    RunningTool,
    /// Step mode: waiting for the next-turn key.
    Paused,
    /// The task ended; a follow-up may be sent.
    Finished,
    /// The session is over.
    Ended,
    /// Replaying a recorded session.
    Replay,
}

impl AgentState {
    pub fn label(self) -> &'static str {
        match self {
            AgentState::Starting => "starting",
            AgentState::WaitingForTask => "ready",
            AgentState::Generating => "generating",
            AgentState::WaitingForReview => "awaiting review",
            AgentState::RunningTool => "running tool",
            AgentState::Paused => "paused (n: next turn)",
            AgentState::Finished => "finished",
            AgentState::Ended => "ended",
            AgentState::Replay => "replay",
        }
    }

    /// Work is in progress (quitting asks first; Esc interrupts).
    pub fn is_busy(self) -> bool {
        matches!(
            self,
            AgentState::Generating
                | AgentState::WaitingForReview
                | AgentState::RunningTool
                | AgentState::Paused
        )
    }

    /// The agent waits for a message.
    pub fn accepts_message(self) -> bool {
        matches!(self, AgentState::WaitingForTask | AgentState::Finished)
    }
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub model: String,
    pub sandbox: String,
    pub session_id: String,
    pub step: u32,
    pub max_steps: u32,
    pub context_tokens: usize,
    pub context_limit: u32,
    /// Decode speed of the last turn.
    pub tokens_per_second: Option<f64>,
    pub state: AgentState,
    pub step_mode: bool,
    /// The approval policy in force (`None` until the session says, and in logs from before
    /// it did).
    pub approval_policy: Option<ApprovalPolicy>,
    started: Option<Instant>,
    turn_started: Option<Instant>,
    /// Fixed elapsed time (tests and replays).
    pub elapsed_override: Option<Duration>,
}

impl Status {
    pub fn elapsed(&self, now: Instant) -> Duration {
        self.elapsed_override
            .or_else(|| self.started.map(|s| now.duration_since(s)))
            .unwrap_or_default()
    }

    pub fn apply(&mut self, ev: &Event, now: Instant) {
        match ev {
            Event::SessionStarted {
                session_id,
                model,
                sandbox,
                max_steps,
                context_limit,
                approval_policy,
                ..
            } => {
                self.session_id = session_id.clone();
                if approval_policy.is_some() {
                    self.approval_policy = *approval_policy;
                }
                self.model = model.clone();
                self.sandbox = sandbox.clone();
                self.max_steps = *max_steps;
                self.context_limit = *context_limit;
                self.started.get_or_insert(now);
                if self.state != AgentState::Replay {
                    self.state = AgentState::WaitingForTask;
                }
            }
            Event::TurnStarted { turn: step } => {
                self.step = *step;
                self.turn_started = Some(now);
                self.set(AgentState::Generating);
            }
            Event::ApprovalRequested(_) => self.set(AgentState::WaitingForReview),
            Event::ToolResult { .. } | Event::ToolOutputDelta { .. } => {
                self.set(AgentState::RunningTool)
            }
            Event::TurnFinished {
                figures,
                context_tokens,
                ..
            } => {
                self.context_tokens = *context_tokens;
                let rate = figures.decode_tokens_per_second();
                self.tokens_per_second = if rate > 0.0 {
                    Some(rate)
                } else if self.state == AgentState::Replay {
                    // A replay's wall time says nothing about the model.
                    None
                } else {
                    // Engines without timings (the scripted one): wall time of the turn.
                    self.turn_started.map(|t| {
                        let s = now.duration_since(t).as_secs_f64().max(1e-3);
                        figures.generated_tokens as f64 / s
                    })
                };
                self.set(AgentState::RunningTool);
            }
            Event::Paused { .. } => self.set(AgentState::Paused),
            Event::TaskFinished { .. } => self.set(AgentState::Finished),
            Event::Rewound {
                turn,
                context_tokens,
                ..
            } => {
                self.step = *turn;
                self.context_tokens = *context_tokens;
            }
            Event::ApprovalPolicyChanged { policy } => self.approval_policy = Some(*policy),
            Event::SessionEnded => self.set(AgentState::Ended),
            Event::UserMessage { .. } => self.set(AgentState::Generating),
            _ => {}
        }
    }

    fn set(&mut self, s: AgentState) {
        if self.state != AgentState::Replay {
            self.state = s;
        }
    }
}
