//! `ignore_eos` on real llama.cpp with the tiny random-weight model: a greedy request that
//! stops at an end-of-generation token generates exactly `max_tokens` with the option, the
//! same tokens up to where it stopped, and no end-of-generation token among them.

use crate::common::{chat, load, serial, test_settings};
use lilypad::engine::{GenerateRequest, SamplingParams, StopReason};

const MAX: u32 = 96;

#[test]
fn ignoring_end_of_generation_runs_to_the_token_cap() {
    let _g = serial();
    let e = load(&test_settings());
    let run = |user: &str, ignore_eos: bool| {
        e.reset().unwrap();
        let sampling = SamplingParams {
            ignore_eos,
            ..SamplingParams::greedy()
        };
        let req = GenerateRequest::new(chat("s", user), MAX, sampling);
        e.generate(req).unwrap().wait().unwrap().1
    };
    // The first of these prompts whose greedy reply ends at end-of-generation early.
    let (user, stopped) = ["hi", "go", "pick", "fix it", "a", "b", "c", "d", "e", "f"]
        .into_iter()
        .map(|u| (u, run(u, false)))
        .find(|(_, g)| g.stop == StopReason::EndOfGeneration && g.tokens.len() < MAX as usize)
        .expect("a prompt whose greedy reply stops at end-of-generation");
    let eog: Vec<u32> = ["<|im_end|>", "<|endoftext|>"]
        .iter()
        .flat_map(|t| e.tokenize(t).unwrap())
        .collect();
    assert_eq!(eog.len(), 2, "each end-of-generation text is one token");

    let full = run(user, true);
    assert_eq!(full.stop, StopReason::TokenCap, "prompt {user:?}");
    assert_eq!(full.tokens.len(), MAX as usize);
    assert_eq!(full.figures.generated_tokens, MAX as usize);
    assert!(
        full.tokens.iter().all(|t| !eog.contains(t)),
        "{:?}",
        full.tokens
    );
    // Only end-of-generation logits change: the reply is the same up to where it stopped.
    assert_eq!(full.tokens[..stopped.tokens.len()], stopped.tokens[..]);
}
