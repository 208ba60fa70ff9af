//! The turn loop itself. One [`Agent`] per session; it owns the conversation. While a model
//! turn streams or a tool runs, operations are still read, so an interrupt takes effect at
//! once: generation is cancelled, a running command's future is dropped (which kills it), and
//! nothing that was not approved is applied.

use super::AgentConfig;
use crate::engine::{EngineError, TemplatedModel, TurnRequest};
use crate::engine::{EngineEvent, Generation, ParsedOutput, TokenReport};
use crate::prompt::{CallEnd, ParseEvent, Parser, Start, ToolSchemas};
use crate::protocol::{
    Event, FinishReason, Message, Op, RequestId, Resolution, StopReason, ToolCall, ToolCategory,
    TurnEnd,
};
use crate::sandbox::SandboxExt;
use crate::tools::{ToolResult, Tools};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// How a task ended: why, and the final answer if there is one.
type Ending = (FinishReason, Option<String>);

/// Why the current task must stop early, decided while waiting on operations.
enum Halt {
    Interrupted,
    Shutdown,
}

/// A model turn as parsed: calls and malformed-call messages in the order they appeared.
#[derive(Default)]
struct Turn {
    reasoning: String,
    content: String,
    items: Vec<(usize, Item)>,
}

enum Item {
    Call(ToolCall),
    Malformed(String),
}

pub(super) struct Agent {
    model: Arc<TemplatedModel>,
    tools: Tools,
    config: AgentConfig,
    schemas: ToolSchemas,
    messages: Vec<Message>,
    events: UnboundedSender<Event>,
    step: u32,
    next_request: RequestId,
    next_call: usize,
    context_tokens: usize,
    step_mode: bool,
    queued: VecDeque<String>,
    /// The last task stopped at the context limit: queued messages wait for the person's
    /// choice (a fresh conversation, or dropping old results) instead of starting tasks that
    /// would stop at once.
    full: bool,
    /// Calls of the last turn a resumed session had not answered when it stopped; they run
    /// (and ask again for approval) when the task continues.
    pending: Vec<ToolCall>,
    /// Where each turn of the conversation ended, in turn order (turn 0: the start), for
    /// [`Op::Rewind`]. Emptied when the conversation is restarted.
    turn_ends: Vec<TurnEnd>,
    /// A rewind asked for while a task ran: done once the interrupted task has ended.
    rewind_after: Option<u32>,
    /// Operations that arrived while something else held the loop (the person's command
    /// running, or a task for [`Op::Shell`]), taken before any new one.
    deferred: VecDeque<Op>,
    /// The person's commands that ran (`$ command` and the result), waiting to go at the
    /// head of the next user message.
    attached: Vec<String>,
    shells_run: usize,
    shutdown: bool,
}

impl Agent {
    pub(super) fn new(
        model: Arc<TemplatedModel>,
        tools: Tools,
        config: AgentConfig,
        history: Vec<Message>,
        events: UnboundedSender<Event>,
    ) -> Self {
        let mut messages = history;
        if messages.is_empty() {
            messages.push(Message::system(config.system_prompt.clone()));
        }
        let step = messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count() as u32;
        let next_call = messages
            .iter()
            .map(|m| match m {
                Message::Assistant { tool_calls, .. } => tool_calls.len(),
                _ => 0,
            })
            .sum::<usize>()
            + 1;
        Self {
            schemas: ToolSchemas::new(&config.tools),
            step_mode: config.step_mode,
            model,
            tools,
            config,
            messages,
            events,
            step,
            next_request: 1,
            next_call,
            context_tokens: 0,
            queued: VecDeque::new(),
            full: false,
            pending: Vec::new(),
            turn_ends: Vec::new(),
            rewind_after: None,
            deferred: VecDeque::new(),
            attached: Vec::new(),
            shells_run: 0,
            shutdown: false,
        }
        .with_turns(Vec::new())
    }

    /// Where the turns of the history ended (from the session log: `session::rebuild`); the
    /// step count goes on from the last. Without them they are worked out from the messages
    /// (each assistant message a turn, with the tool results after it).
    pub(super) fn with_turns(mut self, turns: Vec<TurnEnd>) -> Self {
        self.turn_ends = if turns.is_empty() {
            derived_turns(&self.messages)
        } else {
            turns
        };
        if let Some(last) = self.turn_ends.last() {
            self.step = self.step.max(last.turn);
        }
        self
    }

    /// Calls to run first when the resumed task continues (see [`Agent::pending`]).
    pub(super) fn with_pending(mut self, calls: Vec<ToolCall>) -> Self {
        self.pending = calls;
        self
    }

    fn emit(&self, e: Event) {
        // A consumer that went away is not an error for the agent: it finishes quietly.
        let _ = self.events.send(e);
    }

    pub(super) async fn run(mut self, mut ops: UnboundedReceiver<Op>) {
        self.emit(Event::SessionStarted {
            session_id: self.config.session_id.clone(),
            model: self.model.describe(),
            sandbox: self.tools.sandbox().describe(),
            workdir: self.tools.sandbox().workdir().to_string(),
            max_steps: self.config.max_steps,
            context_limit: self.config.context_limit,
            approval_policy: Some(self.config.policy),
        });
        while !self.shutdown {
            let next_queued = if self.full {
                None
            } else {
                self.queued.pop_front()
            };
            let text = match next_queued {
                Some(t) => Some(t),
                None => match self.next_op(&mut ops).await {
                    None | Some(Op::Shutdown) => break,
                    Some(Op::UserMessage { text }) => Some(text),
                    Some(Op::Continue) => None,
                    Some(Op::ContinueFresh { text }) => {
                        self.pending.clear();
                        self.restart_conversation(text).await;
                        self.full = false;
                        None
                    }
                    Some(Op::DropOldResults { text }) => {
                        if !self.drop_old_results() {
                            continue;
                        }
                        self.full = false;
                        text
                    }
                    Some(Op::SetStepMode { on }) => {
                        self.step_mode = on;
                        continue;
                    }
                    Some(Op::Rewind { turn }) => {
                        self.rewind(turn).await;
                        continue;
                    }
                    Some(Op::Shell { command }) => {
                        self.shell(command, &mut ops).await;
                        continue;
                    }
                    Some(Op::SetApprovalPolicy { policy }) => {
                        self.set_policy(policy);
                        continue;
                    }
                    Some(Op::RecordComments { comments }) => {
                        self.emit(Event::CommentsRecorded { comments });
                        continue;
                    }
                    Some(Op::Interrupt | Op::Step | Op::Review { .. }) => continue,
                },
            };
            if let Some(text) = text {
                let unrun = !self.pending.is_empty();
                for call in std::mem::take(&mut self.pending) {
                    self.answer_unrun(&call, "was not run: the session stopped before it finished");
                }
                if unrun {
                    self.mark_turn_end();
                }
                self.push_user(text);
            }
            let (reason, answer) = self.task(&mut ops).await;
            self.full = reason == FinishReason::ContextLimit;
            self.emit(Event::TaskFinished {
                reason,
                final_answer: answer,
            });
            if let Some(turn) = self.rewind_after.take() {
                if !self.shutdown {
                    self.rewind(turn).await;
                }
            }
        }
        self.emit(Event::SessionEnded);
    }

    /// Run turns until the task ends; returns why, and the final answer if there is one.
    async fn task(&mut self, ops: &mut UnboundedReceiver<Op>) -> Ending {
        let started = Instant::now();
        let mut steps_this_task = 0u32;
        if !self.pending.is_empty() {
            let items = std::mem::take(&mut self.pending)
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i, Item::Call(c)))
                .collect();
            let ran = self.run_items(items, ops).await;
            self.mark_turn_end();
            if let Err(h) = ran {
                return self.halted(h);
            }
        }
        loop {
            if let Some(reason) = self.limit_reached(started) {
                return (reason, None);
            }
            if self.step_mode && steps_this_task > 0 {
                self.emit(Event::Paused { turn: self.step });
                if let Err(h) = self.wait_for_step(ops).await {
                    return self.halted(h);
                }
            }
            self.deliver_queued();
            self.step += 1;
            steps_this_task += 1;
            self.emit(Event::TurnStarted { turn: self.step });
            let (turn, generation, halt) = match self.model_turn(ops).await {
                Ok(t) => t,
                Err(e) => {
                    self.emit(Event::Error {
                        message: e.to_string(),
                    });
                    return (FinishReason::Error, None);
                }
            };
            let items = match self.settle_turn(turn, &generation, halt) {
                ControlFlow::Continue(items) => items,
                ControlFlow::Break(ending) => {
                    self.mark_turn_end();
                    return ending;
                }
            };
            let may_change = items.iter().any(|(_, i)| {
                matches!(i, Item::Call(c) if matches!(
                    crate::tools::category(&c.name),
                    Some(ToolCategory::Edits | ToolCategory::Commands)
                ))
            });
            let ran = self.run_items(items, ops).await;
            self.mark_turn_end();
            if may_change {
                self.record_turn().await;
            }
            if let Err(h) = ran {
                return self.halted(h);
            }
        }
    }

    /// Record the workspace's files as this turn (when they changed), before the next turn
    /// can change them again: the record is what restoring the turn brings back.
    async fn record_turn(&self) {
        match crate::sandbox::workspace::Checkout::of(self.tools.sandbox().as_ref())
            .record_turn(self.step)
            .await
        {
            Ok(Some(_)) => self.emit(Event::TurnRecorded { turn: self.step }),
            Ok(None) => {}
            Err(e) => self.emit(Event::Error {
                message: format!("turn {} could not be recorded: {e}", self.step),
            }),
        }
    }

    /// Note where the current turn ends in the conversation (called when it has settled and
    /// again after each change to it, so the last call wins).
    fn mark_turn_end(&mut self) {
        let end = TurnEnd {
            turn: self.step,
            messages: self.messages.len(),
            context_tokens: self.context_tokens,
        };
        self.turn_ends.retain(|t| t.turn < end.turn);
        self.turn_ends.push(end);
    }

    /// The limit the task has reached before its next turn, if any.
    fn limit_reached(&self, started: Instant) -> Option<FinishReason> {
        if self.step >= self.config.max_steps {
            return Some(FinishReason::StepLimit);
        }
        if self
            .config
            .wall_time
            .is_some_and(|limit| started.elapsed() >= limit)
        {
            return Some(FinishReason::TimeLimit);
        }
        if self.context_tokens >= self.config.context_limit as usize {
            return Some(FinishReason::ContextLimit);
        }
        None
    }

    /// Keep a finished model turn in the conversation and report it. `Continue` with the
    /// turn's calls and malformed-call messages to answer; `Break` when the turn ends the task
    /// (cancelled, cut by a cap, interrupted as it ended, or an answer without calls).
    fn settle_turn(
        &mut self,
        turn: Turn,
        generation: &Generation,
        halt: Option<Halt>,
    ) -> ControlFlow<Ending, Vec<(usize, Item)>> {
        let f = &generation.figures;
        let finished = Event::TurnFinished {
            turn: self.step,
            stop: generation.stop,
            figures: generation.figures.clone(),
            context_tokens: f.prompt_tokens + f.generated_tokens,
        };
        if generation.stop != StopReason::Cancelled {
            if let Some(log) = &self.config.tokens {
                log.record(self.step, generation);
            }
        }
        if generation.stop == StopReason::Cancelled {
            // A cancelled turn is shown but not kept: the model starts afresh next time.
            self.emit(finished);
            return ControlFlow::Break(self.halted(halt.unwrap_or(Halt::Interrupted)));
        }
        let calls: Vec<ToolCall> = turn
            .items
            .iter()
            .filter_map(|(_, i)| match i {
                Item::Call(c) => Some(c.clone()),
                Item::Malformed(_) => None,
            })
            .collect();
        self.messages.push(Message::assistant(
            (!turn.reasoning.is_empty()).then(|| turn.reasoning.clone()),
            turn.content.clone(),
            calls.clone(),
        ));
        self.context_tokens = f.prompt_tokens + f.generated_tokens;
        self.emit(finished);
        match generation.stop {
            StopReason::TokenCap => return ControlFlow::Break((FinishReason::TokenCap, None)),
            StopReason::ContextFull => {
                return ControlFlow::Break((FinishReason::ContextLimit, None))
            }
            StopReason::EndOfGeneration | StopReason::Cancelled => {}
        }
        if let Some(h) = halt {
            // The interrupt came just as the turn ended: keep the turn, run nothing.
            for c in &calls {
                self.answer_unrun(c, "was not run: the user interrupted");
            }
            return ControlFlow::Break(self.halted(h));
        }
        if turn.items.is_empty() {
            return ControlFlow::Break((FinishReason::Answered, Some(turn.content)));
        }
        ControlFlow::Continue(turn.items)
    }

    /// Answer a turn's items in order: run each call, answer each malformed one with its
    /// message. Every result goes into the conversation and out as an event. On a halt, the
    /// call that was running and every call after it are answered as not run, so the
    /// conversation stays well-formed for whatever comes next.
    async fn run_items(
        &mut self,
        items: Vec<(usize, Item)>,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<(), Halt> {
        let mut items = items.into_iter();
        while let Some((_, item)) = items.next() {
            let (call_id, name, result, resolution) = match item {
                Item::Malformed(message) => {
                    let id = format!("call_{}", self.next_call);
                    self.next_call += 1;
                    (
                        id,
                        String::new(),
                        ToolResult {
                            content: message,
                            is_error: true,
                        },
                        Resolution::Skipped,
                    )
                }
                Item::Call(call) => match self.run_call(&call, ops).await {
                    Ok((result, resolution)) => (call.id, call.name, result, resolution),
                    Err(h) => {
                        self.answer_unrun(&call, "was interrupted by the user before it finished");
                        for (_, rest) in items {
                            if let Item::Call(c) = rest {
                                self.answer_unrun(&c, "was not run: the user interrupted");
                            }
                        }
                        return Err(h);
                    }
                },
            };
            self.messages
                .push(Message::tool(Some(call_id.clone()), result.content.clone()));
            self.emit(Event::ToolResult {
                call_id,
                name,
                content: result.content,
                is_error: result.is_error,
                resolution,
            });
        }
        Ok(())
    }

    fn answer_unrun(&mut self, call: &ToolCall, why: &str) {
        let content = format!("This call {why}.");
        self.messages
            .push(Message::tool(Some(call.id.clone()), content.clone()));
        self.emit(Event::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error: true,
            resolution: Resolution::Skipped,
        });
    }

    fn halted(&mut self, h: Halt) -> Ending {
        if matches!(h, Halt::Shutdown) {
            self.shutdown = true;
        }
        (FinishReason::Interrupted, None)
    }

    /// Messages that arrived while the agent was busy join the conversation at the turn
    /// boundary, in the order they were typed.
    fn deliver_queued(&mut self) {
        while let Some(text) = self.queued.pop_front() {
            self.push_user(text);
        }
    }

    /// Add the person's message to the conversation, after the commands of theirs that ran
    /// since the last one (`Op::Shell`, see `shell.rs`). The conversation's first message
    /// (only the system prompt before it) starts with the project instructions, announced
    /// first.
    pub(super) fn push_user(&mut self, text: String) {
        let text = self.with_attached(text);
        let first = self
            .messages
            .iter()
            .all(|m| matches!(m, Message::System { .. }));
        match self.config.instructions.as_ref().filter(|_| first) {
            Some(ins) => {
                self.emit(Event::ProjectInstructions {
                    files: ins.files.clone(),
                    text: ins.block.clone(),
                });
                self.messages
                    .push(Message::user(format!("{}{text}", ins.block)));
            }
            None => self.messages.push(Message::user(text.clone())),
        }
        self.emit(Event::UserMessage { text });
    }

    /// Use `policy` from now on, and say so (the session log keeps it for resumes).
    pub(super) fn set_policy(&mut self, policy: crate::protocol::ApprovalPolicy) {
        self.config.policy = policy;
        self.emit(Event::ApprovalPolicyChanged { policy });
    }

    /// The next operation: one deferred earlier first, else the next to arrive.
    async fn next_op(&mut self, ops: &mut UnboundedReceiver<Op>) -> Option<Op> {
        match self.deferred.pop_front() {
            Some(op) => Some(op),
            None => ops.recv().await,
        }
    }

    /// Handle an operation that arrives while something else is going on. Returns a halt for
    /// interrupt and shutdown; queues messages for the next turn boundary.
    fn background_op(&mut self, op: Option<Op>) -> Option<Halt> {
        match op {
            None | Some(Op::Shutdown) => Some(Halt::Shutdown),
            Some(Op::Interrupt) => Some(Halt::Interrupted),
            Some(Op::SetStepMode { on }) => {
                self.step_mode = on;
                None
            }
            Some(Op::UserMessage { text }) => {
                self.emit(Event::MessageQueued { text: text.clone() });
                self.queued.push_back(text);
                None
            }
            Some(Op::Rewind { turn }) => {
                self.rewind_after = Some(turn);
                Some(Halt::Interrupted)
            }
            // At once: the next call is settled under it.
            Some(Op::SetApprovalPolicy { policy }) => {
                self.set_policy(policy);
                None
            }
            // At once: nothing the model reads changes.
            Some(Op::RecordComments { comments }) => {
                self.emit(Event::CommentsRecorded { comments });
                None
            }
            // Once the task has ended.
            Some(op @ Op::Shell { .. }) => {
                self.deferred.push_back(op);
                None
            }
            Some(
                Op::Step
                | Op::Review { .. }
                | Op::Continue
                | Op::ContinueFresh { .. }
                | Op::DropOldResults { .. },
            ) => None,
        }
    }

    async fn wait_for_step(&mut self, ops: &mut UnboundedReceiver<Op>) -> Result<(), Halt> {
        loop {
            match ops.recv().await {
                Some(Op::Step) => return Ok(()),
                Some(Op::SetStepMode { on: false }) => {
                    self.step_mode = false;
                    return Ok(());
                }
                other => {
                    if let Some(h) = self.background_op(other) {
                        return Err(h);
                    }
                }
            }
        }
    }

    async fn model_turn(
        &mut self,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<(Turn, Generation, Option<Halt>), EngineError> {
        let remaining = (self.config.context_limit as usize).saturating_sub(self.context_tokens);
        let request = TurnRequest {
            messages: self.messages.clone(),
            tools: self.config.tools.clone(),
            max_tokens: self.config.max_turn_tokens.min(remaining.max(1) as u32),
            sampling: self.config.sampling.clone(),
            sequence: self.config.sequence,
            pin_turn: true,
            report: match self.config.tokens {
                Some(_) => TokenReport {
                    logprobs: Some(0),
                    prompt_tokens: true,
                },
                None => TokenReport::default(),
            },
        };
        let mut stream = self.model.start(&request)?;
        let mut parser = Parser::new(self.schemas.clone(), Start::Reasoning)
            .with_first_call_number(self.next_call);
        // What the deltas showed; the turn itself is decided when it ends.
        let mut live = Turn::default();
        let mut raw = false;
        let mut halt = None;
        let generation = loop {
            tokio::select! {
                ev = stream.events.recv() => match ev {
                    Some(EngineEvent::Piece(p)) => {
                        raw = true;
                        for e in parser.push(&p) {
                            self.show(&mut live, e);
                        }
                    }
                    Some(EngineEvent::Parsed(p)) => self.apply_parsed(&mut live, p),
                    // The ratings come again, all of them, with `Done`.
                    Some(EngineEvent::Sampled(_)) => {}
                    Some(EngineEvent::Done(g)) => break g,
                    Some(EngineEvent::Failed(e)) => return Err(e),
                    None => return Err(EngineError::Ended),
                },
                op = ops.recv(), if halt.is_none() => {
                    if let Some(h) = self.background_op(op) {
                        stream.cancel();
                        halt = Some(h);
                    }
                }
            }
        };
        for e in parser.finish() {
            self.show(&mut live, e);
        }
        let turn = if raw {
            self.settled(live, parser.settle())
        } else {
            live
        };
        self.next_call = parser.next_call_number().max(self.next_call);
        Ok((turn, generation, halt))
    }

    /// A live event: shown, and the text kept to compare with the settled turn. Calls are
    /// tentative here (the interface shows them by name only) and are not kept.
    fn show(&mut self, live: &mut Turn, e: ParseEvent) {
        match e {
            ParseEvent::Reasoning(t) => {
                live.reasoning.push_str(&t);
                self.emit(Event::ReasoningDelta { text: t });
            }
            ParseEvent::Content(t) => {
                live.content.push_str(&t);
                self.emit(Event::ContentDelta { text: t });
            }
            ParseEvent::ToolCallStarted { name, .. } => self.emit(Event::ToolCallStarted { name }),
            ParseEvent::ToolCallArgumentDelta { name, text, .. } => {
                self.emit(Event::ToolCallArgumentDelta {
                    parameter: name,
                    text,
                })
            }
            ParseEvent::ToolCallArgument { .. }
            | ParseEvent::ToolCallComplete { .. }
            | ParseEvent::ToolCallError(_) => {}
        }
    }

    /// The turn as settled at its end: its text (reported again when it differs from what the
    /// deltas showed) and the calls and malformed-call messages to answer, in order.
    fn settled(&mut self, live: Turn, events: Vec<ParseEvent>) -> Turn {
        let mut turn = Turn::default();
        let mut items = Vec::new();
        for e in events {
            match e {
                ParseEvent::Reasoning(t) => turn.reasoning = t,
                ParseEvent::Content(t) => turn.content = t,
                // Already announced live.
                ParseEvent::ToolCallStarted { .. }
                | ParseEvent::ToolCallArgumentDelta { .. }
                | ParseEvent::ToolCallArgument { .. } => {}
                other => items.push(other),
            }
        }
        if turn.reasoning != live.reasoning || turn.content != live.content {
            self.emit(Event::TurnRevised {
                reasoning: turn.reasoning.clone(),
                content: turn.content.clone(),
            });
        }
        turn.items = live.items;
        for e in items {
            self.apply(&mut turn, e);
        }
        turn
    }

    fn apply(&mut self, turn: &mut Turn, e: ParseEvent) {
        match e {
            ParseEvent::Reasoning(t) => {
                turn.reasoning.push_str(&t);
                self.emit(Event::ReasoningDelta { text: t });
            }
            ParseEvent::Content(t) => {
                turn.content.push_str(&t);
                self.emit(Event::ContentDelta { text: t });
            }
            ParseEvent::ToolCallStarted { name, .. } => self.emit(Event::ToolCallStarted { name }),
            ParseEvent::ToolCallArgumentDelta { .. } | ParseEvent::ToolCallArgument { .. } => {}
            // A call the output stopped inside is run like any other when the model ended its
            // turn there; a turn cut by the token cap never runs any call.
            ParseEvent::ToolCallComplete { index, call, .. } => {
                self.emit(Event::ToolCallReady { call: call.clone() });
                turn.items.push((index, Item::Call(call)));
            }
            ParseEvent::ToolCallError(err) => {
                self.emit(Event::MalformedCall {
                    message: err.message.clone(),
                });
                turn.items.push((err.index, Item::Malformed(err.message)));
            }
        }
        turn.items.sort_by_key(|(i, _)| *i);
    }

    fn apply_parsed(&mut self, turn: &mut Turn, p: ParsedOutput) {
        match p {
            ParsedOutput::Reasoning(t) => self.apply(turn, ParseEvent::Reasoning(t)),
            ParsedOutput::Content(t) => self.apply(turn, ParseEvent::Content(t)),
            ParsedOutput::ToolCall(call) => {
                let index = turn.items.len();
                self.next_call += 1;
                self.emit(Event::ToolCallStarted {
                    name: call.name.clone(),
                });
                self.apply(
                    turn,
                    ParseEvent::ToolCallComplete {
                        index,
                        call,
                        end: CallEnd::Closed,
                    },
                );
            }
        }
    }
}

/// Turn ends worked out from messages alone (a history without its log): turn 0 at the
/// system prompt, then each assistant message a turn that ends before the next message that
/// is not a tool result.
fn derived_turns(messages: &[Message]) -> Vec<TurnEnd> {
    let mut turns = Vec::new();
    if matches!(messages.first(), Some(Message::System { .. })) {
        turns.push(TurnEnd {
            turn: 0,
            messages: 1,
            context_tokens: 0,
        });
    }
    let mut turn = 0;
    for (i, m) in messages.iter().enumerate() {
        match m {
            Message::Assistant { .. } => {
                turn += 1;
                turns.push(TurnEnd {
                    turn,
                    messages: i + 1,
                    context_tokens: 0,
                });
            }
            Message::Tool { .. } => {
                if let Some(t) = turns.last_mut().filter(|t| t.turn > 0) {
                    t.messages = i + 1;
                }
            }
            _ => {}
        }
    }
    turns
}

mod calls;
mod context;
mod rewind;
mod shell;
