//! The parser of model output (docs/prompt-format.md, "Parsing model output"): text pieces in,
//! [`ParseEvent`]s out, read the way SGLang's `qwen3` reasoning parser and `qwen3_coder` tool
//! parser read a whole reply.
//!
//! Owns: splitting output into reasoning, content and tool calls in the qwen3_coder layout
//! (`<tool_call>\n<function=NAME>\n<parameter=NAME>\nVALUE\n</parameter>\n</function>\n</tool_call>`),
//! typing argument values by the tool schemas, and describing malformed or ambiguous calls in
//! plain words that can go back to the model. Does not own: deciding whether to run calls (a
//! turn cut off by the token cap runs none: the agent decides, knowing why generation stopped).
//!
//! Two views of one output:
//! - live ([`Parser::push`], [`Parser::finish`]): events as the text arrives, for display. They
//!   are tentative: a `</think>` that comes later turns everything before it, calls included,
//!   into reasoning, and a call can still be found ambiguous or dropped.
//! - settled ([`Parser::settle`], [`parse_all`](super::parse_all)): the whole turn decided at its
//!   end; only these calls may run and only this text goes into the conversation.
//!
//! Invariants:
//! - Any split of the same text into pieces gives the same live events once adjacent reasoning
//!   and content deltas are joined (and adjacent argument deltas of one parameter), and the same
//!   settled events. Text that could be the start of a tag is held back only until it is
//!   decided; a value streams as argument deltas (trailing newlines held until text follows
//!   them, as the value may end there) and comes typed and whole when its closer arrives.
//! - Reasoning and content come out trimmed: leading whitespace is dropped, trailing whitespace is
//!   held until more text of the same kind follows, and dropped at the end.
//! - No input panics or loops: every step consumes text or changes state towards consuming it.
//! - The output starts inside reasoning by default (the generation prompt ends with `<think>\n`);
//!   reasoning ends at the first `</think>`, or, when there is none, at the first `<tool_call>`;
//!   output without either is all reasoning. Content is the text between the end of reasoning and
//!   the first `<tool_call>`; text after the calls is dropped.

use serde::Serialize;
use serde_json::{Map, Value};

use super::tools::ToolSchemas;
use crate::protocol::ToolCall;

mod call;
mod settle;

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
    /// Raw text of the parameter being read, as it arrives (live view only): the deltas of
    /// one parameter joined are its value before typing, the surrounding newlines the format
    /// puts around a value left out. The typed value still comes whole in `ToolCallArgument`.
    ToolCallArgumentDelta {
        index: usize,
        name: String,
        text: String,
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

/// Why a settled turn leaves out a call it read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Text outside any value showed a value was cut at a protocol tag: not run, the model is
    /// told (the message).
    Ambiguous(String),
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
    /// Bytes of `value` already sent as `ToolCallArgumentDelta` (after its leading newline).
    streamed: usize,
}

/// The incremental parser. Feed pieces with [`Parser::push`], then call [`Parser::finish`] once.
#[derive(Debug)]
pub struct Parser {
    schemas: ToolSchemas,
    start: Start,
    state: State,
    pending: String,
    pos: usize,
    reasoning: Section,
    content: Section,
    call: Option<CallBuild>,
    calls_seen: usize,
    next_id: usize,
    first_id: usize,
    finished: bool,
    /// Everything pushed, for the settled reading.
    full: String,
    /// Bytes of `full` drained from `pending` before it.
    drained: usize,
    /// Where each call's text begins in `full` (by call index).
    call_starts: Vec<(usize, usize)>,
    /// Calls found ambiguous, by index.
    verdicts: Vec<(usize, Verdict)>,
}

impl Parser {
    pub fn new(schemas: ToolSchemas, start: Start) -> Self {
        Self {
            schemas,
            start,
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
            first_id: 0,
            finished: false,
            full: String::new(),
            drained: 0,
            call_starts: Vec::new(),
            verdicts: Vec::new(),
        }
    }

    /// Number the calls' ids from `n` (`call_{n}`, `call_{n+1}`, ...), so ids stay unique
    /// across the turns of a session.
    pub fn with_first_call_number(mut self, n: usize) -> Self {
        self.next_id = n;
        self.first_id = n;
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
        self.drained += self.pos;
        self.pos = 0;
        self.pending.push_str(piece);
        self.full.push_str(piece);
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
                self.finish_param(call::ValueEnd::BodyEnd, &mut out);
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
        let after_calls = !reasoning && self.calls_seen > 0;
        let tags: &[&'static str] = if reasoning {
            &[THINK_CLOSE, CALL_OPEN]
        } else if after_calls {
            &[CALL_OPEN, PARAM_CLOSE, FUNCTION_CLOSE, CALL_CLOSE]
        } else {
            &[CALL_OPEN]
        };
        match find_tag(rest, tags) {
            Some((at, tag)) => {
                if after_calls {
                    self.consume(at);
                } else {
                    self.emit_text(reasoning, at, out);
                }
                self.consume(tag.len());
                match tag {
                    THINK_CLOSE => self.state = State::Content,
                    CALL_OPEN => self.begin_call(CALL_OPEN.len()),
                    _ => self.stray_closer(tag),
                }
                true
            }
            None => {
                let keep = if eof { 0 } else { partial_tag_len(rest, tags) };
                let n = rest.len() - keep;
                if after_calls {
                    // Only the text before the first call is content.
                    self.consume(n);
                } else {
                    self.emit_text(reasoning, n, out);
                }
                n > 0
            }
        }
    }

    /// Absolute position in `full` of the next unread byte.
    fn offset(&self) -> usize {
        self.drained + self.pos
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
