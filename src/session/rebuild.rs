//! The conversation, rebuilt from a session's events, exactly as the agent held it: the same
//! deltas make the same messages. Turns that were cancelled, or cut short by a crash, are left
//! out (the agent does not keep them either); calls whose results never arrived are answered
//! with a note, so the conversation stays well-formed for the model. [`rebuild`] instead keeps
//! the unanswered calls of a task that never finished as pending, so that resuming runs them
//! (and asks again for any approval that was waiting). A restarted conversation and dropped
//! tool results (the ways out of a full context) are replayed as the agent applied them.

use crate::protocol::{Event, Message, StopReason, ToolCall};

/// A conversation rebuilt from a log, and the calls it left unanswered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rebuilt {
    pub messages: Vec<Message>,
    /// Calls of the last turn of an unfinished task that have no result yet, in order.
    pub pending: Vec<ToolCall>,
}

/// The conversation for `system_prompt` and `events`, with the unanswered calls of an
/// unfinished last task kept as [`Rebuilt::pending`] instead of being answered with a note.
pub fn rebuild<'a>(system_prompt: &str, events: impl IntoIterator<Item = &'a Event>) -> Rebuilt {
    // Calls are still unanswered at the end only when the last task never finished (its end
    // answers them), and they all belong to its last turn.
    let (messages, unanswered) = replay(system_prompt, events);
    let pending = last_turn_calls(&messages)
        .into_iter()
        .filter(|c| unanswered.contains(&c.id))
        .collect();
    Rebuilt { messages, pending }
}

/// The tool calls of the last assistant message.
fn last_turn_calls(messages: &[Message]) -> Vec<ToolCall> {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Answer each call in `unanswered` with the note of a session that stopped.
fn close(messages: &mut Vec<Message>, unanswered: Vec<String>) {
    for id in unanswered {
        messages.push(Message::tool(
            Some(id),
            "This call was not run: the session stopped before it finished.",
        ));
    }
}

#[derive(Default)]
struct Partial {
    reasoning: String,
    content: String,
    calls: Vec<ToolCall>,
}

/// Messages for `system_prompt` followed by what `events` record.
pub fn rebuild_messages<'a>(
    system_prompt: &str,
    events: impl IntoIterator<Item = &'a Event>,
) -> Vec<Message> {
    let (mut messages, unanswered) = replay(system_prompt, events);
    close(&mut messages, unanswered);
    messages
}

/// The messages `events` record, and the calls still unanswered at the end (in order).
fn replay<'a>(
    system_prompt: &str,
    events: impl IntoIterator<Item = &'a Event>,
) -> (Vec<Message>, Vec<String>) {
    let mut messages = vec![Message::system(system_prompt)];
    let mut current: Option<Partial> = None;
    let mut unanswered: Vec<String> = Vec::new();
    for e in events {
        match e {
            Event::UserMessage { text } => {
                close(&mut messages, std::mem::take(&mut unanswered));
                messages.push(Message::user(text.clone()));
            }
            Event::ConversationRestarted { .. } => {
                unanswered.clear();
                messages.truncate(1);
            }
            Event::ToolResultsDropped { dropped, .. } => {
                for d in dropped {
                    let found = messages.iter_mut().find(|m| {
                        matches!(m, Message::Tool { tool_call_id: Some(id), .. } if *id == d.call_id)
                    });
                    if let Some(Message::Tool { content, .. }) = found {
                        *content = d.note.clone();
                    }
                }
            }
            Event::TurnStarted { .. } => current = Some(Partial::default()),
            Event::ReasoningDelta { text } => {
                if let Some(p) = &mut current {
                    p.reasoning.push_str(text);
                }
            }
            Event::ContentDelta { text } => {
                if let Some(p) = &mut current {
                    p.content.push_str(text);
                }
            }
            Event::TurnRevised { reasoning, content } => {
                if let Some(p) = &mut current {
                    p.reasoning = reasoning.clone();
                    p.content = content.clone();
                }
            }
            Event::ToolCallReady { call } => {
                if let Some(p) = &mut current {
                    p.calls.push(call.clone());
                }
            }
            Event::TurnFinished { stop, .. } => {
                let Some(p) = current.take() else { continue };
                if *stop == StopReason::Cancelled {
                    continue;
                }
                unanswered = p.calls.iter().map(|c| c.id.clone()).collect();
                messages.push(Message::assistant(
                    (!p.reasoning.is_empty()).then_some(p.reasoning),
                    p.content,
                    p.calls,
                ));
            }
            Event::ToolResult {
                call_id, content, ..
            } => {
                unanswered.retain(|id| id != call_id);
                messages.push(Message::tool(Some(call_id.clone()), content.clone()));
            }
            Event::TaskFinished { .. } => close(&mut messages, std::mem::take(&mut unanswered)),
            _ => {}
        }
    }
    (messages, unanswered)
}
