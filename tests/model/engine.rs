//! The in-process engine against real llama.cpp and the tiny `qwen35` model: loading, prefix
//! reuse, snapshot rewinds, cancellation, the token cap, broken files and streaming.

use crate::common::{chat, load, serial, test_settings, tiny_model};
use lilypad::engine::{
    EngineError, EngineEvent, EngineHandle, GenerateRequest, Reuse, SamplingParams, SequenceId,
    StopReason,
};
use lilypad::gguf::GgufError;

fn greedy(prompt: &str, max_tokens: u32) -> GenerateRequest {
    GenerateRequest::new(prompt.to_string(), max_tokens, SamplingParams::greedy())
}

#[test]
fn loads_and_reports_metadata() {
    let _g = serial();
    let mut s = test_settings();
    s.ctx = 2048;
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = progress.clone();
    let e = EngineHandle::load(tiny_model(), &s, move |p| seen.lock().unwrap().push(p)).unwrap();
    let m = e.model();
    assert_eq!(m.architecture, "qwen35");
    assert_eq!(m.layers, 4);
    assert_eq!(m.context, 2048);
    assert_eq!(m.trained_context, 32_768);
    let vocab = lilypad::testmodel::vocab::synthetic();
    assert_eq!(m.vocabulary as usize, vocab.tokens.len());
    assert!(m.parameters > 10_000, "{}", m.parameters);
    if lilypad::engine::llama::gpu_offload_available() {
        // A GPU build with a device (scripts/test-vulkan.sh): every layer by default.
        assert_eq!(m.gpu_layers, m.layers + 1);
    } else {
        assert_eq!(m.gpu_layers, 0, "without a GPU device nothing is offloaded");
    }
    let p = progress.lock().unwrap().clone();
    assert!(
        p.last().is_some_and(|&x| x >= 1.0),
        "progress reported: {p:?}"
    );
    // The chat tokens are single tokens with the vocabulary's ids.
    let ids = e.tokenize("<|im_start|>user\nhi<|im_end|>").unwrap();
    assert_eq!(ids[0], vocab.id_of("<|im_start|>").unwrap());
    assert_eq!(*ids.last().unwrap(), vocab.id_of("<|im_end|>").unwrap());
}

#[test]
fn appended_turns_equal_one_shot() {
    let _g = serial();
    let turn1 = chat("You are terse.", "list the files");
    let a = load(&test_settings());
    let (text1, g1) = a.generate(greedy(&turn1, 12)).unwrap().wait().unwrap();
    assert_eq!(g1.figures.reuse, Reuse::Fresh);
    let turn2 = format!(
        "{turn1}{text1}<|im_end|>\n<|im_start|>user\n<tool_response>\nsrc/main.rs\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n"
    );
    let (text2, g2) = a.generate(greedy(&turn2, 12)).unwrap().wait().unwrap();
    assert!(
        matches!(g2.figures.reuse, Reuse::Extended | Reuse::Rewound { .. }),
        "{:?}",
        g2.figures
    );
    assert!(g2.figures.reused_tokens >= g1.figures.prompt_tokens - 1);
    assert_eq!(
        g2.figures.evaluated_tokens + g2.figures.reused_tokens,
        g2.figures.prompt_tokens
    );
    let (la, _) = a.logits(&format!("{turn2}{text2}")).unwrap();

    let b = load(&test_settings());
    let (text2b, g2b) = b.generate(greedy(&turn2, 12)).unwrap().wait().unwrap();
    assert_eq!(g2b.figures.reuse, Reuse::Fresh);
    assert_eq!(g2b.figures.evaluated_tokens, g2b.figures.prompt_tokens);
    assert_eq!(g2.tokens, g2b.tokens, "same tokens appended or one-shot");
    assert_eq!(text2, text2b);
    b.reset().unwrap();
    let (lb, fb) = b.logits(&format!("{turn2}{text2}")).unwrap();
    assert_eq!(fb.reuse, Reuse::Fresh);
    assert_eq!(la, lb, "next-token logits bitwise equal");
}

#[test]
fn rewind_to_an_earlier_turn_matches_an_uninterrupted_run() {
    let _g = serial();
    let base = chat("system", "first task");
    let branch_a =
        format!("{base}I will read the file.<|im_end|>\n<|im_start|>user\nok<|im_end|>\n");
    let branch_b =
        format!("{base}Let me look around first.<|im_end|>\n<|im_start|>user\nno<|im_end|>\n");

    let e = load(&test_settings());
    let (_, f0) = e.logits(&base).unwrap();
    assert_eq!(f0.reuse, Reuse::Fresh);
    let (_, f1) = e.logits(&branch_a).unwrap();
    assert_eq!(f1.reuse, Reuse::Extended);
    assert_eq!(f1.reused_tokens, f0.prompt_tokens);
    let (rewound, f2) = e.logits(&branch_b).unwrap();
    assert_eq!(
        f2.reuse,
        Reuse::Rewound {
            to: f0.prompt_tokens - 1
        },
        "rewinds to the snapshot one token before the end of the first prompt"
    );
    assert_eq!(f2.evaluated_tokens, f2.prompt_tokens - f0.prompt_tokens + 1);

    let fresh = load(&test_settings());
    let (expected, ff) = fresh.logits(&branch_b).unwrap();
    assert_eq!(ff.reuse, Reuse::Fresh);
    assert_eq!(
        rewound, expected,
        "logits after a rewind are bitwise identical"
    );

    // A prompt that diverges before every snapshot is read again in full, correctly.
    let other = chat("another system prompt", "x");
    let (l3, f3) = e.logits(&other).unwrap();
    assert_eq!(f3.reuse, Reuse::Reprefilled);
    assert_eq!(f3.evaluated_tokens, f3.prompt_tokens);
    fresh.reset().unwrap();
    let (l3b, _) = fresh.logits(&other).unwrap();
    assert_eq!(l3, l3b);
}

#[test]
fn the_same_prompt_twice_reuses_all_but_one_token() {
    let _g = serial();
    let e = load(&test_settings());
    let p = chat("s", "u");
    let (l1, f1) = e.logits(&p).unwrap();
    let (l2, f2) = e.logits(&p).unwrap();
    assert_eq!(f2.evaluated_tokens, 1);
    assert_eq!(f2.reused_tokens, f1.prompt_tokens - 1);
    assert_eq!(
        f2.reuse,
        Reuse::Rewound {
            to: f1.prompt_tokens - 1
        }
    );
    assert_eq!(l1, l2);
}

#[test]
fn token_cap_stops_with_its_reason() {
    let _g = serial();
    let e = load(&test_settings());
    let (text, g) = e
        .generate(greedy(&chat("s", "write a long essay"), 7))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(g.stop, StopReason::TokenCap, "{text:?}");
    assert_eq!(g.tokens.len(), 7);
    assert_eq!(g.figures.generated_tokens, 7);
}

#[test]
fn cancellation_stops_generation() {
    let _g = serial();
    let mut s = test_settings();
    s.ctx = 4096;
    let e = load(&s);
    let mut stream = e
        .generate(greedy(&chat("s", "go on forever"), 1_000_000))
        .unwrap();
    let mut pieces = 0;
    let done = loop {
        match stream
            .events
            .blocking_recv()
            .expect("stream ended without Done")
        {
            EngineEvent::Piece(_) => {
                pieces += 1;
                if pieces == 3 {
                    stream.cancel();
                }
            }
            EngineEvent::Done(g) => break g,
            EngineEvent::Failed(e) => panic!("{e}"),
            EngineEvent::Parsed(p) => panic!("a raw engine sent parsed output {p:?}"),
            EngineEvent::Sampled(t) => panic!("ratings were not asked for: {t:?}"),
        }
    };
    assert_eq!(done.stop, StopReason::Cancelled);
    assert!(
        done.tokens.len() < 4000,
        "stopped long before the context filled"
    );
    // The engine is usable afterwards.
    let (_, g) = e
        .generate(greedy(&chat("s", "again"), 3))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(g.stop, StopReason::TokenCap);
}

#[test]
fn streamed_pieces_concatenate_to_the_detokenised_text() {
    let _g = serial();
    let e = load(&test_settings());
    for seed in [1, 2, 3] {
        let req = GenerateRequest {
            sequence: SequenceId::DEFAULT,
            prompt: chat("s", "héllo wörld €").into(),
            max_tokens: 48,
            sampling: SamplingParams {
                temperature: 1.5,
                top_k: 0,
                top_p: 1.0,
                min_p: 0.0,
                seed,
                greedy: false,
                tool_grammar: false,
                ..SamplingParams::greedy()
            },
            tool_grammar: None,
            pin_turn: false,
            report: Default::default(),
        };
        let mut stream = e.generate(req).unwrap();
        let mut pieces = Vec::new();
        let g = loop {
            match stream.events.blocking_recv().unwrap() {
                EngineEvent::Piece(p) => pieces.push(p),
                EngineEvent::Done(g) => break g,
                EngineEvent::Failed(e) => panic!("{e}"),
                EngineEvent::Parsed(p) => panic!("a raw engine sent parsed output {p:?}"),
                EngineEvent::Sampled(t) => panic!("ratings were not asked for: {t:?}"),
            }
        };
        assert!(!g.tokens.is_empty());
        let joined: String = pieces.concat();
        assert_eq!(joined, e.detokenize(&g.tokens).unwrap(), "seed {seed}");
        assert!(pieces.iter().all(|p| !p.is_empty()));
    }
}

#[test]
fn sampling_is_seedable() {
    let _g = serial();
    let e = load(&test_settings());
    let run = |seed| {
        e.reset().unwrap();
        let req = GenerateRequest {
            sequence: SequenceId::DEFAULT,
            prompt: chat("s", "pick").into(),
            max_tokens: 24,
            sampling: SamplingParams {
                temperature: 1.2,
                top_k: 0,
                top_p: 1.0,
                min_p: 0.0,
                seed,
                greedy: false,
                tool_grammar: false,
                ..SamplingParams::greedy()
            },
            tool_grammar: None,
            pin_turn: false,
            report: Default::default(),
        };
        e.generate(req).unwrap().wait().unwrap().1.tokens
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn broken_files_are_errors_not_crashes() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let s = test_settings();
    let missing = dir.path().join("absent.gguf");
    let err = EngineHandle::load(&missing, &s, |_| {}).err().unwrap();
    assert!(
        matches!(err, EngineError::File(GgufError::NotFound { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("absent.gguf"));

    let bytes = std::fs::read(tiny_model()).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = EngineHandle::load(&cut, &s, |_| {}).err().unwrap();
    assert!(
        matches!(err, EngineError::File(GgufError::Truncated { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("truncated"));

    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"<html>not found</html>").unwrap();
    let err = EngineHandle::load(&junk, &s, |_| {}).err().unwrap();
    assert!(
        matches!(err, EngineError::File(GgufError::BadMagic { .. })),
        "{err}"
    );

    // A well-formed GGUF of an architecture llama.cpp does not know.
    let mut w = lilypad::gguf::GgufWriter::new();
    w.set(
        "general.architecture",
        lilypad::gguf::Value::String("frobnicator".into()),
    );
    let alien = dir.path().join("alien.gguf");
    w.begin(std::fs::File::create(&alien).unwrap())
        .unwrap()
        .finish()
        .unwrap();
    let err = EngineHandle::load(&alien, &s, |_| {}).err().unwrap();
    assert!(matches!(err, EngineError::Load { .. }), "{err}");
    assert!(err.to_string().contains("frobnicator"));
}

#[test]
fn prompts_longer_than_the_context_are_refused() {
    let _g = serial();
    let mut s = test_settings();
    s.ctx = 256;
    let e = load(&s);
    let long = chat("s", &"word ".repeat(400));
    let mut stream = e.generate(greedy(&long, 4)).unwrap();
    match stream.events.blocking_recv().unwrap() {
        EngineEvent::Failed(msg) => assert!(msg.to_string().contains("context"), "{msg}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn twenty_turn_append_sequence_reads_only_new_tokens() {
    let _g = serial();
    let mut s = test_settings();
    s.ctx = 8192;
    let e = load(&s);
    let mut prompt = chat("You are a coding agent.", "fix the failing test");
    let (mut total_prompt, mut total_eval) = (0usize, 0usize);
    let mut previous_prompt = 0usize;
    eprintln!("turn prompt_tokens reused evaluated reuse");
    for turn in 1..=20 {
        let (text, g) = e.generate(greedy(&prompt, 16)).unwrap().wait().unwrap();
        let f = &g.figures;
        eprintln!(
            "{turn:>4} {:>13} {:>6} {:>9} {:?}",
            f.prompt_tokens, f.reused_tokens, f.evaluated_tokens, f.reuse
        );
        if turn > 1 {
            assert!(
                f.reused_tokens + 1 >= previous_prompt,
                "turn {turn} re-read the previous prompt: {f:?}"
            );
        }
        total_prompt += f.prompt_tokens;
        total_eval += f.evaluated_tokens;
        previous_prompt = f.prompt_tokens;
        prompt = format!(
            "{prompt}{text}<|im_end|>\n<|im_start|>user\n<tool_response>\nExit code: 0\nSTDOUT:\nok {turn}\nSTDERR:\n\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n"
        );
    }
    eprintln!("total prompt tokens {total_prompt}, evaluated {total_eval}");
    assert!(
        total_eval * 5 < total_prompt,
        "evaluated {total_eval} of {total_prompt} prompt tokens"
    );
}

#[test]
fn snapshots_inside_a_long_reply_limit_what_a_divergence_rereads() {
    let _g = serial();
    let mut s = test_settings();
    s.snapshot_interval = 8;
    let e = load(&s);
    let prompt = chat("s", "write");
    let (_, g) = e.generate(greedy(&prompt, 30)).unwrap().wait().unwrap();
    let n = g.figures.prompt_tokens;
    assert!(g.tokens.len() >= 17, "{} tokens", g.tokens.len());
    // The next prompt keeps the first 17 generated tokens, then diverges. (Token ids, not
    // text: a random-weight model's output does not re-tokenise to the same ids.)
    let mut next = e.tokenize(&prompt).unwrap();
    next.extend_from_slice(&g.tokens[..17]);
    next.extend(
        e.tokenize("<|im_end|>\n<|im_start|>user\nstop<|im_end|>\n")
            .unwrap(),
    );
    let (logits, f) = e.logits_of_tokens(&next).unwrap();
    assert_eq!(
        f.reuse,
        Reuse::Rewound { to: n + 16 },
        "the snapshot after 16 generated tokens"
    );
    let fresh = load(&test_settings());
    let (expected, _) = fresh.logits_of_tokens(&next).unwrap();
    crate::common::assert_same_logits(&logits, &expected);
}
