//! The agent's two-way interface: operations in ([`Op`]), events out ([`Event`]). The
//! interface, the headless runner, the session log and the tests all speak only these.
//! An approval is a request/response pair: [`Event::ApprovalRequested`] carries an id, and
//! [`Op::Review`] answers it.

use super::approval::ApprovalPolicy;
use super::usage::{Figures, StopReason};
use super::ToolCall;
use serde::{Deserialize, Serialize};

/// Identifies an approval request within a session.
pub type RequestId = u64;

/// What a person (or a program) can tell the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// The task, or a follow-up instruction once the agent has answered.
    UserMessage { text: String },
    /// Carry on with an unfinished task without a new message (after `resume`).
    Continue,
    /// The answer to an approval request.
    Review {
        id: RequestId,
        decision: ReviewDecision,
    },
    /// Stop what runs now (generation or a command); nothing is half-applied. The agent then
    /// waits for the next message.
    Interrupt,
    /// Pause after every model turn (on) or run freely (off).
    SetStepMode { on: bool },
    /// In step mode: run one more turn.
    Step,
    /// After a task stopped at the context limit: start a fresh conversation on the same
    /// workspace whose first message carries the conversation's original task, the session
    /// patch so far and `text`, and carry on.
    ContinueFresh { text: String },
    /// After a task stopped at the context limit: replace the oldest tool results with a
    /// one-line note until the conversation fits again, then carry on with `text` (or with
    /// the unfinished task when `None`).
    DropOldResults { text: Option<String> },
    /// Go back to the end of turn `turn`: the conversation is cut back to what it held then,
    /// the workspace's files are restored to that turn's record, and the next request's
    /// prompt extends that turn's, so the engine serves it from the memory snapshot pinned
    /// there. Handled between tasks; a running task is interrupted first. 0 is the start of
    /// the session (no turns, the baseline files).
    Rewind { turn: u32 },
    /// Run `command` in the session's sandbox for the person (`!cmd` on the message line):
    /// no approval is asked and no turn is taken. Its output, in the Bash tool's result
    /// format after a `$ command` line, goes to the model at the head of the next user
    /// message ([`Event::ShellRan`]). Sent while a task runs, it runs once the task has
    /// ended; [`Op::Interrupt`] stops it.
    Shell { command: String },
    /// Use `policy` from now on (Shift-Tab, `/approvals`): a request already asked waits for
    /// its answer, and the next call is settled under the new policy. Answered with
    /// [`Event::ApprovalPolicyChanged`], which the session log keeps.
    SetApprovalPolicy { policy: ApprovalPolicy },
    /// Keep the person's review comments in the session without sending them to the model
    /// (the session review's "comment" end, `C`). Answered with
    /// [`Event::CommentsRecorded`], which the session log keeps; no turn is taken.
    RecordComments { comments: Vec<RecordedComment> },
    /// End the session.
    Shutdown,
}

/// A review comment kept without being sent ([`Op::RecordComments`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedComment {
    /// Where it points, in the words the model would read: `inventory.py:29 (new) "return
    /// ..."`, `inventory.py (the file)`, or `the whole review`.
    pub place: String,
    pub text: String,
}

impl RecordedComment {
    /// `comments` as a numbered list, one a line: `1. PLACE: TEXT`.
    pub fn numbered(comments: &[RecordedComment]) -> String {
        comments
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}. {}: {}", i + 1, c.place, c.text))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Where a turn ended in the conversation: what the agent keeps per turn so that it can go
/// back to it ([`Op::Rewind`]), and what rebuilding a log computes the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnEnd {
    pub turn: u32,
    /// Messages of the conversation at the end of the turn (its tool results included).
    pub messages: usize,
    /// Context in use after the turn, in tokens, as last measured.
    pub context_tokens: usize,
}

/// How a person answered an approval request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ReviewDecision {
    Approve,
    /// Apply the person's text instead of the proposal (the whole new file content). The
    /// model is told its proposal was edited.
    ApproveEdited {
        text: String,
    },
    /// Apply `text` (the proposal itself, or the person's edit of it) and tell the model what
    /// the person says about it: `feedback` holds their comments on lines of the change.
    ApproveWithFeedback {
        text: String,
        feedback: String,
    },
    /// Apply only some hunks of a proposed change: `text` is the file with the kept hunks
    /// applied. The model is told which hunks were kept and which dropped (and `feedback`),
    /// so its next step knows the file's real state.
    ApproveHunks {
        text: String,
        kept: Vec<HunkNote>,
        dropped: Vec<HunkNote>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Approve this and, for the rest of the session, every request of the same category.
    ApproveForSession,
    /// Approve this command and, for the rest of the session, every command whose words start
    /// with the words of `prefix` (and that has no shell operators: see
    /// `agent::CommandRule::matches`).
    ApprovePrefix {
        prefix: String,
    },
    /// Do not run it; the feedback goes to the model as the tool's result.
    Reject {
        feedback: String,
    },
}

/// A hunk of a proposed change, as the model is told about it when only some were kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkNote {
    /// 1-based number of the hunk in the proposal.
    pub number: usize,
    /// Its `@@ -a,b +c,d @@` header (line numbers in the old and the proposed text).
    pub header: String,
    /// Its first changed line (added, else removed), to recognise it by.
    pub first_change: String,
}

/// The category of a tool, which the approval policy is set by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    /// Read, Glob.
    ReadOnly,
    /// Write, Edit.
    Edits,
    /// Bash.
    Commands,
}

/// What needs approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A file change: the whole text before (`None` for a new file) and after.
    Change {
        path: String,
        before: Option<String>,
        after: String,
        /// The file was binary before (its text is not shown).
        binary_before: bool,
    },
    /// A shell command.
    Command {
        command: String,
        description: Option<String>,
        timeout_seconds: f64,
    },
}

/// A request for a decision; answer with [`Op::Review`] and the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub id: RequestId,
    pub call: ToolCall,
    pub category: ToolCategory,
    pub kind: ApprovalKind,
}

/// How the result of a call the person rejected begins: the agent writes it, and the scripted
/// engine reads it to take a turn's `if rejected` alternative.
pub const REJECTED_RESULT: &str = "The user rejected this";

/// Why a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A reply without tool calls: its content is the final answer.
    Answered,
    /// A turn hit the per-turn token cap; its calls were not run.
    TokenCap,
    /// The step limit was reached.
    StepLimit,
    /// The context limit was reached.
    ContextLimit,
    /// The wall-time limit was reached.
    TimeLimit,
    /// The person interrupted.
    Interrupted,
    /// The model or a sandbox failed.
    Error,
}

impl FinishReason {
    /// The process exit code a headless run reports for this ending.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Answered => 0,
            Self::Error => 1,
            Self::TokenCap => 3,
            Self::StepLimit => 4,
            Self::ContextLimit => 5,
            Self::TimeLimit => 6,
            Self::Interrupted => 130,
        }
    }
}

/// How a tool call was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Ran without asking (policy auto).
    Auto,
    Approved,
    /// Approved with the person's own text.
    Edited,
    Rejected,
    /// Refused by policy.
    Denied,
    /// Not run: malformed, or the turn was cut.
    Skipped,
}

/// A tool result taken out of the conversation, and what replaced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedResult {
    pub call_id: String,
    /// The one-line note the model reads instead.
    pub note: String,
}

/// Everything the agent reports. Serialised one per line in session logs and `--json` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The session is ready.
    SessionStarted {
        session_id: String,
        model: String,
        sandbox: String,
        workdir: String,
        max_steps: u32,
        context_limit: u32,
        /// The approval policy in force at the start (absent in logs written before it was
        /// recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval_policy: Option<ApprovalPolicy>,
    },
    /// The person's message as the model will read it.
    UserMessage {
        text: String,
    },
    /// The project instructions (`AGENTS.md` files) the model reads at the head of the
    /// conversation's first message: the [`Event::UserMessage`] that follows is read as
    /// `text` followed by its own text.
    ProjectInstructions {
        /// The files, as the block names them (root-relative, or `user:NAME`).
        files: Vec<String>,
        /// The block exactly as the model reads it.
        text: String,
    },
    /// A message that arrived while the agent was busy; it is delivered (as a
    /// [`Event::UserMessage`]) at the next turn boundary.
    MessageQueued {
        text: String,
    },
    /// The conversation starts again from the system prompt (an [`Op::ContinueFresh`]); the
    /// [`Event::UserMessage`] that follows carries the task and the patch so far.
    ConversationRestarted {
        /// Tokens the old conversation held when it was replaced.
        old_context_tokens: usize,
    },
    /// Old tool results were replaced by a note to fit the context ([`Op::DropOldResults`]).
    ToolResultsDropped {
        dropped: Vec<DroppedResult>,
        /// Estimated tokens of the conversation afterwards.
        context_tokens: usize,
    },
    /// A model turn begins (turns count from 1; logs before 0.2 call it `step`).
    TurnStarted {
        #[serde(alias = "step")]
        turn: u32,
    },
    ReasoningDelta {
        text: String,
    },
    ContentDelta {
        text: String,
    },
    /// The model began what looks like a tool call (the name is known, arguments are still
    /// arriving). Tentative until the turn ends: only the calls of `ToolCallReady` run.
    ToolCallStarted {
        name: String,
    },
    /// Text of an argument of the call last started, as it is generated (the parameter's
    /// deltas joined are its raw value). Tentative like the call; for showing it as it grows.
    ToolCallArgumentDelta {
        parameter: String,
        text: String,
    },
    /// The turn's reasoning and content as settled at its end, when they differ from what the
    /// deltas showed (a later `</think>` made earlier text and calls reasoning). Replaces the
    /// turn's deltas.
    TurnRevised {
        reasoning: String,
        content: String,
    },
    /// A settled tool call, arguments typed (sent when the turn ends, before `TurnFinished`).
    ToolCallReady {
        call: ToolCall,
    },
    /// A tool call that could not be read; `message` is what the model is told.
    MalformedCall {
        message: String,
    },
    ApprovalRequested(ApprovalRequest),
    /// Live output of a running command.
    ToolOutputDelta {
        call_id: String,
        text: String,
    },
    /// A tool call's result as the model reads it.
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
        resolution: Resolution,
    },
    /// A model turn ended.
    TurnFinished {
        #[serde(alias = "step")]
        turn: u32,
        stop: StopReason,
        figures: Figures,
        /// Context in use after the turn, in tokens.
        context_tokens: usize,
    },
    /// Step mode: waiting for [`Op::Step`] before the next turn.
    Paused {
        #[serde(alias = "step")]
        turn: u32,
    },
    /// The task ended; the agent waits for a follow-up message or shutdown.
    TaskFinished {
        reason: FinishReason,
        final_answer: Option<String>,
    },
    /// A command of the person's ([`Op::Shell`]) ran in the sandbox.
    ShellRan {
        command: String,
        /// Its result in the Bash tool's format (`Exit code: 0\nSTDOUT:\n...`), or what
        /// stopped it.
        output: String,
        /// Whether `$ command` and `output` wait for the next user message (not when it was
        /// interrupted).
        attached: bool,
    },
    /// An attempt's check command ran in its sandbox after the task finished (`--check`).
    CheckFinished {
        command: String,
        /// Exit status 0.
        passed: bool,
        /// `None`: killed at the timeout.
        exit_code: Option<i64>,
        /// The tail of its output.
        output: String,
    },
    /// The workspace's files at the end of turn `turn` were recorded (they had changed since
    /// the previous record); the session log keeps that turn's patch for rewinds and forks.
    TurnRecorded {
        turn: u32,
    },
    /// The session went back to the end of turn `turn` ([`Op::Rewind`]): the conversation
    /// holds its first `messages` messages again, the files are those of that turn, and later
    /// turns are gone (the next turn is `turn + 1`).
    Rewound {
        turn: u32,
        messages: usize,
        /// Context in use at that point, in tokens.
        context_tokens: usize,
        /// The turn the session was at before.
        from_turn: u32,
    },
    /// The approval policy changed ([`Op::SetApprovalPolicy`], or "approve for the session"
    /// raising a category to auto); `policy` is the whole policy in force from now on.
    ApprovalPolicyChanged {
        policy: ApprovalPolicy,
    },
    /// Review comments the person kept without sending them ([`Op::RecordComments`]).
    CommentsRecorded {
        comments: Vec<RecordedComment>,
    },
    /// Something went wrong that the person should see (the session continues if it can).
    Error {
        message: String,
    },
    /// The session ended; nothing follows.
    SessionEnded,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The turn counter is `turn` in every event; logs written when three events called it
    /// `step` still read, as the same turn.
    #[test]
    fn turn_events_write_turn_and_read_the_old_step() {
        let started = Event::TurnStarted { turn: 3 };
        let text = serde_json::to_string(&started).unwrap();
        assert!(
            text.contains("\"turn\":3") && !text.contains("step"),
            "{text}"
        );
        let old: Event = serde_json::from_str(r#"{"event":"turn_started","step":3}"#).unwrap();
        assert_eq!(old, started);
        let paused: Event = serde_json::from_str(r#"{"event":"paused","step":2}"#).unwrap();
        assert_eq!(paused, Event::Paused { turn: 2 });
    }
}
