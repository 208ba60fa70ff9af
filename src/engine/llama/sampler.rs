//! The sampler for one request: top-k, top-p, min-p, temperature, then a seeded draw
//! (llama.cpp's usual order), or plain greedy; with a tool grammar, a lazy grammar sampler that
//! stays inactive until the model emits the `<tool_call>` token.
//!
//! The grammar is checked the way llama.cpp's own sampling helper does it: the chain picks a
//! token as if there were no grammar, the grammar then judges that one token, and only when it
//! rejects it is the grammar applied to the whole vocabulary (248,320 rows for the real model)
//! before the chain picks again. A well-formed call therefore costs one check per token.

use crate::engine::SamplingParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

/// The chain and, when there is one, the tool grammar and the token that triggers it.
pub(super) struct Sampler {
    chain: LlamaSampler,
    grammar: Option<(LlamaSampler, LlamaToken)>,
}

pub(super) fn build(model: &LlamaModel, p: &SamplingParams, grammar: Option<&str>) -> Sampler {
    let chain = if p.greedy {
        LlamaSampler::greedy()
    } else {
        LlamaSampler::chain_simple([
            LlamaSampler::top_k(p.top_k),
            LlamaSampler::top_p(p.top_p, 1),
            LlamaSampler::min_p(p.min_p, 1),
            LlamaSampler::temp(p.temperature),
            LlamaSampler::dist(p.seed),
        ])
    };
    Sampler {
        chain,
        grammar: grammar.and_then(|g| tool_grammar(model, g)),
    }
}

impl Sampler {
    /// The token that triggers the grammar, when there is one.
    pub(super) fn trigger(&self) -> Option<LlamaToken> {
        self.grammar.as_ref().map(|(_, t)| *t)
    }

    /// Feed a token the model did not sample (the end of the prompt) to the grammar.
    pub(super) fn accept(&mut self, token: LlamaToken) {
        if let Some((g, _)) = self.grammar.as_mut() {
            g.accept(token);
        }
    }

    /// Draw the next token and record it.
    pub(super) fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let Some((grammar, _)) = self.grammar.as_mut() else {
            return self.chain.sample(ctx, idx);
        };
        let mut all = ctx.token_data_array_ith(idx);
        all.apply_sampler(&mut self.chain);
        let token = all
            .selected_token()
            .unwrap_or_else(|| LlamaToken(all.data.first().map_or(0, |d| d.id().0)));
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 1.0)], false);
        one.apply_sampler(grammar);
        let token = if one.data.first().is_some_and(|d| d.logit().is_finite()) {
            token
        } else {
            // Rejected: the grammar narrows the whole vocabulary, then the chain picks again.
            let mut all = ctx.token_data_array_ith(idx);
            all.apply_sampler(grammar);
            all.apply_sampler(&mut self.chain);
            all.selected_token().unwrap_or(token)
        };
        grammar.accept(token);
        self.chain.accept(token);
        token
    }
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
