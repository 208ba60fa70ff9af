//! The settled reading of a whole turn: what SGLang's non-streamed path gives for the same
//! text, with Lilypad's safety rules on top. Only these calls may run.
//!
//! Owns: deciding where reasoning ends with the whole output in view (the first `</think>`,
//! else the first `<tool_call>`), dropping a last call that has no `</tool_call>` after calls
//! that had one, turning ambiguous calls into errors for the model, and numbering the calls
//! that remain. The call syntax itself is read by the same state machine as the live view.

use super::{
    ParseEvent, ParsedCallError, Parser, Start, Verdict, CALL_CLOSE, CALL_OPEN, THINK_CLOSE,
    THINK_OPEN,
};
use crate::protocol::ToolCall;

impl Parser {
    /// The turn decided as a whole: one `Reasoning`, one `Content` (each when not empty), then
    /// the calls and call errors in the order they were written. Ends the live view if
    /// [`Parser::finish`] was not called yet. Afterwards [`Parser::next_call_number`] counts
    /// only the calls given here.
    pub fn settle(&mut self) -> Vec<ParseEvent> {
        if !self.finished {
            let _ = self.finish();
        }
        let (reasoning, rest) = split_reasoning(&self.full, self.start);
        let mut inner = Parser::new(self.schemas.clone(), Start::Content);
        let mut events = inner.push(rest);
        events.extend(inner.finish());

        // After a call closed by </tool_call>, a later call without one is dropped (SGLang reads
        // calls only between the tags when any pair is complete).
        let dropped: Vec<usize> = match rest.rfind(CALL_CLOSE) {
            Some(last_close) => inner
                .call_starts
                .iter()
                .filter(|(_, start)| *start > last_close)
                .map(|(index, _)| *index)
                .collect(),
            None => Vec::new(),
        };
        let verdict = |index: usize| {
            inner
                .verdicts
                .iter()
                .find(|(i, _)| *i == index)
                .map(|(_, v)| v.clone())
        };

        let mut out = Vec::new();
        let reasoning = reasoning.trim();
        if !reasoning.is_empty() {
            out.push(ParseEvent::Reasoning(reasoning.to_string()));
        }
        let content: String = events
            .iter()
            .filter_map(|e| match e {
                ParseEvent::Content(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        if !content.is_empty() {
            out.push(ParseEvent::Content(content));
        }
        let mut next = self.first_id;
        for e in events {
            let index = match &e {
                // Deltas belong to the live view; the settled turn has whole values.
                ParseEvent::Reasoning(_)
                | ParseEvent::Content(_)
                | ParseEvent::ToolCallArgumentDelta { .. } => continue,
                ParseEvent::ToolCallStarted { index, .. }
                | ParseEvent::ToolCallArgument { index, .. }
                | ParseEvent::ToolCallComplete { index, .. } => *index,
                ParseEvent::ToolCallError(err) => err.index,
            };
            if dropped.contains(&index) {
                continue;
            }
            match (e, verdict(index)) {
                (ParseEvent::ToolCallComplete { call, .. }, Some(Verdict::Ambiguous(message))) => {
                    out.push(ParseEvent::ToolCallError(ParsedCallError {
                        index,
                        name: Some(call.name),
                        message,
                    }));
                }
                (ParseEvent::ToolCallComplete { call, end, .. }, None) => {
                    out.push(ParseEvent::ToolCallComplete {
                        index,
                        call: ToolCall {
                            id: format!("call_{next}"),
                            ..call
                        },
                        end,
                    });
                    next += 1;
                }
                (ParseEvent::ToolCallError(err), _) => out.push(ParseEvent::ToolCallError(err)),
                (e, None) => out.push(e),
                (_, Some(_)) => {}
            }
        }
        self.next_id = next;
        out
    }
}

/// The reasoning and the text after it, as SGLang's `qwen3` reasoning parser splits a whole
/// reply: leading `<think>` tags are skipped; reasoning ends at the first `</think>` (which is
/// dropped), else at the first `<tool_call>` (which stays); with neither, all is reasoning.
/// Output that starts in content has reasoning only if it writes `<think>` itself.
fn split_reasoning(full: &str, start: Start) -> (&str, &str) {
    if start == Start::Content && !full.contains(THINK_OPEN) {
        return ("", full);
    }
    let mut text = full;
    while let Some(rest) = text.trim_start().strip_prefix(THINK_OPEN) {
        text = rest;
    }
    if let Some(at) = text.find(THINK_CLOSE) {
        return (&text[..at], &text[at + THINK_CLOSE.len()..]);
    }
    if let Some(at) = text.find(CALL_OPEN) {
        return (&text[..at], &text[at..]);
    }
    (text, "")
}
