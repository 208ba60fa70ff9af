//! The tool-call half of the parser's state machine: from `<tool_call>` to the call's end,
//! including typing each argument and reporting malformed calls.
//!
//! Owns: the states `CallOpen` to `Junk` and the events they emit. The text states, the
//! public types and the invariants live in the parent module.

use serde_json::Map;

use super::{
    find_tag, is_partial, partial_tag_len, CallBuild, CallEnd, ParseEvent, ParsedCallError, Parser,
    State, Verdict, CALL_CLOSE, CALL_OPEN, FORMAT_HINT, FUNCTION_CLOSE, FUNCTION_OPEN, MAX_NAME,
    PARAM_CLOSE, PARAM_OPEN,
};
use crate::prompt::typing::type_value;
use crate::protocol::ToolCall;

/// What ended a parameter value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValueEnd {
    /// `</parameter>`.
    Closer,
    /// The next `<parameter=` (closer left out).
    NextParameter,
    /// `</function>`, `</tool_call>` or the end of the output (closer left out).
    BodyEnd,
}

impl Parser {
    /// Opens call number `calls_seen`; its text began `back` bytes before the read position.
    pub(super) fn begin_call(&mut self, back: usize) {
        let start = self.offset().saturating_sub(back);
        self.call_starts.push((self.calls_seen, start));
        self.call = Some(CallBuild {
            index: self.calls_seen,
            name: None,
            args: Map::new(),
            param: None,
            value: String::new(),
            streamed: 0,
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
        // Names are taken as written: `<function= Glob>` names " Glob", which no tool has.
        let name = rest[..at].to_string();
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
                call.streamed = 0;
                self.state = State::ParamValue;
            }
        }
        true
    }

    pub(super) fn step_body(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        let t = rest.trim_start();
        let lead = rest.len() - t.len();
        // A `<tool_call>` here (before this call's `</function>`) does not start a call: SGLang
        // reads on to the next `</function>` as part of this one. It is stray text below.
        let tags = [PARAM_OPEN, FUNCTION_CLOSE, CALL_CLOSE];
        if let Some(tag) = tags.iter().find(|tag| t.starts_with(**tag)) {
            self.consume(lead + tag.len());
            match *tag {
                PARAM_OPEN => self.state = State::ParamName,
                FUNCTION_CLOSE => self.state = State::AfterFunction,
                _ => {
                    self.complete(CallEnd::Closed, out);
                    self.state = State::Content;
                }
            }
            return true;
        }
        if t.is_empty() || (!eof && is_partial(t, &tags)) {
            self.consume(lead);
            return lead > 0;
        }
        // Text outside any value (a stray closer, words): some value was cut at a tag it
        // contained, or the call is garbled. It is read on, up to the next possible tag, and the
        // call will not run.
        let first = t.chars().next().map_or(1, char::len_utf8);
        let skip = match t[first..].find('<') {
            Some(i) => first + i,
            // Up to the next possible tag, whatever the split: wait for it.
            None if !eof => {
                self.consume(lead);
                return lead > 0;
            }
            None => t.len(),
        };
        let stray = t[..skip].to_string();
        if let Some(index) = self.call.as_ref().map(|c| c.index) {
            self.flag_ambiguous(index, &stray);
        }
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
                let end = match tag {
                    PARAM_CLOSE => ValueEnd::Closer,
                    PARAM_OPEN => ValueEnd::NextParameter,
                    _ => ValueEnd::BodyEnd,
                };
                self.finish_param(end, out);
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
                self.stream_value(out);
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
            self.begin_call(CALL_OPEN.len());
        } else if t.starts_with(FUNCTION_OPEN) {
            // Another function in the same <tool_call> block: a call of its own.
            self.consume(lead + FUNCTION_OPEN.len());
            self.complete(CallEnd::Closed, out);
            self.begin_call(FUNCTION_OPEN.len());
            self.state = State::FunctionName;
        } else if !eof && (t.is_empty() || is_partial(t, &[CALL_CLOSE, CALL_OPEN, FUNCTION_OPEN])) {
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
                    self.begin_call(CALL_OPEN.len());
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
    /// A value that runs to the end of its function (no `</parameter>`) loses one more trailing
    /// newline, as SGLang's pattern (which ends such a value at `$`) does.
    pub(super) fn finish_param(&mut self, end: ValueEnd, out: &mut Vec<ParseEvent>) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let Some(param) = call.param.take() else {
            return;
        };
        let raw = std::mem::take(&mut call.value);
        let streamed = std::mem::take(&mut call.streamed);
        // Without its closer, a value that holds the start of a call ran into that call: the
        // arguments of two calls are mixed.
        let ran_into_call =
            end != ValueEnd::Closer && (raw.contains(CALL_OPEN) || raw.contains(FUNCTION_OPEN));
        let raw = match end {
            ValueEnd::BodyEnd => raw.strip_suffix('\n').unwrap_or(&raw),
            _ => &raw,
        };
        let raw = raw.strip_prefix('\n').unwrap_or(raw);
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        let tool = call.name.as_deref().unwrap_or("");
        let value = type_value(raw, self.schemas.param_type(tool, &param));
        let index = call.index;
        // What was held back (the value's last newlines, a tag that was not one) goes now, so
        // the deltas joined are the raw value.
        if let Some(tail) = raw.get(streamed..).filter(|t| !t.is_empty()) {
            out.push(ParseEvent::ToolCallArgumentDelta {
                index,
                name: param.clone(),
                text: tail.to_string(),
            });
        }
        out.push(ParseEvent::ToolCallArgument {
            index,
            name: param.clone(),
            value: value.clone(),
        });
        call.args.insert(param, value);
        if ran_into_call {
            self.flag_ambiguous(index, CALL_OPEN);
        }
    }

    /// Sends what can be sent of the value being read: after its leading newline, up to its
    /// trailing newlines (at most two, which the value's end may take off).
    fn stream_value(&mut self, out: &mut Vec<ParseEvent>) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let Some(param) = call.param.as_ref() else {
            return;
        };
        if call.value.is_empty() || call.value == "\n" {
            return; // the leading newline, or nothing yet
        }
        let body = call.value.strip_prefix('\n').unwrap_or(&call.value);
        let trailing = body.len() - body.trim_end_matches('\n').len();
        let end = body.len() - trailing.min(2);
        if end <= call.streamed {
            return;
        }
        let text = body[call.streamed..end].to_string();
        call.streamed = end;
        out.push(ParseEvent::ToolCallArgumentDelta {
            index: call.index,
            name: param.clone(),
            text,
        });
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

    /// A closer outside any call, after calls: the last call's value was cut at it.
    pub(super) fn stray_closer(&mut self, tag: &str) {
        if let Some(index) = self.calls_seen.checked_sub(1) {
            self.flag_ambiguous(index, tag);
        }
    }

    /// Marks call `index` as not to be run, saying what text showed the ambiguity.
    fn flag_ambiguous(&mut self, index: usize, stray: &str) {
        if self.verdicts.iter().any(|(i, _)| *i == index) {
            return;
        }
        let shown: String = stray.trim().chars().take(60).collect();
        let shown = shown.replace('\n', " ");
        let message = format!(
            "This call was not run because its arguments are ambiguous: `{shown}` appeared where \
             only parameters and closing tags belong. A value ends at the first </parameter>, \
             <parameter=, </function> or </tool_call> inside it, so a value that contains one of \
             these tags is cut short there, and a call without its </function> runs into the \
             next one. Close every call, and write text that holds these tags another way (for \
             example build the tag from parts with Bash and printf), then make the call again."
        );
        self.verdicts.push((index, Verdict::Ambiguous(message)));
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
