//! Log-probabilities of sampled tokens on the tiny model through real llama.cpp: each one is
//! the log-softmax of the logits llama.cpp gives for that position, recomputed here by reading
//! the same prefix again; greedy picks rate highest; asking for ratings changes no token of a
//! seeded sampled run; and tokens kept from MTP drafts are rated as without drafts.

use crate::common::{chat, load, serial, test_settings, tiny_model};
use lilypad::config::EngineSettings;
use lilypad::engine::{
    EngineHandle, GenerateRequest, Generation, Mtp, SamplingParams, StopReason, TokenReport,
};
use lilypad::testmodel::{self, TinySpec};

fn rated(prompt: &str, max_tokens: u32, sampling: SamplingParams, top: u8) -> GenerateRequest {
    let mut r = GenerateRequest::new(prompt.to_string(), max_tokens, sampling);
    r.report = TokenReport {
        logprobs: Some(top),
        prompt_tokens: true,
    };
    r
}

fn log_softmax(logits: &[f32], token: u32) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    logits[token as usize] as f64 - max - sum.ln()
}

fn generate(e: &EngineHandle, r: GenerateRequest) -> Generation {
    e.generate(r).unwrap().wait().unwrap().1
}

#[test]
fn each_greedy_token_is_rated_by_the_log_softmax_of_its_logits_and_rates_highest() {
    let _g = serial();
    let e = load(&test_settings());
    let prompt = chat("You are terse.", "list the files in src and read main.rs");
    let g = generate(&e, rated(&prompt, 24, SamplingParams::greedy(), 3));
    let prompt_ids = g.prompt_tokens.clone().expect("prompt tokens asked for");
    assert_eq!(prompt_ids, e.tokenize(&prompt).unwrap());
    assert!(!g.sampled.is_empty());
    // One rating per token, and one more for an ending end-of-generation token.
    let extra = usize::from(g.stop == StopReason::EndOfGeneration);
    assert_eq!(g.sampled.len(), g.tokens.len() + extra);
    let mut prefix = prompt_ids;
    for (i, t) in g.sampled.iter().enumerate() {
        if i < g.tokens.len() {
            assert_eq!(t.id, g.tokens[i]);
        }
        // A fresh engine reads the same prefix: its logits for the next token.
        let fresh = load(&test_settings());
        let (logits, _) = fresh.logits_of_tokens(&prefix).unwrap();
        let want = log_softmax(&logits, t.id);
        assert!(
            (t.logprob as f64 - want).abs() < 1e-4,
            "token {i}: rated {} but log-softmax is {want}",
            t.logprob
        );
        // Greedy: the most likely token, first among the alternatives.
        assert_eq!(t.top.len(), 3);
        assert_eq!(t.top[0].0, t.id, "token {i}");
        assert!((t.top[0].1 - t.logprob).abs() < 1e-6);
        assert!(t.top.windows(2).all(|w| w[0].1 >= w[1].1));
        prefix.push(t.id);
        if i >= 5 {
            // Recomputing every position is slow on one thread; six are enough.
            break;
        }
    }
}

#[test]
fn ratings_change_no_token_of_a_seeded_sampled_run() {
    let _g = serial();
    let prompt = chat("agent", "why does the build fail? fix it");
    let sampling = SamplingParams {
        greedy: false,
        temperature: 1.0,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.0,
        seed: 7,
        ..SamplingParams::greedy()
    };
    let plain = {
        let e = load(&test_settings());
        let r = GenerateRequest::new(prompt.clone(), 32, sampling.clone());
        generate(&e, r)
    };
    assert!(plain.sampled.is_empty(), "not asked, not rated");
    assert!(plain.prompt_tokens.is_none());
    let e = load(&test_settings());
    let g = generate(&e, rated(&prompt, 32, sampling, 0));
    assert_eq!(g.tokens, plain.tokens);
    assert!(g
        .sampled
        .iter()
        .all(|t| t.top.is_empty() && t.logprob <= 0.0));
    // Sampled, not greedy: the ratings are not all the maximum, but all are probabilities.
    assert!(g.sampled.iter().all(|t| t.logprob.is_finite()));
}

#[test]
fn tokens_kept_from_mtp_drafts_are_rated_as_without_drafts() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-mtp.gguf");
    let spec = TinySpec {
        mtp: true,
        ..TinySpec::synthetic()
    };
    testmodel::write(&path, &spec).unwrap();
    let engine = |mtp: Mtp| {
        let s = EngineSettings {
            mtp,
            draft_tokens: 3,
            ..test_settings()
        };
        EngineHandle::load(&path, &s, |_| {}).unwrap()
    };
    let prompt = chat(
        "You are a coding agent.",
        "fix the failing test in src/lib.rs",
    );
    let without = generate(
        &engine(Mtp::Off),
        rated(&prompt, 40, SamplingParams::greedy(), 2),
    );
    let with = generate(
        &engine(Mtp::On),
        rated(&prompt, 40, SamplingParams::greedy(), 2),
    );
    let drafted = with.figures.draft.expect("the MTP layer drafted");
    assert!(drafted.drafted > 0);
    assert_eq!(with.tokens, without.tokens);
    assert_eq!(with.sampled.len(), without.sampled.len());
    for (i, (a, b)) in with.sampled.iter().zip(&without.sampled).enumerate() {
        assert_eq!(a.id, b.id);
        // Rows of a multi-token batch may differ from one-token decoding in the last bits.
        assert!(
            (a.logprob - b.logprob).abs() < 1e-4,
            "token {i}: {a:?} vs {b:?}"
        );
        assert_eq!(
            a.top.iter().map(|t| t.0).collect::<Vec<_>>(),
            b.top.iter().map(|t| t.0).collect::<Vec<_>>()
        );
    }
    let _ = tiny_model();
}
