//! The sampler chain for one request: top-k, top-p, min-p, temperature, then a seeded draw
//! (llama.cpp's usual order), or plain greedy; with a tool grammar, a lazy grammar sampler
//! first, which stays inactive until the model emits the `<tool_call>` token.

use crate::engine::SamplingParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

/// The chain, and the token that triggers its grammar (when there is one). A prompt that ends
/// with that token (a turn prefilled up to `<tool_call>`) should be fed to the chain with
/// `accept` before the first draw, so the grammar starts triggered.
pub(super) fn build(
    model: &LlamaModel,
    p: &SamplingParams,
    grammar: Option<&str>,
) -> (LlamaSampler, Option<LlamaToken>) {
    let (mut chain, trigger) = match grammar.and_then(|g| tool_grammar(model, g)) {
        Some((s, t)) => (vec![s], Some(t)),
        None => (Vec::new(), None),
    };
    if p.greedy {
        if chain.is_empty() {
            return (LlamaSampler::greedy(), None);
        }
        chain.push(LlamaSampler::greedy());
        return (LlamaSampler::chain_simple(chain), trigger);
    }
    chain.extend([
        LlamaSampler::top_k(p.top_k),
        LlamaSampler::top_p(p.top_p, 1),
        LlamaSampler::min_p(p.min_p, 1),
        LlamaSampler::temp(p.temperature),
        LlamaSampler::dist(p.seed),
    ]);
    (LlamaSampler::chain_simple(chain), trigger)
}

/// The lazy grammar sampler, triggered by the `<tool_call>` token. A model without that token,
/// or a grammar llama.cpp rejects, generates unconstrained (and says so in the log).
fn tool_grammar(model: &LlamaModel, grammar: &str) -> Option<(LlamaSampler, LlamaToken)> {
    let trigger = match model.vocab().tokenize(b"<tool_call>", false, true)[..] {
        [t] => t,
        _ => {
            tracing::warn!("the model has no <tool_call> token: tool calls are not constrained");
            return None;
        }
    };
    match LlamaSampler::grammar_lazy_patterns(model, grammar, "root", &[], &[trigger]) {
        Ok(s) => Some((s, trigger)),
        Err(e) => {
            tracing::warn!(
                "the tool-call grammar was not accepted ({e}): calls are not constrained"
            );
            None
        }
    }
}
