//! The sampler chain for one request: top-k, top-p, min-p, temperature, then a seeded draw
//! (llama.cpp's usual order), or plain greedy.

use crate::engine::SamplingParams;
use llama_cpp_2::sampling::LlamaSampler;

pub(super) fn build(p: &SamplingParams) -> LlamaSampler {
    if p.greedy {
        return LlamaSampler::greedy();
    }
    LlamaSampler::chain_simple([
        LlamaSampler::top_k(p.top_k),
        LlamaSampler::top_p(p.top_p, 1),
        LlamaSampler::min_p(p.min_p, 1),
        LlamaSampler::temp(p.temperature),
        LlamaSampler::dist(p.seed),
    ])
}
