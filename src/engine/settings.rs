//! The in-process engine's settings (the `[engine]` section of the config file): the model
//! file, offload, context and batch sizes, reuse snapshots, conversation slots, and sampling.
//! Owned here so the engine needs nothing above it; the config module only gathers, layers and
//! validates them.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Sampling parameters. Defaults are the ones the model was trained and evaluated with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingSettings {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: i32,
    pub min_p: f32,
    /// `None`: a fresh seed per run.
    pub seed: Option<u32>,
    /// Always take the most likely token (ignores the other fields).
    pub greedy: bool,
    /// Keep tool calls well formed with a grammar triggered by `<tool_call>` (in-process
    /// engine; `--no-grammar` turns it off). Reasoning and content are never constrained.
    pub tool_grammar: bool,
}

impl Default for SamplingSettings {
    fn default() -> Self {
        Self {
            temperature: 0.6,
            top_p: 0.95,
            top_k: 20,
            min_p: 0.0,
            seed: None,
            greedy: false,
            tool_grammar: true,
        }
    }
}

/// Everything the in-process engine needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSettings {
    /// GGUF file; `None` means "look in the models directory".
    pub model: Option<PathBuf>,
    /// Layers offloaded to the GPU; `None` means all of them when offload is compiled in.
    pub gpu_layers: Option<u32>,
    pub ctx: u32,
    /// `0` means "let the engine choose".
    pub threads: u32,
    /// Tokens per logical batch when reading a prompt.
    pub batch: u32,
    /// Tokens per physical batch; the logits buffer scales with it times the vocabulary.
    pub ubatch: u32,
    /// Prompt tokens read per step while other generations are decoding: a prompt that joins
    /// is read in chunks of this many between their steps, so their time between tokens
    /// stays bounded however long it is. 0 reads a prompt whole before the next step.
    pub prefill_chunk: u32,
    pub max_turn_tokens: u32,
    /// State snapshots kept for rewinds (each costs about 50 MiB on the real model).
    pub max_snapshots: usize,
    /// Snapshots pinned at turn boundaries for rewinds (`GenerateRequest::pin_turn`), per
    /// conversation, beyond `max_snapshots`; past it the oldest pin goes first. Each holds one
    /// recurrent state (about 50 MiB on the real model: 800 MiB of host memory at the default
    /// 16); 0 pins nothing.
    pub pinned_snapshots: usize,
    /// A snapshot every this many generated tokens, so that a reply re-rendered differently
    /// from how it was generated is not read again from its start. 0 turns them off.
    pub snapshot_interval: u32,
    /// Sequences the context holds: requests of different conversations (serve clients,
    /// batch tasks) that generate together. Each costs one recurrent state (about 50 MiB for
    /// FrogNano); the attention cache is shared by all of them (see `kv_unified`).
    pub sequences: u32,
    /// One attention cache of `ctx` tokens shared by every sequence (llama.cpp's
    /// `--kv-unified`; the default): sequences forked from one prompt share its cells, but
    /// every token attends over the cells of all sequences, masked. `false`: each sequence
    /// has a cache of its own of `ctx` tokens (`sequences` times the memory), and attends
    /// over its own cells only, which is faster when several long conversations run at once.
    pub kv_unified: bool,
    /// Conversations whose memory is kept (in a sequence, or parked in host memory when
    /// there are more conversations than sequences; least recently used dropped first);
    /// each parked one costs its attention cache in RAM.
    pub conversation_slots: u32,
    /// Flash attention: `auto` (llama.cpp decides per device), `on`, `off`.
    pub flash_attention: super::FlashAttention,
    /// Element type of the attention cache's keys (`f16`, `q8_0`, `q4_0`, ...).
    pub cache_type_k: super::CacheType,
    /// Element type of its values (a quantised one needs flash attention).
    pub cache_type_v: super::CacheType,
    /// How the model is split over several GPUs: `layer`, `row`, `none`.
    pub split_mode: super::SplitMode,
    /// GPU devices to use, by llama.cpp's device index (empty: all of them).
    pub devices: Vec<usize>,
    /// Drafting with the file's MTP layer: `auto`, `on`, `off`.
    pub mtp: super::Mtp,
    /// Tokens the MTP layer drafts per step (each verified by the model; 1 to 8).
    pub draft_tokens: u32,
    /// Tests only: a mock drafter in place of the MTP layer, which drafts after the token at
    /// position `p` of sequence 0 the tokens this list holds from `p + 1` (prompt and
    /// expected output), so that tests can have drafts accepted, which the tiny models'
    /// random MTP layers almost never are. Empty: the real drafter, if any.
    #[serde(skip)]
    #[doc(hidden)]
    pub draft_replay: Vec<u32>,
    /// Megabytes of saved prompt heads kept in `prefix_cache_dir`: the engine state after a
    /// first prompt's system message (system prompt and tool definitions), loaded by every
    /// new conversation that begins with the same one instead of reading it again; the least
    /// recently used go first past the bound. 0 turns the warm head off.
    pub prefix_cache_mb: u64,
    /// Where saved heads are kept; `None` keeps none (the config layer sets Lilypad's cache
    /// directory, `…/lilypad/heads`).
    pub prefix_cache_dir: Option<PathBuf>,
    pub sampling: SamplingSettings,
}

/// llama.cpp keeps one recurrent state per drafted token to cut rejected ones back; more than
/// a few drafts are rarely all accepted.
const MAX_DRAFT_TOKENS: u32 = 8;

impl EngineSettings {
    /// Tokens drafted per step: `draft_tokens` within 1 and [`MAX_DRAFT_TOKENS`].
    pub fn drafts_per_step(&self) -> u32 {
        self.draft_tokens.clamp(1, MAX_DRAFT_TOKENS)
    }
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            model: None,
            gpu_layers: None,
            ctx: 131_072,
            threads: 0,
            batch: 512,
            ubatch: 512,
            prefill_chunk: 512,
            max_turn_tokens: 8192,
            max_snapshots: 8,
            pinned_snapshots: 16,
            snapshot_interval: 512,
            sequences: 4,
            kv_unified: true,
            conversation_slots: 4,
            flash_attention: super::FlashAttention::Auto,
            cache_type_k: super::CacheType::F16,
            cache_type_v: super::CacheType::F16,
            split_mode: super::SplitMode::Layer,
            devices: Vec::new(),
            mtp: super::Mtp::Auto,
            draft_tokens: 3,
            draft_replay: Vec::new(),
            prefix_cache_mb: 1024,
            prefix_cache_dir: None,
            sampling: SamplingSettings::default(),
        }
    }
}
