//! The conversation, rebuilt from a session's events, exactly as the agent held it: the same
//! deltas make the same messages. Turns that were cancelled, or cut short by a crash, are left
//! out (the agent does not keep them either); calls whose results never arrived are answered
//! with a note, so the conversation stays well-formed for the model.

use crate::protocol::{Event, Message, StopReason, ToolCall};

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
    let mut messages = vec![Message::system(system_prompt)];
    let mut current: Option<Partial> = None;
    let mut unanswered: Vec<String> = Vec::new();
    let close = |messages: &mut Vec<Message>, unanswered: &mut Vec<String>| {
        for id in unanswered.drain(..) {
            messages.push(Message::tool(
                Some(id),
                "This call was not run: the session stopped before it finished.",
            ));
        }
    };
    for e in events {
        match e {
            Event::UserMessage { text } => {
                close(&mut messages, &mut unanswered);
                messages.push(Message::user(text.clone()));
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
            Event::TaskFinished { .. } => close(&mut messages, &mut unanswered),
            _ => {}
        }
    }
    close(&mut messages, &mut unanswered);
    messages
}
