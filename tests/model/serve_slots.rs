//! Conversation slots in the in-process engine (requests in a `SequenceId`), the memory
//! behind `lilypad serve`: interleaved conversations each keep their prefix reuse, a
//! conversation continues exactly as if the others had never run, and the least recently used
//! one is dropped past the limit.

use crate::common;
use lilypad::engine::{EngineHandle, GenerateRequest, Reuse, SamplingParams, SequenceId};

fn req(prompt: &str, max_tokens: u32) -> GenerateRequest {
    GenerateRequest::new(prompt.to_string(), max_tokens, SamplingParams::greedy())
}

fn run(e: &EngineHandle, slot: u64, prompt: &str, n: u32) -> (Vec<u32>, lilypad::engine::Figures) {
    let request = GenerateRequest {
        sequence: SequenceId(slot),
        ..req(prompt, n)
    };
    let (_, g) = e.generate(request).unwrap().wait().unwrap();
    (g.tokens, g.figures)
}

#[test]
fn interleaved_conversations_keep_their_memory() {
    let _g = common::serial();
    let e = common::load(&common::test_settings());
    let a1 = common::chat("sys", "task A: list the files");
    let b1 = common::chat("sys", "task B: run the tests");
    let (_, fa) = run(&e, 1, &a1, 6);
    let (_, fb) = run(&e, 2, &b1, 6);
    assert_eq!(
        fb.reuse,
        Reuse::Fresh,
        "B does not touch A's memory: {fb:?}"
    );
    // A continues after B: only what follows A's last snapshot (one token before the end of
    // its prompt) is read again; the generated reply differs from the text appended here.
    let a2 = format!("{a1}x y z");
    let (tokens_a2, f) = run(&e, 1, &a2, 8);
    let to = fa.prompt_tokens - 1;
    assert_eq!(f.reuse, Reuse::Rewound { to }, "{f:?}");
    assert_eq!(f.reused_tokens, to);
    // Exactly what an engine that never saw B produces.
    drop(e);
    let fresh = common::load(&common::test_settings());
    let (tokens_fresh, _) = run(&fresh, 1, &a2, 8);
    assert_eq!(tokens_a2, tokens_fresh);
}

#[test]
fn the_least_recently_used_conversation_is_dropped() {
    let _g = common::serial();
    let settings = lilypad::config::EngineSettings {
        conversation_slots: 2,
        ..common::test_settings()
    };
    let e = common::load(&settings);
    let prompts: Vec<String> = ["A", "B", "C"]
        .iter()
        .map(|t| common::chat(&format!("system {t}"), &format!("task {t}")))
        .collect();
    for (i, p) in prompts.iter().enumerate() {
        run(&e, i as u64 + 1, p, 2);
    }
    // B and C are kept; A was dropped when C came.
    let (_, fb) = run(&e, 2, &prompts[1], 2);
    assert!(fb.reused_tokens > 0, "B was kept: {fb:?}");
    let (_, fa) = run(&e, 1, &prompts[0], 2);
    assert_eq!(fa.reuse, Reuse::Fresh, "A was dropped: {fa:?}");
    // The default sequence (plain `generate`) is a conversation of its own alongside.
    let (_, g) = e.generate(req(&prompts[0], 2)).unwrap().wait().unwrap();
    assert_eq!(g.figures.reuse, Reuse::Fresh);
    let (_, g) = e.generate(req(&prompts[0], 2)).unwrap().wait().unwrap();
    assert_eq!(
        g.figures.reuse,
        Reuse::Rewound {
            to: fa.prompt_tokens - 1
        }
    );
}
