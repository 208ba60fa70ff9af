//! What the engine thread is to build, resolved from the settings and the model file before
//! it starts ([`Plan`]), and the target context it builds from that: the context parameters of
//! the target (its sequences sharing one attention cache or each with its own) and of the MTP
//! drafter, and the fallback to a plain context when drafting cannot be set up.
//!
//! Does not own: loading the model or serving jobs (`super::worker`), drafting itself
//! (`super::target`).

use super::target::Target;
use crate::engine::types::EngineError;
use crate::engine::EngineSettings;
use crate::gguf::GgufFile;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaContextType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::num::NonZeroU32;
use std::path::PathBuf;

/// llama.cpp's limit on sequences in one context (`LLAMA_MAX_SEQ`).
pub(super) const MAX_SEQUENCES: u32 = 256;

/// Everything the thread needs, resolved before it starts.
pub(super) struct Plan {
    pub(super) path: PathBuf,
    pub(super) architecture: String,
    pub(super) chat_template: Option<String>,
    pub(super) ctx: u32,
    pub(super) gpu_layers: u32,
    pub(super) threads: u32,
    pub(super) batch: u32,
    pub(super) ubatch: u32,
    pub(super) prefill_chunk: usize,
    pub(super) max_snapshots: usize,
    pub(super) pinned_snapshots: usize,
    pub(super) snapshot_interval: usize,
    pub(super) conversation_slots: usize,
    pub(super) sequences: u32,
    /// One attention cache for all sequences, or one each (`EngineSettings::kv_unified`).
    pub(super) kv_unified: bool,
    /// Attention-cache bytes per token, for the out-of-memory message and the report.
    pub(super) kv_bytes_per_token: u64,
    /// Recurrent-state bytes per sequence, likewise.
    pub(super) recurrent_bytes: u64,
    pub(super) flash_attention: crate::engine::FlashAttention,
    pub(super) cache_type_k: crate::engine::CacheType,
    pub(super) cache_type_v: crate::engine::CacheType,
    pub(super) split_mode: crate::engine::SplitMode,
    pub(super) devices: Vec<usize>,
    pub(super) mtp: crate::engine::Mtp,
    /// The file has an MTP layer (`nextn_predict_layers`).
    pub(super) mtp_layer: bool,
    pub(super) draft_tokens: u32,
    pub(super) draft_replay: Vec<LlamaToken>,
    /// Where saved prompt heads are kept and how many bytes they may take (`None`: off).
    pub(super) prefix_cache: Option<(PathBuf, u64)>,
}

impl Plan {
    pub(super) fn new(path: &std::path::Path, file: &GgufFile, s: &EngineSettings) -> Self {
        let threads = if s.threads > 0 {
            s.threads
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get().min(16) as u32)
                .unwrap_or(4)
        };
        let gpu_layers = match s.gpu_layers {
            Some(n) => n,
            None if super::gpu_offload_compiled() => 999,
            None => 0,
        };
        Self {
            path: path.to_path_buf(),
            architecture: file.architecture().unwrap_or("unknown").to_string(),
            chat_template: file.chat_template().map(str::to_string),
            ctx: s.ctx,
            gpu_layers,
            threads,
            batch: s.batch.max(1),
            ubatch: s.ubatch.clamp(1, s.batch.max(1)),
            prefill_chunk: match s.prefill_chunk {
                0 => usize::MAX,
                n => n as usize,
            },
            max_snapshots: s.max_snapshots,
            pinned_snapshots: s.pinned_snapshots,
            snapshot_interval: s.snapshot_interval as usize,
            conversation_slots: s.conversation_slots.max(1) as usize,
            sequences: s.sequences.clamp(1, MAX_SEQUENCES),
            kv_unified: s.kv_unified,
            kv_bytes_per_token: super::kv_bytes_per_token(file),
            recurrent_bytes: super::recurrent_bytes_per_sequence(file),
            flash_attention: s.flash_attention,
            cache_type_k: s.cache_type_k,
            cache_type_v: s.cache_type_v,
            split_mode: s.split_mode,
            devices: s.devices.clone(),
            mtp: s.mtp,
            mtp_layer: file.arch_u64("nextn_predict_layers").unwrap_or(0) > 0,
            draft_tokens: s.drafts_per_step(),
            draft_replay: s
                .draft_replay
                .iter()
                .map(|&t| LlamaToken(t as i32))
                .collect(),
            prefix_cache: s
                .prefix_cache_dir
                .clone()
                .filter(|_| s.prefix_cache_mb > 0)
                .map(|dir| (dir, s.prefix_cache_mb.saturating_mul(1 << 20))),
        }
    }

    /// Attention caches the target context holds: one, or one per sequence.
    pub(super) fn streams(&self) -> u32 {
        if self.kv_unified {
            1
        } else {
            self.sequences
        }
    }

    /// Whether to draft with the MTP layer; `Err` when it is required and the file has none.
    pub(super) fn wants_mtp(&self) -> Result<bool, EngineError> {
        if self.mtp == crate::engine::Mtp::On && !self.mtp_layer {
            return Err(EngineError::NoMtpLayer {
                path: self.path.clone(),
            });
        }
        let on_gpu = self.gpu_layers > 0 && super::gpu_offload_available();
        Ok(self.mtp.drafts(self.mtp_layer, on_gpu))
    }

    /// Parameters of a context on this plan: the target (all sequences, `rollback` recurrent
    /// states kept per sequence for cutting rejected drafts back) or the MTP drafter's.
    fn context_params(&self, kind: ContextKind) -> LlamaContextParams {
        let base = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(self.ctx))
            .with_n_batch(self.batch)
            .with_n_ubatch(self.ubatch)
            .with_flash_attention_policy(super::placement::flash_attention(self.flash_attention))
            .with_type_k(super::placement::cache_type(self.cache_type_k))
            .with_type_v(super::placement::cache_type(self.cache_type_v))
            .with_n_threads(self.threads as i32)
            .with_n_threads_batch(self.threads as i32);
        match kind {
            // One attention cache for every sequence (`kv_unified`): a sequence may use the
            // whole context, and forked sequences share the cells of their common prefix.
            // Otherwise one cache per sequence: llama.cpp gives each `n_ctx / n_seq_max`
            // cells, so the context is `ctx` times the sequences.
            ContextKind::Target { rollback } => base
                .with_n_ctx(NonZeroU32::new(self.ctx.saturating_mul(self.streams())))
                .with_n_seq_max(self.sequences)
                .with_kv_unified(self.kv_unified)
                .with_n_rs_seq(rollback),
            // The drafter follows sequence 0 only.
            ContextKind::Drafter => base
                .with_n_seq_max(1)
                .with_context_type(LlamaContextType::Mtp),
        }
    }
}

#[derive(Clone, Copy)]
enum ContextKind {
    Target { rollback: u32 },
    Drafter,
}

/// The target context, with the MTP drafter when `mtp`: if the drafter cannot be set up, an
/// error when it was required (`--mtp on`), else a warning and a plain context.
pub(super) fn target<'m>(
    model: &'m LlamaModel,
    backend: &LlamaBackend,
    plan: &Plan,
    mtp: bool,
) -> Result<Target<'m>, EngineError> {
    let memory_error = || {
        let mib = |b: u64| b / (1 << 20);
        let states =
            u64::from(plan.sequences) * (1 + u64::from(mtp) * u64::from(plan.draft_tokens));
        EngineError::ContextMemory {
            ctx: plan.ctx,
            kv_mib: mib(plan.kv_bytes_per_token * u64::from(plan.ctx) * u64::from(plan.streams())),
            sequences: plan.sequences,
            recurrent_mib: mib(plan.recurrent_bytes * states),
            suggest: (plan.ctx / 2).max(2048),
        }
    };
    let plain = |rollback| {
        model
            .new_context(
                backend,
                plan.context_params(ContextKind::Target { rollback }),
            )
            .map_err(|_| memory_error())
    };
    if !plan.draft_replay.is_empty() {
        let ctx = plain(plan.draft_tokens)?;
        let tokens = plan.draft_replay.clone();
        return Ok(Target::replaying(ctx, tokens, plan.draft_tokens as usize));
    }
    if !mtp {
        return plain(0).map(Target::plain);
    }
    let setup = || -> Result<Target<'m>, EngineError> {
        let target = plain(plan.draft_tokens)?;
        let drafter = model
            .new_context(backend, plan.context_params(ContextKind::Drafter))
            .map_err(|e| EngineError::Llama {
                doing: "creating the MTP drafter's context",
                source: Box::new(e),
            })?;
        Target::with_mtp(target, drafter, plan.draft_tokens as usize).map_err(|e| {
            EngineError::Llama {
                doing: "setting up MTP drafting",
                source: Box::new(e),
            }
        })
    };
    match setup() {
        Ok(t) => Ok(t),
        Err(e) if plan.mtp == crate::engine::Mtp::On => Err(e),
        Err(e) => {
            tracing::warn!("decoding without MTP drafts: {e}");
            plain(0).map(Target::plain)
        }
    }
}
