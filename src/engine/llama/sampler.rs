//! The sampler for one request: top-k, top-p, min-p, temperature, then a seeded draw
//! (llama.cpp's usual order), or plain greedy; with a tool grammar, a lazy grammar sampler that
//! stays inactive until the model emits the `<tool_call>` token. With `ignore_eos`, a logit
//! bias of minus infinity on every end-of-generation token heads the chain; with
//! `force_tokens`, teacher forcing (the chain runs, then the forced token replaces its pick).
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
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;

/// The chain and, when there is one, the tool grammar and the token that triggers it.
pub(super) struct Sampler {
    chain: LlamaSampler,
    grammar: Option<(LlamaSampler, LlamaToken)>,
    /// Teacher forcing: the tokens still to force, the next one last.
    forced: Vec<LlamaToken>,
}

pub(super) fn build(model: &LlamaModel, p: &SamplingParams, grammar: Option<&str>) -> Sampler {
    let mut stages = Vec::new();
    if p.ignore_eos {
        stages.push(no_end_of_generation(model));
    }
    if p.greedy {
        stages.push(LlamaSampler::greedy());
    } else {
        stages.extend([
            LlamaSampler::top_k(p.top_k),
            LlamaSampler::top_p(p.top_p, 1),
            LlamaSampler::min_p(p.min_p, 1),
            LlamaSampler::temp(p.temperature),
            LlamaSampler::dist(p.seed),
        ]);
    }
    let chain = if stages.len() == 1 {
        // Invariant: `stages` holds exactly one sampler here.
        stages.remove(0)
    } else {
        LlamaSampler::chain_simple(stages)
    };
    Sampler {
        chain,
        grammar: grammar.and_then(|g| tool_grammar(model, g)),
        forced: p
            .force_tokens
            .iter()
            .rev()
            .map(|&t| LlamaToken(t as i32))
            .collect(),
    }
}

/// A logit bias of minus infinity on every end-of-generation token of the vocabulary.
fn no_end_of_generation(model: &LlamaModel) -> LlamaSampler {
    let vocab = model.vocab();
    let biases: Vec<LlamaLogitBias> = vocab
        .tokens()
        .filter(|&t| vocab.is_eog(t))
        .map(|t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
        .collect();
    LlamaSampler::logit_bias(vocab.n_tokens(), &biases)
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
        // The chain's pick, exactly as without a grammar (`sample` also records it in the
        // chain, whose stages keep no state between tokens).
        let picked = self.chain.sample(ctx, idx);
        let token = self.forced.pop().unwrap_or(picked);
        let Some((grammar, _)) = self.grammar.as_mut() else {
            return token;
        };
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 1.0)], false);
        one.apply_sampler(grammar);
        let token = if one.data.first().is_some_and(|d| d.logit().is_finite()) {
            token
        } else {
            // Rejected: the grammar narrows the whole vocabulary, then the chain picks again.
            let mut all = ctx.token_data_array_ith(idx);
            all.apply_sampler(grammar);
            all.apply_sampler(&mut self.chain);
            let again = all.selected_token().unwrap_or(token);
            self.chain.accept(again);
            again
        };
        grammar.accept(token);
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
