//! The tool-call grammar on real llama.cpp with the tiny random-weight model, whose output is
//! noise: started as if `<tool_call>` had just been generated, the grammar makes the noise a
//! call to a known tool with that tool's parameters; without it, the same seeds mostly give
//! something no parser can read as a call.

use crate::common::{chat, load, serial, test_settings};
use lilypad::engine::{GenerateRequest, SamplingParams};
use lilypad::prompt::{builtin_tools, parse_all, tool_call_grammar, Start, ToolSchemas};

const SEEDS: u32 = 24;

/// Generates after a prompt that ends with `<tool_call>` and parses `<tool_call>` + the text.
/// Returns whether the result is a call to a known tool using only that tool's parameters.
fn well_formed(e: &lilypad::engine::EngineHandle, seed: u32, grammar: bool) -> bool {
    let tools = builtin_tools();
    let prompt = format!("{}<tool_call>", chat("sys", "go"));
    let sampling = SamplingParams {
        seed,
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        ..SamplingParams::greedy()
    };
    let sampling = SamplingParams {
        greedy: false,
        tool_grammar: grammar,
        ..sampling
    };
    let mut req = GenerateRequest::new(prompt, 48, sampling);
    req.tool_grammar = if grammar {
        tool_call_grammar(&tools)
    } else {
        None
    };
    let (text, _) = e.generate(req).unwrap().wait().unwrap();
    // Only the first call counts: after it the grammar leaves the noise free again (any token
    // but `<tool_call>`), and stray closers in that noise would make the parser distrust it.
    let text = match text.find("</tool_call>") {
        Some(i) => &text[..i + "</tool_call>".len()],
        None => &text[..],
    };
    let schemas = ToolSchemas::new(&tools);
    let turn = parse_all(&format!("<tool_call>{text}"), &schemas, Start::Content);
    let known: Vec<&str> = schemas.names().collect();
    let ok = turn.tool_calls.first().is_some_and(|call| {
        let params = schemas.params(&call.name);
        turn.errors.is_empty()
            && known.contains(&call.name.as_str())
            && call.arguments.keys().all(|k| params.contains(&k.as_str()))
    });
    if grammar && !ok {
        eprintln!("seed {seed}: not a readable call: {text:?} -> {turn:?}");
    }
    ok
}

#[test]
fn the_grammar_makes_noise_a_well_formed_call() {
    let _g = serial();
    let e = load(&test_settings());
    let with: u32 = (0..SEEDS)
        .map(|s| u32::from(well_formed(&e, s, true)))
        .sum();
    let without: u32 = (0..SEEDS)
        .map(|s| u32::from(well_formed(&e, s, false)))
        .sum();
    assert_eq!(
        with, SEEDS,
        "every seed gives a readable call with the grammar"
    );
    assert!(
        without * 4 <= SEEDS,
        "without the grammar most seeds give no readable call ({without} of {SEEDS} did)"
    );
}

#[test]
fn without_the_trigger_the_grammar_changes_nothing() {
    let _g = serial();
    let e = load(&test_settings());
    // The same seed with and without the grammar, in reasoning: the noise of this model is
    // not likely to produce the trigger in 32 tokens, so both must be identical text.
    for seed in 0..4 {
        let run = |grammar: bool| {
            let sampling = SamplingParams {
                greedy: false,
                seed,
                tool_grammar: grammar,
                ..SamplingParams::greedy()
            };
            let mut req = GenerateRequest::new(chat("sys", "go"), 32, sampling);
            req.tool_grammar = grammar
                .then(|| tool_call_grammar(&builtin_tools()))
                .flatten();
            e.generate(req).unwrap().wait().unwrap().0
        };
        let free = run(false);
        if free.contains("<tool_call>") {
            continue;
        }
        assert_eq!(run(true), free, "seed {seed}");
    }
}
