//! A whole parsed turn: the parser's events folded into reasoning, content, calls and errors.
//!
//! Owns: folding events (used by `lilypad parse`, by tests, and by anyone who wants the end
//! result rather than the stream). Does not own: parsing itself (`parser`).

use serde::Serialize;

use super::parser::{CallEnd, ParseEvent, ParsedCallError, Parser, Start};
use super::tools::ToolSchemas;
use crate::protocol::ToolCall;

/// Everything one model turn said.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ParsedTurn {
    pub reasoning: String,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    /// Id of the call the output stopped inside, if any (always the last call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_off_call: Option<String>,
    pub errors: Vec<ParsedCallError>,
}

impl ParsedTurn {
    /// Fold one event in.
    pub fn apply(&mut self, event: ParseEvent) {
        match event {
            ParseEvent::Reasoning(t) => self.reasoning.push_str(&t),
            ParseEvent::Content(t) => self.content.push_str(&t),
            ParseEvent::ToolCallStarted { .. }
            | ParseEvent::ToolCallArgumentDelta { .. }
            | ParseEvent::ToolCallArgument { .. } => {}
            ParseEvent::ToolCallComplete { call, end, .. } => {
                if end == CallEnd::CutOff {
                    self.cut_off_call = Some(call.id.clone());
                }
                self.tool_calls.push(call);
            }
            ParseEvent::ToolCallError(e) => self.errors.push(e),
        }
    }

    /// Fold a list of events.
    pub fn from_events(events: impl IntoIterator<Item = ParseEvent>) -> Self {
        let mut turn = Self::default();
        for e in events {
            turn.apply(e);
        }
        turn
    }
}

/// Parse a complete output in one go: the settled reading (see [`Parser::settle`]).
pub fn parse_all(text: &str, schemas: &ToolSchemas, start: Start) -> ParsedTurn {
    let mut parser = Parser::new(schemas.clone(), start);
    let _ = parser.push(text);
    ParsedTurn::from_events(parser.settle())
}
