//! Requests, events, figures and errors of the engine: plain data, shared by every engine kind.

use serde::{Deserialize, Serialize};

pub use super::logprob::SampledToken;

pub use crate::protocol::{DraftFigures, Figures, Reuse, StopReason};
use std::path::PathBuf;
use thiserror::Error;

/// What went wrong in the engine, in words a user can act on.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    File(#[from] crate::gguf::GgufError),
    #[error("llama.cpp could not load {path} (architecture {arch}): the file is unsupported by this build or corrupt")]
    Load { path: PathBuf, arch: String },
    #[error("not enough memory for a context of {ctx} tokens and {sequences} sequences (the model's attention cache needs about {kv_mib} MiB, its recurrent state {recurrent_mib} MiB for the sequences); lower --ctx, e.g. --ctx {suggest}, or [engine] sequences")]
    ContextMemory {
        ctx: u32,
        kv_mib: u64,
        sequences: u32,
        recurrent_mib: u64,
        suggest: u32,
    },
    #[error("--mtp on, but {path} has no MTP layer (nextn_predict_layers): convert the checkpoint without --no-mtp, or use --mtp auto")]
    NoMtpLayer { path: PathBuf },
    #[error("the prompt has {prompt} tokens but the context holds only {ctx}")]
    PromptTooLong { prompt: usize, ctx: u32 },
    /// Refused from its size alone, before any tokenising: no tokenisation of that many bytes
    /// fits (see `engine::llama::fits`).
    #[error("the prompt ({bytes} bytes) has at least {at_least} tokens but the context holds only {ctx}")]
    PromptTooLarge {
        bytes: usize,
        at_least: usize,
        ctx: u32,
    },
    #[error("{id} is not a token id: the vocabulary has {vocabulary} tokens")]
    NotAToken { id: u32, vocabulary: u32 },
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("llama.cpp failed while {doing}: {source}")]
    Llama {
        doing: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the engine thread has stopped")]
    Stopped,
    #[error("the model stopped without finishing its turn")]
    Ended,
    /// llama.cpp's backend could not start (boxed, like `Llama`'s source: no llama.cpp type
    /// in the seam).
    #[error("llama.cpp backend: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot start the engine thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the prompt could not be rendered: {0}")]
    Prompt(#[from] crate::prompt::PromptError),
    /// A service the engine stands in front of failed (the server behind an endpoint
    /// engine). The backend's own error is the source, so this type names no backend; each
    /// such backend converts its errors into this kind.
    #[error(transparent)]
    Upstream(Box<dyn std::error::Error + Send + Sync>),
    #[error("no sequence of the engine can take this request and none is generating to free one; raise [engine] sequences")]
    NoSequence,
    #[error("{engine} reads {reads}, but was given {given}")]
    PromptForm {
        engine: &'static str,
        reads: PromptForm,
        given: PromptForm,
    },
}

/// Which form of prompt an engine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptForm {
    /// Prompt text with the chat template already applied (llama.cpp, the scripted engine).
    Text,
    /// The conversation's messages and tools (a remote server applies its own template).
    Chat,
    /// Token ids (the in-process engine also reads these).
    Tokens,
}

impl std::fmt::Display for PromptForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PromptForm::Text => "prompt text",
            PromptForm::Chat => "chat messages",
            PromptForm::Tokens => "token ids",
        })
    }
}

/// Which of an engine's conversations a request runs in. Each keeps its own memory of what it
/// has read (prefix reuse, snapshots); [`SequenceId::DEFAULT`] is the one a single
/// conversation uses. The in-process engine runs requests of different conversations together,
/// each in its own llama.cpp sequence; other engines ignore it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SequenceId(pub u64);

impl SequenceId {
    pub const DEFAULT: Self = Self(0);
}

/// What an engine is asked to read before it generates.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// The full prompt text (special tokens written out, as the template renders them).
    Text(String),
    /// Token ids, read exactly as given (no template, no tokenising): a trainer sends the
    /// ids it holds (in-process engine only).
    Tokens(Vec<u32>),
    /// The conversation itself, for engines that apply the chat template themselves.
    Chat {
        messages: Vec<crate::protocol::Message>,
        tools: Vec<crate::prompt::ToolSpec>,
    },
}

impl Prompt {
    pub fn form(&self) -> PromptForm {
        match self {
            Prompt::Text(_) => PromptForm::Text,
            Prompt::Tokens(_) => PromptForm::Tokens,
            Prompt::Chat { .. } => PromptForm::Chat,
        }
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt::Text(text)
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt::Text(text.to_string())
    }
}

/// Sampling for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingParams {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: i32,
    pub min_p: f32,
    pub seed: u32,
    pub greedy: bool,
    /// Constrain tool calls with a grammar built from the turn's tools (in-process engine
    /// only; other engines ignore it).
    #[serde(default = "yes")]
    pub tool_grammar: bool,
    /// Never end at an end-of-generation token (llama.cpp's `--ignore-eos`): every such token
    /// gets a logit bias of minus infinity, so a generation runs to `max_tokens` (or a full
    /// context). For benches that compare with programs that always generate their full count.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
    /// Teacher forcing, for benches and tests: step `i` emits `force_tokens[i]` in place of the
    /// chain's pick, after the chain has run as it would (so a step costs what it costs a model
    /// that picks these tokens itself). With a tool grammar the forced token is checked like a
    /// pick: one the grammar rejects gives way to the grammar's own choice. Past the list's end
    /// the chain's picks are kept. Empty: no forcing (in-process engine only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub force_tokens: Vec<u32>,
}

fn yes() -> bool {
    true
}

impl SamplingParams {
    /// From the settings; a missing seed becomes a fresh one.
    pub fn from_settings(s: &super::SamplingSettings) -> Self {
        let seed = s.seed.unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            nanos ^ std::process::id()
        });
        Self {
            temperature: s.temperature,
            top_p: s.top_p,
            top_k: s.top_k,
            min_p: s.min_p,
            seed,
            greedy: s.greedy,
            tool_grammar: s.tool_grammar,
            ignore_eos: false,
            force_tokens: Vec::new(),
        }
    }

    pub fn greedy() -> Self {
        Self {
            greedy: true,
            ..Self::from_settings(&Default::default())
        }
    }
}

/// One generation request: the whole prompt, in the form the engine reads; the engine works
/// out what it already has in memory of `sequence`.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub sequence: SequenceId,
    pub prompt: Prompt,
    pub max_tokens: u32,
    pub sampling: SamplingParams,
    /// A GBNF grammar for tool calls, applied lazily from the `<tool_call>` token on
    /// (`crate::prompt::tool_call_grammar`); `None` leaves generation free.
    pub tool_grammar: Option<String>,
    /// Pin the memory snapshot at the prompt's turn boundary (the start of its last message):
    /// pins are not dropped by the rolling `max_snapshots` limit but by their own bound
    /// (`pinned_snapshots`, oldest first), so a conversation can go back to any pinned turn and
    /// have its next prompt served from memory. Engines without snapshots ignore it.
    pub pin_turn: bool,
    /// What to report of the tokens besides their text (nothing by default).
    pub report: TokenReport,
}

/// What a request asks to have reported of its tokens. Off by default: rating every token
/// costs a pass over the vocabulary per token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenReport {
    /// Rate every sampled token ([`SampledToken`]) with this many alternatives (0-20); `None`:
    /// no log-probabilities.
    pub logprobs: Option<u8>,
    /// Return the prompt as the engine tokenised it ([`Generation::prompt_tokens`]).
    pub prompt_tokens: bool,
}

impl GenerateRequest {
    /// A request in the default sequence, without a tool grammar.
    pub fn new(prompt: impl Into<Prompt>, max_tokens: u32, sampling: SamplingParams) -> Self {
        Self {
            sequence: SequenceId::DEFAULT,
            prompt: prompt.into(),
            max_tokens,
            sampling,
            tool_grammar: None,
            pin_turn: false,
            report: TokenReport::default(),
        }
    }

    /// The prompt text, for engines that read text; an error naming `engine` otherwise.
    /// (Token prompts are taken by [`Self::tokens`] first where an engine reads them.)
    pub fn text(&self, engine: &'static str) -> Result<&str, EngineError> {
        match &self.prompt {
            Prompt::Text(t) => Ok(t),
            other => Err(EngineError::PromptForm {
                engine,
                reads: PromptForm::Text,
                given: other.form(),
            }),
        }
    }
}

/// What a generation stream delivers.
#[derive(Debug)]
pub enum EngineEvent {
    /// Decoded text; never splits a multi-byte character.
    Piece(String),
    /// The end of the stream.
    Done(Generation),
    /// Output an engine received already parsed (servers that split reasoning and tool calls
    /// themselves); raw engines only send `Piece`.
    Parsed(ParsedOutput),
    /// The request failed; nothing more follows.
    Failed(EngineError),
    /// A sampled token and its rating, sent just before the text it adds (only when the
    /// request asked for log-probabilities; an ending token comes just before `Done`).
    Sampled(SampledToken),
}

/// Events compare by content; errors (which carry sources that have no equality) by their
/// message.
impl PartialEq for EngineEvent {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Piece(a), Self::Piece(b)) => a == b,
            (Self::Done(a), Self::Done(b)) => a == b,
            (Self::Parsed(a), Self::Parsed(b)) => a == b,
            (Self::Failed(a), Self::Failed(b)) => a.to_string() == b.to_string(),
            (Self::Sampled(a), Self::Sampled(b)) => a == b,
            _ => false,
        }
    }
}

/// Already-parsed model output.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedOutput {
    Reasoning(String),
    Content(String),
    ToolCall(crate::protocol::ToolCall),
}

/// The outcome of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub stop: StopReason,
    pub figures: Figures,
    /// The generated token ids (without the end-of-generation token).
    pub tokens: Vec<u32>,
    /// Every sampled token rated, the end-of-generation token included (so one longer than
    /// `tokens` when the generation ended there); empty unless the request asked
    /// ([`TokenReport::logprobs`]).
    pub sampled: Vec<SampledToken>,
    /// The prompt as the engine read it, when the request asked
    /// ([`TokenReport::prompt_tokens`]) and the engine tokenises.
    pub prompt_tokens: Option<Vec<u32>>,
}

impl Generation {
    /// A generation that produced nothing (cancelled before it started).
    pub fn empty(stop: StopReason, figures: Figures) -> Self {
        Self {
            stop,
            figures,
            tokens: Vec::new(),
            sampled: Vec::new(),
            prompt_tokens: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_sampling_options_stay_out_of_serialised_sampling_unless_set() {
        let plain = SamplingParams::greedy();
        let v = serde_json::to_value(&plain).unwrap();
        assert!(
            v.get("ignore_eos").is_none() && v.get("force_tokens").is_none(),
            "{v}"
        );
        // Sampling written before the options existed reads back without them.
        let back: SamplingParams = serde_json::from_value(v).unwrap();
        assert_eq!(back, plain);
        let set = SamplingParams {
            ignore_eos: true,
            force_tokens: vec![5, 6],
            ..plain
        };
        let v = serde_json::to_value(&set).unwrap();
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(serde_json::from_value::<SamplingParams>(v).unwrap(), set);
    }
}
