//! Rewinding a conversation's memory on the tiny model: after three turns whose prompts pin
//! their turn boundaries (as the agent's do), the prompt of "turn 1, then a new message" (turn
//! 1's reply re-rendered without its reasoning, as the template does once a new user message
//! follows) is served from the snapshot pinned at turn 1's boundary, although the rolling
//! snapshots have moved on, and gives exactly the logits and greedy tokens of a fresh engine;
//! with too few pins allowed, the figures say which pin was dropped.

use crate::common::{chat, load, serial, test_settings};
use lilypad::config::EngineSettings;
use lilypad::engine::{EngineHandle, GenerateRequest, Reuse, SamplingParams};

fn pinned(prompt: &str, max_tokens: u32) -> GenerateRequest {
    GenerateRequest {
        pin_turn: true,
        ..GenerateRequest::new(prompt.to_string(), max_tokens, SamplingParams::greedy())
    }
}

/// The conversation before turn 1's reply (system and task, no generation prompt).
fn base() -> String {
    let turn1 = chat("You edit files.", "change calc.py");
    turn1
        .strip_suffix("<|im_start|>assistant\n<think>\n")
        .unwrap()
        .to_string()
}

fn result(r: &str) -> String {
    format!("<|im_start|>user\n<tool_response>\n{r}\n</tool_response><|im_end|>\n")
}

/// Run three turns on `e`, each prompt the last one extended by its reply and a tool
/// result; returns turn 1's reply.
fn three_turns(e: &EngineHandle) -> String {
    let gen = "<|im_start|>assistant\n<think>\n";
    let mut prompt = format!("{}{gen}", base());
    let mut first = None;
    for r in ["wrote v = 1", "wrote v = 2", "wrote v = 3"] {
        let (text, g) = e.generate(pinned(&prompt, 10)).unwrap().wait().unwrap();
        assert!(g.figures.dropped_pin.is_none(), "{:?}", g.figures);
        first.get_or_insert(text.clone());
        prompt = format!("{prompt}{text}<|im_end|>\n{}{gen}", result(r));
    }
    first.unwrap()
}

/// "Turn 1, then a new message": turn 1's reply without its reasoning, its result, the
/// new message and the generation prompt.
fn after_rewind(reply: &str) -> String {
    let content = reply.rsplit("</think>").next().unwrap_or("").trim_start();
    format!(
        "{}<|im_start|>assistant\n{content}<|im_end|>\n{}<|im_start|>user\nnow undo it<|im_end|>\n<|im_start|>assistant\n<think>\n",
        base(),
        result("wrote v = 1")
    )
}

fn settings(pins: usize) -> EngineSettings {
    EngineSettings {
        // Two rolling snapshots: after three turns none of them is at turn 1 any more.
        max_snapshots: 2,
        pinned_snapshots: pins,
        ..test_settings()
    }
}

#[test]
fn a_prompt_after_a_rewind_is_served_from_the_pinned_turn() {
    let _g = serial();
    let e = load(&settings(16));
    let reply = three_turns(&e);
    let prompt = after_rewind(&reply);
    let turn1_prefix = e.tokenize(&base()).unwrap().len();
    let report = e.memory().unwrap();
    assert_eq!(report.conversations[0].pinned_snapshots, 3, "{report:?}");

    let (tokens, g) = e.generate(pinned(&prompt, 12)).unwrap().wait().unwrap();
    let f = &g.figures;
    assert_eq!(f.reuse, Reuse::Rewound { to: turn1_prefix }, "{f:?}");
    assert_eq!(f.reused_tokens, turn1_prefix);
    assert_eq!(f.evaluated_tokens, f.prompt_tokens - turn1_prefix);
    assert_eq!(f.dropped_pin, None);

    let fresh = load(&settings(16));
    let (tokens_fresh, gf) = fresh.generate(pinned(&prompt, 12)).unwrap().wait().unwrap();
    assert_eq!(gf.figures.reuse, Reuse::Fresh);
    assert_eq!(
        g.tokens, gf.tokens,
        "the same greedy tokens as a fresh engine"
    );
    assert_eq!(tokens, tokens_fresh);

    // The logits, from the pin again: three turns on a new engine, then the prompt.
    let again = load(&settings(16));
    three_turns(&again);
    let (logits, fl) = again.logits(&prompt).unwrap();
    assert_eq!(fl.reuse, Reuse::Rewound { to: turn1_prefix });
    fresh.reset().unwrap();
    let (expected, _) = fresh.logits(&prompt).unwrap();
    assert_eq!(logits, expected, "logits bitwise equal to a fresh engine's");

    // Without pins the same prompt is read again in full.
    let unpinned = load(&settings(0));
    three_turns(&unpinned);
    let (_, fu) = unpinned.logits(&prompt).unwrap();
    assert_eq!(fu.reuse, Reuse::Reprefilled, "{fu:?}");
}

#[test]
fn pins_past_the_bound_are_dropped_oldest_first_and_the_figures_say_so() {
    let _g = serial();
    let e = load(&settings(2));
    let reply = three_turns(&e);
    let report = e.memory().unwrap();
    assert_eq!(report.conversations[0].pinned_snapshots, 2);
    assert_eq!(report.conversations[0].dropped_pins, 1);
    let turn1_prefix = e.tokenize(&base()).unwrap().len();
    let (logits, f) = e.logits(&after_rewind(&reply)).unwrap();
    assert_eq!(f.reuse, Reuse::Reprefilled, "{f:?}");
    assert_eq!(f.evaluated_tokens, f.prompt_tokens);
    assert_eq!(
        f.dropped_pin,
        Some(turn1_prefix),
        "turn 1's pin was dropped for the bound, so the prompt was read again"
    );
    let fresh = load(&settings(2));
    let (expected, _) = fresh.logits(&after_rewind(&reply)).unwrap();
    assert_eq!(logits, expected);
}
