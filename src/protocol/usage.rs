//! Figures and outcomes of one model turn: plain data shared by the engine (which produces
//! them), the agent (which accounts with them) and every consumer of events.

use serde::{Deserialize, Serialize};

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model emitted an end-of-generation token (`<|im_end|>`, `<|endoftext|>`).
    EndOfGeneration,
    /// The per-turn token cap was reached; the turn is truncated.
    TokenCap,
    /// The caller cancelled.
    Cancelled,
    /// The context is full.
    ContextFull,
}

/// How the prompt was matched against what the engine had in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reuse {
    /// Nothing was in memory.
    Fresh,
    /// The prompt extended the memory: only the new tokens were read.
    Extended,
    /// The prompt diverged; memory was rewound to a snapshot at `to` tokens, then the rest read.
    Rewound { to: usize },
    /// The prompt diverged before any snapshot: memory was cleared and the prompt read in full.
    Reprefilled,
    /// Nothing was in memory; the prompt's head (its system message: the system prompt and the
    /// tool definitions, `tokens` long) was loaded from the engine's saved heads and the rest
    /// read.
    SavedHead { tokens: usize },
}

/// Figures for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub prompt_tokens: usize,
    /// Prompt tokens already in memory and not read again.
    pub reused_tokens: usize,
    /// Prompt tokens actually read by the model for this request.
    pub evaluated_tokens: usize,
    pub reuse: Reuse,
    pub generated_tokens: usize,
    pub prefill_seconds: f64,
    pub decode_seconds: f64,
    /// Set when a pinned turn boundary at this many tokens would have served the prompt but
    /// had been dropped to keep within the engine's bound on pins (`pinned_snapshots`): memory
    /// went back further (to `reuse`'s point, or nothing) and the tokens from there were read
    /// again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_pin: Option<usize>,
    /// Self-speculative decoding with the model's MTP layer, when the engine drafted for this
    /// request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<DraftFigures>,
}

/// Tokens the MTP layer drafted for one request, and how many of them the model's own samples
/// matched (each accepted token is one decode step saved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DraftFigures {
    pub drafted: usize,
    pub accepted: usize,
}

impl DraftFigures {
    /// Accepted drafts per drafted token (0 when nothing was drafted).
    pub fn acceptance(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }
}

impl Figures {
    /// Prompt tokens read per second (0 when nothing was read).
    pub fn prefill_tokens_per_second(&self) -> f64 {
        rate(self.evaluated_tokens, self.prefill_seconds)
    }

    /// Generated tokens per second.
    pub fn decode_tokens_per_second(&self) -> f64 {
        rate(self.generated_tokens, self.decode_seconds)
    }
}

fn rate(n: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}
