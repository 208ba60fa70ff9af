//! `lilypad quant-check`: what a quantisation costs, measured on the model's own kind of text.
//! A reference model (BF16/F16) and a candidate (a quantisation of it) read the same token
//! stream through the in-process engine; at every scored position the candidate's next-token
//! distribution is compared with the reference's: KL divergence, top-1 agreement, whether the
//! reference's first choice stays in the candidate's top 5, and both perplexities, over all
//! positions and over those inside tool calls, the XML the harness depends on.
//!
//! - [`metrics`]: the per-position figures and their summaries (pure, f64).
//! - [`check`]: loading, chunking (llama-perplexity's scheme), running both engines at once.
//! - [`sample`]: the built-in text, rendered by Lilypad's own prompt renderer.
//! - [`vocab`]: `lilypad convert`'s check of the converted vocabulary against tokenizer.json.
//!
//! Not owned here: quantising ([`crate::convert::quantize`]), printing (`cli`).

pub mod check;
pub mod metrics;
pub mod sample;
pub mod vocab;

pub use check::{run, CheckOptions, CheckReport, PositionRecord};
pub use metrics::Summary;

use thiserror::Error;

/// Why a check could not be made.
#[derive(Debug, Error)]
pub enum QualityError {
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("reading the tokenizer {path}: {source}")]
    Tokenizer {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("rendering the built-in sample: {0}")]
    Prompt(#[from] crate::prompt::PromptError),
    #[error("the models have different vocabularies ({reference} and {candidate} tokens): the candidate must be a quantisation of the reference")]
    Vocabulary { reference: u32, candidate: u32 },
    #[error("the models tokenise the text differently: the candidate must be a quantisation of the reference")]
    Tokenization,
    #[error("the text has {tokens} tokens, fewer than one chunk of {ctx}; give a longer text or a smaller --chunk")]
    TooShort { tokens: usize, ctx: usize },
    #[error("--chunk {ctx} is too small (at least 4)")]
    Context { ctx: usize },
    #[error("the two engines returned logits for different positions")]
    Misaligned,
}
