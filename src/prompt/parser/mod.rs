//! The streaming parser of model output: text pieces in, [`ParseEvent`]s out (MODEL.md section 4).
//!
//! Owns: splitting output into reasoning, content and tool calls in the qwen3_coder layout
//! (`<tool_call>\n<function=NAME>\n<parameter=NAME>\nVALUE\n</parameter>\n</function>\n</tool_call>`),
//! typing argument values by the tool schemas, and describing malformed calls in plain words that
//! can go back to the model. Does not own: deciding whether to run calls (a turn cut off by the
//! token cap runs none: the agent decides, knowing why generation stopped).
//!
//! Invariants:
//! - Any split of the same text into pieces gives the same events once adjacent reasoning and
//!   content deltas are joined. Text that could be the start of a tag is held back only until it
//!   is decided; a parameter value is held until its closer (values are emitted whole).
//! - Reasoning and content come out trimmed: leading whitespace is dropped, trailing whitespace is
//!   held until more text of the same kind follows, and dropped at the end.
//! - No input panics or loops: every step consumes text or changes state towards consuming it.
//! - The output starts inside reasoning by default (the generation prompt ends with `<think>\n`);
//!   reasoning ends at `</think>`, or at `<tool_call>` when the model skips `</think>`; output
//!   that stops inside reasoning is all reasoning.

use serde::Serialize;
use serde_json::{Map, Value};

use super::tools::ToolSchemas;
use super::typing::type_value;
use crate::protocol::ToolCall;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";
const FUNCTION_OPEN: &str = "<function=";
const FUNCTION_CLOSE: &str = "</function>";
const PARAM_OPEN: &str = "<parameter=";
const PARAM_CLOSE: &str = "</parameter>";
/// Longest function or parameter name accepted; longer text before `>` is a malformed call.
const MAX_NAME: usize = 128;
const FORMAT_HINT: &str = "Write each call as <tool_call>, then <function=NAME>, then for each \
argument <parameter=NAME>, the value on the following lines, </parameter>; then </function> and \
</tool_call>, each tag on its own line.";

/// Where the model's output begins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Start {
    /// Inside reasoning: the prompt ended with `<think>\n` (thinking on).
    #[default]
    Reasoning,
    /// In visible content (thinking off).
    Content,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallEnd {
    /// By its closing tags (or the next `<tool_call>`, when a closer was left out).
    Closed,
    /// The output stopped inside the call; its arguments are what had arrived.
    CutOff,
}

/// A tool call that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParsedCallError {
    /// Position of the call in the turn, from 0.
    pub index: usize,
    /// The function name, when it had been read.
    pub name: Option<String>,
    /// What was wrong, in words meant for the model.
    pub message: String,
}

/// What the parser found in the output.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseEvent {
    Reasoning(String),
    Content(String),
    /// `<function=NAME>` has been read.
    ToolCallStarted {
        index: usize,
        name: String,
    },
    /// One argument, typed, when its closer arrived.
    ToolCallArgument {
        index: usize,
        name: String,
        value: Value,
    },
    ToolCallComplete {
        index: usize,
        call: ToolCall,
        end: CallEnd,
    },
    ToolCallError(ParsedCallError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reasoning,
    Content,
    CallOpen,
    FunctionName,
    CallBody,
    ParamName,
    ParamValue,
    AfterFunction,
    /// Skipping a malformed call up to its `</tool_call>` (its error is already out).
    Junk,
}

#[derive(Debug, Default)]
struct Section {
    started: bool,
    held_ws: String,
}

impl Section {
    /// The part of `text` to emit now, trimming as described in the module invariants.
    fn take(&mut self, text: &str) -> Option<String> {
        let text = if self.started {
            text
        } else {
            text.trim_start()
        };
        let body = text.trim_end().len();
        if body == 0 {
            if self.started {
                self.held_ws.push_str(text);
            }
            return None;
        }
        let mut out = std::mem::take(&mut self.held_ws);
        out.push_str(&text[..body]);
        self.held_ws.push_str(&text[body..]);
        self.started = true;
        Some(out)
    }
}

#[derive(Debug)]
struct CallBuild {
    index: usize,
    name: Option<String>,
    args: Map<String, Value>,
    param: Option<String>,
    value: String,
}

/// The incremental parser. Feed pieces with [`Parser::push`], then call [`Parser::finish`] once.
#[derive(Debug)]
pub struct Parser {
    schemas: ToolSchemas,
    state: State,
    pending: String,
    pos: usize,
    reasoning: Section,
    content: Section,
    call: Option<CallBuild>,
    calls_seen: usize,
    next_id: usize,
    finished: bool,
}

impl Parser {
    pub fn new(schemas: ToolSchemas, start: Start) -> Self {
        Self {
            schemas,
            state: match start {
                Start::Reasoning => State::Reasoning,
                Start::Content => State::Content,
            },
            pending: String::new(),
            pos: 0,
            reasoning: Section::default(),
            content: Section::default(),
            call: None,
            calls_seen: 0,
            next_id: 0,
            finished: false,
        }
    }

    /// Number the calls' ids from `n` (`call_{n}`, `call_{n+1}`, ...), so ids stay unique
    /// across the turns of a session.
    pub fn with_first_call_number(mut self, n: usize) -> Self {
        self.next_id = n;
        self
    }

    /// The number the next complete call's id will carry.
    pub fn next_call_number(&self) -> usize {
        self.next_id
    }

    /// Feed one piece of output. Pieces after [`Parser::finish`] are ignored.
    pub fn push(&mut self, piece: &str) -> Vec<ParseEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.pending.drain(..self.pos);
        self.pos = 0;
        self.pending.push_str(piece);
        while self.step(false, &mut out) {}
        out
    }

    /// The output has ended: decide what was held back and close an open call.
    pub fn finish(&mut self) -> Vec<ParseEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.finished = true;
        while self.step(true, &mut out) {}
        match self.state {
            State::Reasoning | State::Content | State::Junk => {}
            State::CallOpen => self.fail(
                "The output ended right after <tool_call>, before the function name.",
                &mut out,
            ),
            State::FunctionName => self.fail(
                "The output ended in the middle of the function name after <function=.",
                &mut out,
            ),
            State::ParamValue => {
                self.finish_param(&mut out);
                self.complete(CallEnd::CutOff, &mut out);
            }
            State::CallBody | State::ParamName => self.complete(CallEnd::CutOff, &mut out),
            State::AfterFunction => self.complete(CallEnd::Closed, &mut out),
        }
        self.state = State::Content;
        out
    }

    fn rest(&self) -> &str {
        &self.pending[self.pos..]
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    fn emit_text(&mut self, reasoning: bool, n: usize, out: &mut Vec<ParseEvent>) {
        let text = &self.pending[self.pos..self.pos + n];
        if reasoning {
            if let Some(t) = self.reasoning.take(text) {
                out.push(ParseEvent::Reasoning(t));
            }
        } else if let Some(t) = self.content.take(text) {
            out.push(ParseEvent::Content(t));
        }
        self.consume(n);
    }

    /// One step of the state machine; false when nothing more can be decided now.
    fn step(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        match self.state {
            State::Reasoning => self.step_text(true, eof, out),
            State::Content => self.step_text(false, eof, out),
            State::CallOpen => self.step_open(eof, out),
            State::FunctionName | State::ParamName => self.step_name(out),
            State::CallBody => self.step_body(eof, out),
            State::ParamValue => self.step_value(eof, out),
            State::AfterFunction => self.step_after_function(eof, out),
            State::Junk => self.step_junk(eof),
        }
    }

    fn step_text(&mut self, reasoning: bool, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
        let rest = self.rest();
        if reasoning && !self.reasoning.started {
            // A stray `<think>` at the very start (the template did not open it) is skipped.
            let t = rest.trim_start();
            let lead = rest.len() - t.len();
            if t.starts_with(THINK_OPEN) {
                self.consume(lead + THINK_OPEN.len());
                return true;
            }
            if !eof && !t.is_empty() && THINK_OPEN.starts_with(t) {
                return false;
            }
        }
        let tags: &[&'static str] = if reasoning {
            &[THINK_CLOSE, CALL_OPEN]
        } else {
            &[CALL_OPEN]
        };
        match find_tag(rest, tags) {
            Some((at, tag)) => {
                self.emit_text(reasoning, at, out);
                self.consume(tag.len());
                if tag == THINK_CLOSE {
                    self.state = State::Content;
                } else {
                    self.begin_call();
                }
                true
            }
            None => {
                let keep = if eof { 0 } else { partial_tag_len(rest, tags) };
                let n = rest.len() - keep;
                self.emit_text(reasoning, n, out);
                n > 0
            }
        }
    }

    fn begin_call(&mut self) {
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

    fn step_open(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
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
    fn step_name(&mut self, out: &mut Vec<ParseEvent>) -> bool {
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

    fn step_body(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
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

    fn step_value(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
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

    fn step_after_function(&mut self, eof: bool, out: &mut Vec<ParseEvent>) -> bool {
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

    fn step_junk(&mut self, eof: bool) -> bool {
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
    fn finish_param(&mut self, out: &mut Vec<ParseEvent>) {
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

    fn complete(&mut self, end: CallEnd, out: &mut Vec<ParseEvent>) {
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
    fn fail(&mut self, message: &str, out: &mut Vec<ParseEvent>) {
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

/// The earliest occurrence of any of `tags` (all start with `<`).
fn find_tag(s: &str, tags: &[&'static str]) -> Option<(usize, &'static str)> {
    let mut from = 0;
    while let Some(off) = s[from..].find('<') {
        let at = from + off;
        if let Some(tag) = tags.iter().find(|t| s[at..].starts_with(**t)) {
            return Some((at, tag));
        }
        from = at + 1; // `<` is one byte, so this stays on a character boundary
    }
    None
}

/// Length of the longest suffix of `s` that is a proper prefix of one of `tags`: text that must
/// wait for the next piece before it can be called plain text.
fn partial_tag_len(s: &str, tags: &[&str]) -> usize {
    let longest = tags.iter().map(|t| t.len()).max().unwrap_or(0);
    let max = longest.saturating_sub(1).min(s.len());
    (1..=max)
        .rev()
        .find(|&k| {
            tags.iter()
                .any(|t| t.len() > k && s.as_bytes().ends_with(&t.as_bytes()[..k]))
        })
        .unwrap_or(0)
}

/// Whether `t` is a proper prefix of one of `tags` (so it may still become that tag).
fn is_partial(t: &str, tags: &[&str]) -> bool {
    tags.iter()
        .any(|tag| tag.len() > t.len() && tag.starts_with(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_tags() {
        assert_eq!(partial_tag_len("abc<tool", &[CALL_OPEN]), 5);
        assert_eq!(partial_tag_len("abc<tool_call>", &[CALL_OPEN]), 0);
        assert_eq!(partial_tag_len("é<", &[CALL_OPEN, THINK_CLOSE]), 1);
        assert_eq!(partial_tag_len("x</", &[CALL_OPEN, THINK_CLOSE]), 2);
        assert_eq!(partial_tag_len("", &[CALL_OPEN]), 0);
        assert_eq!(
            find_tag("a<b</think>", &[THINK_CLOSE]),
            Some((3, THINK_CLOSE))
        );
    }

    #[test]
    fn section_trims_and_holds_whitespace() {
        let mut s = Section::default();
        assert_eq!(s.take("  \n"), None);
        assert_eq!(s.take(" a "), Some("a".into()));
        assert_eq!(s.take("\n"), None);
        assert_eq!(s.take("b"), Some(" \nb".into()));
    }
}
