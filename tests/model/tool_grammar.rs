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

/// Teacher forcing, the premise of `bench grammar`'s accept and reject arms: forced tokens are
/// emitted as given, a forced well-formed call passes the grammar untouched, and a forced
/// end-of-generation token inside a call is rejected by the grammar, which picks instead.
#[test]
fn forced_tokens_are_kept_unless_the_grammar_rejects_them() {
    let _g = serial();
    let e = load(&test_settings());
    let call = "\n<function=Read>\n<parameter=file_path>\nsrc/a.rs\n</parameter>\n</function>\n</tool_call>";
    let forced = e.tokenize(call).unwrap();
    let eog = e.tokenize("<|im_end|>").unwrap();
    let prompt = format!("{}<tool_call>", chat("sys", "go"));
    let run = |force_tokens: Vec<u32>, grammar: bool, max: usize| {
        e.reset().unwrap();
        let sampling = SamplingParams {
            greedy: false,
            seed: 3,
            tool_grammar: grammar,
            force_tokens,
            ..SamplingParams::greedy()
        };
        let mut req = GenerateRequest::new(prompt.clone(), max as u32, sampling);
        req.tool_grammar = grammar
            .then(|| tool_call_grammar(&builtin_tools()))
            .flatten();
        e.generate(req).unwrap().wait().unwrap().1
    };
    for grammar in [false, true] {
        let g = run(forced.clone(), grammar, forced.len());
        assert_eq!(g.tokens, forced, "grammar {grammar}");
    }
    // Past the forced list the model's own picks follow.
    assert_eq!(
        run(forced.clone(), false, forced.len() + 4).tokens.len(),
        forced.len() + 4
    );

    let without = run(eog.repeat(8), false, 8);
    assert!(
        without.tokens.is_empty(),
        "a forced end-of-generation token ends the reply"
    );
    let with = run(eog.repeat(24), true, 24);
    assert!(!with.tokens.is_empty());
    assert!(
        with.tokens.iter().all(|t| !eog.contains(t)),
        "{:?}",
        with.tokens
    );
    let text = e.detokenize(&with.tokens).unwrap();
    assert!(
        text.starts_with("\n<function="),
        "the grammar's picks: {text:?}"
    );
}
