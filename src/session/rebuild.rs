//! The conversation, rebuilt from a session's events, exactly as the agent held it: the same
//! deltas make the same messages. Turns that were cancelled, or cut short by a crash, are left
//! out (the agent does not keep them either); calls whose results never arrived are answered
//! with a note, so the conversation stays well-formed for the model. [`rebuild`] instead keeps
//! the unanswered calls of a task that never finished as pending, so that resuming runs them
//! (and asks again for any approval that was waiting). A restarted conversation and dropped
//! tool results (the ways out of a full context) are replayed as the agent applied them, and so
//! is a rewind ([`Event::Rewound`]): the conversation is cut back to the end of that turn, found
//! by the same bookkeeping of where each turn ended that the agent keeps ([`Rebuilt::turns`]).

use crate::protocol::{Event, Message, StopReason, ToolCall, TurnEnd};

/// A conversation rebuilt from a log, and the calls it left unanswered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rebuilt {
    pub messages: Vec<Message>,
    /// Calls of the last turn of an unfinished task that have no result yet, in order.
    pub pending: Vec<ToolCall>,
    /// Where each turn still in the conversation ended (turn 0: the start), in turn order, as
    /// the agent kept them: a resumed agent can rewind to them and numbers its turns on.
    pub turns: Vec<TurnEnd>,
}

/// The conversation for `system_prompt` and `events`, with the unanswered calls of an
/// unfinished last task kept as [`Rebuilt::pending`] instead of being answered with a note.
pub fn rebuild<'a>(system_prompt: &str, events: impl IntoIterator<Item = &'a Event>) -> Rebuilt {
    // Calls are still unanswered at the end only when the last task never finished (its end
    // answers them), and they all belong to its last turn.
    let Replayed {
        messages,
        unanswered,
        turns,
    } = replay(system_prompt, events);
    let pending = last_turn_calls(&messages)
        .into_iter()
        .filter(|c| unanswered.contains(&c.id))
        .collect();
    Rebuilt {
        messages,
        pending,
        turns,
    }
}

/// The conversation as it was at the end of turn `turn` of `events` (after the rewinds they
/// record), with the turns up to it; `None` when the conversation holds no such turn. Calls
/// of that turn without a result are answered with the note of a session that stopped.
pub fn rebuild_at<'a>(
    system_prompt: &str,
    events: impl IntoIterator<Item = &'a Event>,
    turn: u32,
) -> Option<Rebuilt> {
    let Replayed {
        mut messages,
        unanswered,
        mut turns,
    } = replay(system_prompt, events);
    let end = *turns.iter().find(|t| t.turn == turn)?;
    close(&mut messages, unanswered);
    messages.truncate(end.messages.max(1));
    turns.retain(|t| t.turn <= turn);
    Some(Rebuilt {
        messages,
        pending: Vec::new(),
        turns,
    })
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
    let Replayed {
        mut messages,
        unanswered,
        ..
    } = replay(system_prompt, events);
    close(&mut messages, unanswered);
    messages
}

/// What replaying a log gives: the messages, the calls still unanswered at the end (in
/// order), and where each turn ended.
struct Replayed {
    messages: Vec<Message>,
    unanswered: Vec<String>,
    turns: Vec<TurnEnd>,
}

/// Note that turn `turn` ends where the conversation is now (the last note of a turn wins).
fn mark(turns: &mut Vec<TurnEnd>, turn: Option<u32>, messages: usize, context_tokens: usize) {
    let Some(turn) = turn else { return };
    turns.retain(|t| t.turn < turn);
    turns.push(TurnEnd {
        turn,
        messages,
        context_tokens,
    });
}

/// The messages `events` record, the calls still unanswered at the end (in order), and where
/// each turn ended, the way the agent notes them: when a turn settles (a cancelled one too,
/// which leaves the conversation as it was) and after each result or note added to it.
fn replay<'a>(system_prompt: &str, events: impl IntoIterator<Item = &'a Event>) -> Replayed {
    let mut messages = vec![Message::system(system_prompt)];
    let mut current: Option<Partial> = None;
    let mut unanswered: Vec<String> = Vec::new();
    let mut turns = vec![TurnEnd {
        turn: 0,
        messages: 1,
        context_tokens: 0,
    }];
    // The turn being answered, and the context it left.
    let mut last: Option<u32> = Some(0);
    let mut tokens = 0;
    // Project instructions announced for the message that follows them.
    let mut instructions: Option<&str> = None;
    for e in events {
        match e {
            Event::ProjectInstructions { text, .. } => instructions = Some(text),
            Event::UserMessage { text } => {
                if !unanswered.is_empty() {
                    close(&mut messages, std::mem::take(&mut unanswered));
                    mark(&mut turns, last, messages.len(), tokens);
                }
                let head = instructions.take().unwrap_or_default();
                messages.push(Message::user(format!("{head}{text}")));
            }
            Event::ConversationRestarted { .. } => {
                unanswered.clear();
                messages.truncate(1);
                turns.clear();
                last = None;
                tokens = 0;
            }
            Event::Rewound {
                turn,
                messages: kept,
                context_tokens,
                ..
            } => {
                current = None;
                unanswered.clear();
                let end = turns.iter().find(|t| t.turn == *turn).copied();
                let end = end.unwrap_or(TurnEnd {
                    turn: *turn,
                    messages: *kept,
                    context_tokens: *context_tokens,
                });
                messages.truncate(end.messages.max(1));
                turns.retain(|t| t.turn < *turn);
                turns.push(end);
                last = Some(*turn);
                tokens = end.context_tokens;
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
            Event::TurnStarted { turn: step } => {
                current = Some(Partial::default());
                last = Some(*step);
            }
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
            Event::TurnFinished {
                stop,
                turn: step,
                context_tokens,
                ..
            } => {
                let Some(p) = current.take() else { continue };
                if *stop != StopReason::Cancelled {
                    unanswered = p.calls.iter().map(|c| c.id.clone()).collect();
                    messages.push(Message::assistant(
                        (!p.reasoning.is_empty()).then_some(p.reasoning),
                        p.content,
                        p.calls,
                    ));
                    tokens = *context_tokens;
                }
                last = Some(*step);
                mark(&mut turns, last, messages.len(), tokens);
            }
            Event::ToolResult {
                call_id, content, ..
            } => {
                unanswered.retain(|id| id != call_id);
                messages.push(Message::tool(Some(call_id.clone()), content.clone()));
                mark(&mut turns, last, messages.len(), tokens);
            }
            Event::TaskFinished { .. } if !unanswered.is_empty() => {
                close(&mut messages, std::mem::take(&mut unanswered));
                mark(&mut turns, last, messages.len(), tokens);
            }
            _ => {}
        }
    }
    Replayed {
        messages,
        unanswered,
        turns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Figures, Resolution, Reuse};

    fn figures() -> Figures {
        Figures {
            prompt_tokens: 10,
            reused_tokens: 0,
            evaluated_tokens: 10,
            reuse: Reuse::Fresh,
            generated_tokens: 5,
            prefill_seconds: 0.0,
            decode_seconds: 0.0,
            dropped_pin: None,
            draft: None,
        }
    }

    /// Turn `step` with one call and its result, or an answer.
    fn turn(step: u32, call: bool, stop: StopReason) -> Vec<Event> {
        let mut evs = vec![
            Event::TurnStarted { turn: step },
            Event::ContentDelta {
                text: format!("turn {step}"),
            },
        ];
        let id = format!("call_{step}");
        if call {
            evs.push(Event::ToolCallReady {
                call: ToolCall {
                    id: id.clone(),
                    name: "Read".into(),
                    arguments: Default::default(),
                },
            });
        }
        evs.push(Event::TurnFinished {
            turn: step,
            stop,
            figures: figures(),
            context_tokens: 100 * step as usize,
        });
        if call && stop != StopReason::Cancelled {
            evs.push(Event::ToolResult {
                call_id: id,
                name: "Read".into(),
                content: format!("result {step}"),
                is_error: false,
                resolution: Resolution::Auto,
            });
        }
        evs
    }

    fn session() -> Vec<Event> {
        let mut evs = vec![Event::UserMessage { text: "go".into() }];
        evs.extend(turn(1, true, StopReason::EndOfGeneration));
        // A cancelled turn ends where turn 1 did.
        evs.extend(turn(2, true, StopReason::Cancelled));
        evs.extend(turn(3, true, StopReason::EndOfGeneration));
        evs.extend(turn(4, false, StopReason::EndOfGeneration));
        evs.push(Event::TaskFinished {
            reason: crate::protocol::FinishReason::Answered,
            final_answer: Some("turn 4".into()),
        });
        evs
    }

    #[test]
    fn turn_ends_are_noted_as_the_agent_notes_them() {
        let r = rebuild("s", &session());
        let ends: Vec<(u32, usize, usize)> = r
            .turns
            .iter()
            .map(|t| (t.turn, t.messages, t.context_tokens))
            .collect();
        // system, user, a1, t1, a3, t3, a4
        assert_eq!(
            ends,
            vec![
                (0, 1, 0),
                (1, 4, 100),
                (2, 4, 100),
                (3, 6, 300),
                (4, 7, 400)
            ]
        );
    }

    #[test]
    fn a_rewind_cuts_the_conversation_back_and_later_turns_follow_it() {
        let mut evs = session();
        evs.push(Event::Rewound {
            turn: 1,
            messages: 4,
            context_tokens: 100,
            from_turn: 4,
        });
        let r = rebuild("s", &evs);
        assert_eq!(r.messages.len(), 4);
        assert!(matches!(&r.messages[3], Message::Tool { content, .. } if content == "result 1"));
        assert_eq!(r.turns.last().map(|t| t.turn), Some(1));
        evs.push(Event::UserMessage {
            text: "again".into(),
        });
        evs.extend(turn(2, false, StopReason::EndOfGeneration));
        let r = rebuild("s", &evs);
        assert_eq!(r.messages.len(), 6);
        assert!(
            matches!(&r.messages[5], Message::Assistant { content, .. } if content == "turn 2")
        );
        // Back to the start: only the system prompt is left.
        evs.push(Event::Rewound {
            turn: 0,
            messages: 1,
            context_tokens: 0,
            from_turn: 2,
        });
        assert_eq!(rebuild_messages("s", &evs).len(), 1);
        assert_eq!(rebuild_at("s", &session(), 3).unwrap().messages.len(), 6);
        assert!(rebuild_at("s", &session(), 9).is_none());
    }
}
