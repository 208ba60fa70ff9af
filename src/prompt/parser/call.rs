//! The tool-call half of the parser's state machine: from `<tool_call>` to the call's end,
//! including typing each argument and reporting malformed calls.
//!
//! Owns: the states `CallOpen` to `Junk` and the events they emit. The text states, the
//! public types and the invariants live in the parent module.

use serde_json::Map;

use super::{
    find_tag, is_partial, partial_tag_len, CallBuild, CallEnd, ParseEvent, ParsedCallError, Parser,
    State, CALL_CLOSE, CALL_OPEN, FORMAT_HINT, FUNCTION_CLOSE, FUNCTION_OPEN, MAX_NAME,
    PARAM_CLOSE, PARAM_OPEN,
};
use crate::prompt::typing::type_value;
use crate::protocol::ToolCall;

impl Parser {
    pub(super) fn begin_call(&mut self) {
        self.call = Some(CallBuild {
            index: self.calls_seen,
            name: None,
            args: Map::new(),
            param: None,
            value: String::new(),
        });
        self.calls_seen += 1;
        self.state = State::CallOpen;
    }

    pub(super) fn step_open(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        let t = rest.trim_start();
        let lead = rest.len() - t.len();
        if t.starts_with(FUNCTION_OPEN) {
            self.consume(lead + FUNCTION_OPEN.len());
            self.state = State::FunctionName;
        } else if t.starts_with(CALL_CLOSE) {
            self.consume(lead + CALL_CLOSE.len());
            self.fail(
                "A <tool_call> was closed before any <function=NAME> inside it.",
                out,
            );
            self.state = State::Content;
        } else if t.is_empty() || (!eof && is_partial(t, &[FUNCTION_OPEN, CALL_CLOSE])) {
            self.consume(lead);
            return lead > 0;
        } else {
            let json_hint = if t.starts_with('{') {
                " JSON inside <tool_call> is not the format used here."
            } else {
                ""
            };
            let message = format!(
                "A tool call could not be read: after <tool_call> the next line must be \
                 <function=NAME>.{json_hint} {FORMAT_HINT}"
            );
            self.consume(lead);
            self.fail(&message, out);
        }
        true
    }

    /// Reads a function or parameter name up to `>`, which must come on the same line.
    pub(super) fn step_name(&mut self, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        let stop = rest.find(['>', '<', '\n']);
        let end = stop.unwrap_or(rest.len());
        let is_function = self.state == State::FunctionName;
        let what = if is_function {
            "the function name after <function="
        } else {
            "a parameter name after <parameter="
        };
        if end > MAX_NAME {
            let message = format!("{what} is too long or misses its closing >.");
            self.fail_in_call(&message, out);
            return true;
        }
        let Some(at) = stop else {
            return false; // wait for the `>`
        };
        if !rest[at..].starts_with('>') {
            let message = format!("{what} must be followed by > on the same line. {FORMAT_HINT}");
            self.fail_in_call(&message, out);
            return true;
        }
        let name = rest[..at].trim().to_string();
        self.consume(at + 1);
        if name.is_empty() {
            self.fail_in_call(&format!("{what} is empty."), out);
            return true;
        }
        if let Some(call) = self.call.as_mut() {
            if is_function {
                call.name = Some(name.clone());
                out.push(ParseEvent::ToolCallStarted {
                    index: call.index,
                    name,
                });
                self.state = State::CallBody;
            } else {
                call.param = Some(name);
                call.value.clear();
                self.state = State::ParamValue;
            }
        }
        true
    }

    pub(super) fn step_body(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        let t = rest.trim_start();
        let lead = rest.len() - t.len();
        let tags = [PARAM_OPEN, FUNCTION_CLOSE, CALL_CLOSE, CALL_OPEN];
        if let Some(tag) = tags.iter().find(|tag| t.starts_with(**tag)) {
            self.consume(lead + tag.len());
            match *tag {
                PARAM_OPEN => self.state = State::ParamName,
                FUNCTION_CLOSE => self.state = State::AfterFunction,
                CALL_CLOSE => {
                    self.complete(CallEnd::Closed, out);
                    self.state = State::Content;
                }
                _ => {
                    self.complete(CallEnd::Closed, out);
                    self.begin_call();
                }
            }
            return true;
        }
        if t.is_empty() || (!eof && is_partial(t, &tags)) {
            self.consume(lead);
            return lead > 0;
        }
        // Stray text between parameters is ignored, up to the next possible tag.
        let first = t.chars().next().map_or(1, char::len_utf8);
        let skip = match t[first..].find('<') {
            Some(i) => first + i,
            None => t.len(),
        };
        self.consume(lead + skip);
        true
    }

    pub(super) fn step_value(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        let tags = [PARAM_CLOSE, PARAM_OPEN, FUNCTION_CLOSE, CALL_CLOSE];
        match find_tag(rest, &tags) {
            Some((at, tag)) => {
                let text = rest[..at].to_string();
                let skip = if tag == PARAM_CLOSE { tag.len() } else { 0 };
                self.consume(at + skip);
                if let Some(call) = self.call.as_mut() {
                    call.value.push_str(&text);
                }
                self.finish_param(out);
                self.state = State::CallBody;
                true
            }
            None => {
                let keep = if eof { 0 } else { partial_tag_len(rest, &tags) };
                let n = rest.len() - keep;
                let text = rest[..n].to_string();
                if let Some(call) = self.call.as_mut() {
                    call.value.push_str(&text);
                }
                self.consume(n);
                n > 0
            }
        }
    }

    pub(super) fn step_after_function(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        let t = rest.trim_start();
        let lead = rest.len() - t.len();
        if t.starts_with(CALL_CLOSE) {
            self.consume(lead + CALL_CLOSE.len());
            self.complete(CallEnd::Closed, out);
            self.state = State::Content;
        } else if t.starts_with(CALL_OPEN) {
            self.consume(lead + CALL_OPEN.len());
            self.complete(CallEnd::Closed, out);
            self.begin_call();
        } else if !eof && (t.is_empty() || is_partial(t, &[CALL_CLOSE, CALL_OPEN])) {
            // The whitespace stays: it belongs to the content if no closer follows.
            return false;
        } else {
            // `</tool_call>` left out: the call is whole; what follows is content.
            self.complete(CallEnd::Closed, out);
            self.state = State::Content;
        }
        true
    }

    pub(super) fn step_junk(&mut self, eof: bool) -> bool {
        let rest = self.rest();
        let tags = [CALL_CLOSE, CALL_OPEN];
        match find_tag(rest, &tags) {
            Some((at, tag)) => {
                self.consume(at + tag.len());
                if tag == CALL_OPEN {
                    self.begin_call();
                } else {
                    self.state = State::Content;
                }
                true
            }
            None => {
                let keep = if eof { 0 } else { partial_tag_len(rest, &tags) };
                let n = rest.len() - keep;
                self.consume(n);
                n > 0
            }
        }
    }

    /// Ends the parameter being read: one leading and one trailing newline go, then typing.
    pub(super) fn finish_param(&mut self, out: &mut Vec<ParseEvent>) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let Some(param) = call.param.take() else {
            return;
        };
        let raw = std::mem::take(&mut call.value);
        let raw = raw.strip_prefix('\n').unwrap_or(&raw);
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        let tool = call.name.as_deref().unwrap_or("");
        let value = type_value(raw, self.schemas.param_type(tool, &param));
        out.push(ParseEvent::ToolCallArgument {
            index: call.index,
            name: param.clone(),
            value: value.clone(),
        });
        call.args.insert(param, value);
    }

    pub(super) fn complete(&mut self, end: CallEnd, out: &mut Vec<ParseEvent>) {
        let Some(call) = self.call.take() else {
            return;
        };
        let id = format!("call_{}", self.next_id);
        self.next_id += 1;
        out.push(ParseEvent::ToolCallComplete {
            index: call.index,
            call: ToolCall {
                id,
                name: call.name.unwrap_or_default(),
                arguments: call.args,
            },
            end,
        });
    }

    /// Reports the open call as malformed and drops it.
    pub(super) fn fail(&mut self, message: &str, out: &mut Vec<ParseEvent>) {
        let (index, name) = match self.call.take() {
            Some(call) => (call.index, call.name),
            None => (self.calls_seen.saturating_sub(1), None),
        };
        out.push(ParseEvent::ToolCallError(ParsedCallError {
            index,
            name,
            message: message.to_string(),
        }));
        self.state = State::Junk;
    }

    /// Like [`Parser::fail`], naming the function when it is known.
    fn fail_in_call(&mut self, message: &str, out: &mut Vec<ParseEvent>) {
        let message = match self.call.as_ref().and_then(|c| c.name.as_deref()) {
            Some(name) => format!("The call to {name} could not be read: {message}"),
            None => format!("A tool call could not be read: {message}"),
        };
        self.fail(&message, out);
    }
}
