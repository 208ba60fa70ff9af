//! A long prompt joining running generations is read in chunks between their steps: while
//! three streams decode, a prompt of more than 6,000 tokens joins, and no more prompt tokens
//! than the per-step budget (`prefill_chunk`) are ever read between two of their steps (the
//! engine's own count, so no timing is involved); every output, the long one's included, is
//! the same token for token as each request's alone. With the budget off, the same join reads
//! the whole prompt between two steps (what the streams used to wait for).

use crate::common::{chat, load, serial, test_settings};
use lilypad::engine::{EngineHandle, GenerateRequest, SamplingParams, SequenceId, StopReason};

const CHUNK: u32 = 256;

/// Greedy, running to `max_tokens` (no end-of-generation token), so that the streams are
/// still decoding when the long prompt has been read.
fn greedy_in(seq: u64, prompt: &str, max_tokens: u32) -> GenerateRequest {
    let sampling = SamplingParams {
        ignore_eos: true,
        ..SamplingParams::greedy()
    };
    GenerateRequest {
        sequence: SequenceId(seq),
        ..GenerateRequest::new(prompt.to_string(), max_tokens, sampling)
    }
}

fn engine(prefill_chunk: u32) -> EngineHandle {
    load(&lilypad::config::EngineSettings {
        ctx: 16_384,
        sequences: 4,
        prefill_chunk,
        ..test_settings()
    })
}

/// The three streams and the long request.
fn requests(e: &EngineHandle) -> (Vec<GenerateRequest>, GenerateRequest) {
    let streams = (0..3)
        .map(|i| greedy_in(i + 1, &chat("s", &format!("count to {}", 10 + i)), 160))
        .collect();
    let mut log = String::new();
    for i in 0..280 {
        log.push_str(&format!("line {i}: value={} ok\n", i * 7));
    }
    let long = greedy_in(9, &chat("s", &format!("why does this fail?\n{log}")), 8);
    let n = e.tokenize(long.text("test").unwrap()).unwrap().len();
    assert!(n > 6000, "the long prompt has {n} tokens");
    (streams, long)
}

/// Tokens of each request, all three streams started first and the long one joining once
/// each has produced a token; and the engine's largest count of prompt tokens read between
/// two steps.
fn joined(
    e: &EngineHandle,
    streams: &[GenerateRequest],
    long: &GenerateRequest,
) -> (Vec<Vec<u32>>, usize) {
    let running: Vec<_> = streams
        .iter()
        .map(|r| e.generate_traced(r.clone()).unwrap())
        .collect();
    for (_, logits) in &running {
        logits.recv().expect("a first token");
    }
    let late = e.generate(long.clone()).unwrap();
    let mut out: Vec<Vec<u32>> = running
        .into_iter()
        .map(|(s, _)| {
            let (_, g) = s.wait().unwrap();
            assert_eq!(g.stop, StopReason::TokenCap);
            g.tokens
        })
        .collect();
    out.push(late.wait().unwrap().1.tokens);
    (out, e.occupancy().prompt_between_steps_max)
}

#[test]
fn a_long_prompt_joins_running_streams_a_chunk_per_step_and_changes_no_output() {
    let _g = serial();
    let alone_engine = engine(CHUNK);
    let (streams, long) = requests(&alone_engine);
    let mut expected = Vec::new();
    for r in streams.iter().chain([&long]) {
        alone_engine.reset().unwrap();
        expected.push(
            alone_engine
                .generate(r.clone())
                .unwrap()
                .wait()
                .unwrap()
                .1
                .tokens,
        );
    }
    drop(alone_engine);

    let (got, most) = joined(&engine(CHUNK), &streams, &long);
    assert_eq!(got, expected, "outputs with the prompt read in chunks");
    assert!(most > 0, "the long prompt was read while the streams ran");
    assert!(
        most <= CHUNK as usize,
        "{most} prompt tokens read between two steps, more than the budget of {CHUNK}"
    );

    // Without a budget the whole prompt is read between two steps of the streams.
    let (got, most) = joined(&engine(0), &streams, &long);
    assert_eq!(got, expected, "outputs with the prompt read whole");
    assert!(most > 6000, "{most}");
}
