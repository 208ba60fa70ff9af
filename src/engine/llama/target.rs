//! The context generations decode in (the *target*), with the drafter of the model file's MTP
//! layer when self-speculative decoding is on.
//!
//! Owns: keeping the drafter in step with the target (every batch of sequence 0 the target
//! decodes is read by the drafter too, so its attention cache holds the same positions),
//! asking it for draft tokens, and cutting the drafter back after the target verified them.
//! Everything else reaches the target context through `Deref`.
//!
//! Does not own: when to draft, how drafts are verified, or cutting the target's own memory
//! back (`super::step`); which conversation lives in sequence 0 (`super::pool`).
//!
//! llama-cpp-2's `MtpSpeculative` binds the drafter to sequence 0, so only a generation
//! decoding alone in sequence 0 drafts. A batch that mixes sequence 0 with others is not
//! read by the drafter: its positions are missing from the drafter's cache, which makes later
//! drafts worse (fewer accepted), never the output different.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::speculative::{MtpSpeculative, MtpSpeculativeError, MtpSpeculativeParams};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use std::ops::{Deref, DerefMut};

/// The llama.cpp sequence the drafter follows.
const DRAFT_SEQ: i32 = 0;

enum Inner<'m> {
    Plain(LlamaContext<'m>),
    Mtp {
        spec: Box<MtpSpeculative<'m>>,
        /// A draft was handed out and not yet settled.
        outstanding: bool,
        /// The drafter failed once; it was logged and is not used again.
        broken: bool,
    },
    /// A mock of a trained MTP head, for tests (the tiny models' random MTP layers draft
    /// noise): drafts, after the token at position `p`, the tokens `tokens` holds from `p + 1`.
    Replay {
        ctx: LlamaContext<'m>,
        tokens: Vec<LlamaToken>,
    },
}

pub(super) struct Target<'m> {
    inner: Inner<'m>,
    draft_tokens: usize,
    /// Attention caches the context holds: 1 (unified), or one per sequence.
    streams: u32,
}

impl<'m> Target<'m> {
    pub(super) fn plain(ctx: LlamaContext<'m>) -> Self {
        Self {
            inner: Inner::Plain(ctx),
            draft_tokens: 0,
            streams: 1,
        }
    }

    /// The target with a drafter reading the MTP layer through `draft` (a context of type
    /// MTP on the same model); the target must have been created with `draft_tokens`
    /// recurrent rollback states (`n_rs_seq`), so that rejected drafts can be cut back.
    pub(super) fn with_mtp(
        target: LlamaContext<'m>,
        draft: LlamaContext<'m>,
        draft_tokens: usize,
    ) -> Result<Self, MtpSpeculativeError> {
        let n = i32::try_from(draft_tokens).map_err(|_| MtpSpeculativeError::InvalidParams)?;
        let params = MtpSpeculativeParams {
            n_max: n,
            n_min: 0,
            p_min: 0.0,
        };
        let spec = MtpSpeculative::new(target, draft, params)?;
        Ok(Self {
            inner: Inner::Mtp {
                spec: Box::new(spec),
                outstanding: false,
                broken: false,
            },
            draft_tokens,
            streams: 1,
        })
    }

    /// The target with the replaying mock drafter (`EngineSettings::draft_replay`); like
    /// [`Self::with_mtp`], the target must keep `draft_tokens` rollback states.
    pub(super) fn replaying(
        ctx: LlamaContext<'m>,
        tokens: Vec<LlamaToken>,
        draft_tokens: usize,
    ) -> Self {
        Self {
            inner: Inner::Replay { ctx, tokens },
            draft_tokens,
            streams: 1,
        }
    }

    /// The target of a context created with `streams` attention caches (llama.cpp's
    /// `kv_unified` off: one per sequence; 1 when unified).
    pub(super) fn with_streams(mut self, streams: u32) -> Self {
        self.streams = streams.max(1);
        self
    }

    /// The tokens one sequence can hold: the whole context when the attention cache is
    /// unified, else its own cache's (llama.cpp's `n_ctx_seq`: the context is that times the
    /// sequences exactly).
    pub(super) fn seq_ctx(&self) -> u32 {
        self.n_ctx() / self.streams
    }

    /// Tokens drafted per step; 0 without a drafter.
    pub(super) fn draft_tokens(&self) -> usize {
        match &self.inner {
            Inner::Mtp { broken: false, .. } | Inner::Replay { .. } => self.draft_tokens,
            _ => 0,
        }
    }

    /// Decode `batch` in the target. `seq0_from` is the first position when every token of
    /// the batch belongs to sequence 0; the drafter then reads the same batch, after
    /// forgetting what it held from that position on.
    pub(super) fn decode(
        &mut self,
        batch: &mut LlamaBatch<'_>,
        seq0_from: Option<usize>,
    ) -> Result<(), DecodeError> {
        match &mut self.inner {
            Inner::Plain(ctx) | Inner::Replay { ctx, .. } => ctx.decode(batch),
            Inner::Mtp { spec, broken, .. } => {
                spec.target_context_mut().decode(batch)?;
                if let (Some(from), false) = (seq0_from, *broken) {
                    let drafter = spec.draft_context_mut();
                    let trimmed = drafter.clear_kv_cache_seq(
                        Some(DRAFT_SEQ as u32),
                        u32::try_from(from).ok(),
                        None,
                    );
                    let read = match trimmed {
                        Ok(true) => spec.process(batch).map_err(|e| e.to_string()),
                        Ok(false) => Err("cannot trim its attention cache".to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                    if let Err(e) = read {
                        tracing::warn!(
                            "the MTP drafter stopped (decoding goes on without it): {e}"
                        );
                        *broken = true;
                    }
                }
                Ok(())
            }
        }
    }

    /// Draft up to `limit` tokens to follow `last`, the token at position `pos` of sequence 0
    /// (not decoded yet). Empty without a drafter or when it has nothing to offer.
    pub(super) fn draft(&mut self, pos: usize, last: LlamaToken, limit: usize) -> Vec<LlamaToken> {
        if let Inner::Replay { tokens, .. } = &self.inner {
            let from = (pos + 1).min(tokens.len());
            return tokens[from..(from + limit).min(tokens.len())].to_vec();
        }
        let Inner::Mtp {
            spec,
            outstanding,
            broken: false,
        } = &mut self.inner
        else {
            return Vec::new();
        };
        if limit == 0 {
            return Vec::new();
        }
        if *outstanding {
            // A generation left before its draft was verified: nothing of it was accepted.
            let _ = spec.accept(0);
            *outstanding = false;
        }
        let Ok(pos) = i32::try_from(pos) else {
            return Vec::new();
        };
        match spec.draft(pos, last, &[]) {
            Ok(mut d) => {
                *outstanding = !d.is_empty();
                d.truncate(limit);
                d
            }
            Err(e) => {
                tracing::warn!("the MTP drafter failed to draft: {e}");
                Vec::new()
            }
        }
    }

    /// The target verified a draft and kept `accepted` of its tokens; sequence 0 now holds
    /// `kept` positions, and the drafter is cut back to them.
    pub(super) fn settle(&mut self, accepted: usize, kept: usize) {
        let Inner::Mtp {
            spec,
            outstanding,
            broken,
        } = &mut self.inner
        else {
            return;
        };
        if *outstanding {
            let n = u16::try_from(accepted).unwrap_or(u16::MAX);
            if let Err(e) = spec.accept(n) {
                tracing::warn!("the MTP drafter refused the verification: {e}");
                *broken = true;
            }
            *outstanding = false;
        }
        let _ = spec.draft_context_mut().clear_kv_cache_seq(
            Some(DRAFT_SEQ as u32),
            u32::try_from(kept).ok(),
            None,
        );
    }

    /// Sequence `seq` was emptied or replaced: the drafter forgets what it held for it.
    pub(super) fn forget(&mut self, seq: i32) {
        if seq != DRAFT_SEQ {
            return;
        }
        if let Inner::Mtp { spec, .. } = &mut self.inner {
            let _ = spec
                .draft_context_mut()
                .clear_kv_cache_seq(Some(DRAFT_SEQ as u32), None, None);
        }
    }
}

impl<'m> Deref for Target<'m> {
    type Target = LlamaContext<'m>;

    fn deref(&self) -> &LlamaContext<'m> {
        match &self.inner {
            Inner::Plain(ctx) | Inner::Replay { ctx, .. } => ctx,
            Inner::Mtp { spec, .. } => spec.target_context(),
        }
    }
}

impl<'m> DerefMut for Target<'m> {
    fn deref_mut(&mut self) -> &mut LlamaContext<'m> {
        match &mut self.inner {
            Inner::Plain(ctx) | Inner::Replay { ctx, .. } => ctx,
            Inner::Mtp { spec, .. } => spec.target_context_mut(),
        }
    }
}
