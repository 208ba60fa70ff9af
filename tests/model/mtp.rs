//! Self-speculative decoding with the model file's MTP layer, on a tiny model written with
//! one (`TinySpec::mtp`): the MTP layer drafts, the model verifies, and the output is the
//! output without drafts, token for token, greedy or sampled with a seed. With random weights
//! few drafts are accepted; what these tests hold is that accepting and rejecting drafts (and
//! cutting the rejected ones out of the recurrent state) never changes a token.

use crate::common::{assert_same_logits, chat, serial, test_settings, tiny_model};
use lilypad::config::EngineSettings;
use lilypad::engine::{
    Engine, EngineError, EngineHandle, Figures, GenerateRequest, Mtp, SamplingParams, SequenceId,
    StopReason,
};
use lilypad::testmodel::{self, TinySpec};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static MTP_MODEL: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();

/// The tiny model with an MTP block appended (the same trunk as `tiny_model`).
fn mtp_model() -> &'static Path {
    &MTP_MODEL
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("tiny-mtp.gguf");
            let spec = TinySpec {
                mtp: true,
                ..TinySpec::synthetic()
            };
            testmodel::write(&path, &spec).unwrap();
            (dir, path)
        })
        .1
}

fn engine(model: &Path, mtp: Mtp, draft_tokens: u32) -> EngineHandle {
    let settings = EngineSettings {
        mtp,
        draft_tokens,
        snapshot_interval: 8,
        ..test_settings()
    };
    EngineHandle::load(model, &settings, |_| {}).unwrap()
}

fn prompts() -> Vec<String> {
    vec![
        chat(
            "You are a coding agent.",
            "fix the failing test in src/lib.rs",
        ),
        chat("s", &"list the files and read the first one ".repeat(3)),
        chat("agent", "why does the build fail? ".repeat(7).as_str()),
    ]
}

type Run = (Vec<u32>, StopReason, Option<lilypad::engine::DraftFigures>);

/// Every prompt in turn, in one engine (so later prompts go through prefix reuse).
fn run_all(e: &EngineHandle, sampling: &SamplingParams, max_tokens: u32) -> Vec<Run> {
    prompts()
        .iter()
        .map(|p| {
            let r = GenerateRequest::new(p.clone(), max_tokens, sampling.clone());
            let (_, g) = e.generate(r).unwrap().wait().unwrap();
            (g.tokens, g.stop, g.figures.draft)
        })
        .collect()
}

#[test]
fn greedy_output_with_mtp_drafts_is_the_output_without_them() {
    let _g = serial();
    let greedy = SamplingParams::greedy();
    let plain = engine(mtp_model(), Mtp::Off, 3);
    assert_eq!(plain.model().draft_tokens, 0);
    let want = run_all(&plain, &greedy, 48);
    drop(plain);
    // The same trunk without the MTP tensors decodes the same tokens.
    let no_layer = run_all(&engine(tiny_model(), Mtp::Auto, 3), &greedy, 48);
    // On the CPU, `auto` does not draft even with the layer (verifying costs too much there).
    if !lilypad::engine::llama::gpu_offload_available() {
        assert_eq!(engine(mtp_model(), Mtp::Auto, 3).model().draft_tokens, 0);
    }
    for (w, n) in want.iter().zip(&no_layer) {
        assert_eq!(w.0, n.0);
        assert_eq!(n.2, None, "no drafts without an MTP layer");
    }
    let mut drafted = 0;
    let mut accepted = 0;
    for draft_tokens in [1, 3, 5] {
        let e = engine(mtp_model(), Mtp::On, draft_tokens);
        assert_eq!(e.model().draft_tokens, draft_tokens);
        assert!(e.describe().contains("MTP"), "{}", e.describe());
        let got = run_all(&e, &greedy, 48);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.0, w.0, "{draft_tokens} draft tokens: prompt {i}");
            assert_eq!(g.1, w.1, "{draft_tokens} draft tokens: prompt {i}");
            assert_eq!(w.2, None, "no draft figures with --mtp off");
            let d = g.2.expect("draft figures with MTP");
            assert!(d.accepted <= d.drafted);
            // Every decode step but the last drafts (up to the token cap).
            assert!(d.drafted > 0, "{d:?}");
            drafted += d.drafted;
            accepted += d.accepted;
        }
    }
    eprintln!("drafted {drafted}, accepted {accepted}");
    // The MTP layer drafting with an attention cache per sequence: the same tokens.
    let split = EngineHandle::load(
        mtp_model(),
        &EngineSettings {
            mtp: Mtp::On,
            draft_tokens: 3,
            snapshot_interval: 8,
            kv_unified: false,
            ..test_settings()
        },
        |_| {},
    )
    .unwrap();
    for (i, (g, w)) in run_all(&split, &greedy, 48).iter().zip(&want).enumerate() {
        assert_eq!((&g.0, g.1), (&w.0, w.1), "a cache per sequence: prompt {i}");
        assert!(g.2.is_some_and(|d| d.drafted > 0), "{:?}", g.2);
    }
}

#[test]
fn sampled_output_with_mtp_drafts_is_the_output_without_them() {
    let _g = serial();
    let sampling = SamplingParams {
        greedy: false,
        temperature: 1.0,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.0,
        seed: 7,
        ..SamplingParams::greedy()
    };
    let want = run_all(&engine(mtp_model(), Mtp::Off, 3), &sampling, 40);
    let got = run_all(&engine(mtp_model(), Mtp::On, 4), &sampling, 40);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // One draw per output token, in the same order, from the same logits: the same text.
        assert_eq!(g.0, w.0, "prompt {i}");
        assert!(g.2.is_some_and(|d| d.drafted > 0));
    }
}

#[test]
fn generations_decoded_together_do_not_draft_and_keep_their_tokens() {
    let _g = serial();
    let greedy = SamplingParams {
        ignore_eos: true,
        ..SamplingParams::greedy()
    };
    let prompts = prompts();
    let request = |i: usize| GenerateRequest {
        sequence: SequenceId(i as u64 + 1),
        ..GenerateRequest::new(prompts[i].clone(), 24 + 8 * i as u32, greedy.clone())
    };
    let plain = engine(mtp_model(), Mtp::Off, 3);
    let want: Vec<Vec<u32>> = (0..3)
        .map(|i| {
            plain.reset().unwrap();
            plain.generate(request(i)).unwrap().wait().unwrap().1.tokens
        })
        .collect();
    drop(plain);
    let e = engine(mtp_model(), Mtp::On, 3);
    let streams: Vec<_> = (0..3).map(|i| e.generate(request(i)).unwrap()).collect();
    for (i, s) in streams.into_iter().enumerate() {
        let (_, g) = s.wait().unwrap();
        assert_eq!(g.stop, StopReason::TokenCap);
        assert_eq!(g.tokens, want[i], "request {i}");
    }
    // Alone again, the conversation in sequence 0 drafts once more.
    let (_, g) = e.generate(request(0)).unwrap().wait().unwrap();
    assert_eq!(g.tokens, want[0]);
}

#[test]
fn mtp_on_refuses_a_model_without_the_layer() {
    let _g = serial();
    let settings = EngineSettings {
        mtp: Mtp::On,
        ..test_settings()
    };
    let Err(err) = EngineHandle::load(tiny_model(), &settings, |_| {}) else {
        panic!("a model without an MTP layer was loaded with --mtp on");
    };
    assert!(matches!(err, EngineError::NoMtpLayer { .. }), "{err}");
    assert!(err.to_string().contains("--mtp auto"), "{err}");
}

/// One turn, then a prompt that goes back into its reply (kept to its first 40 tokens, then
/// diverging): memory returns to a snapshot taken while the reply was generated (every 8
/// tokens), which must hold exactly the tokens before it. The turn's tokens, the logits each
/// was sampled from and its figures; then the next prompt's logits and figures.
struct Session {
    tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
    figures: Figures,
    next_logits: Vec<f32>,
    next: Figures,
}

fn session(e: &EngineHandle, prompt: &str) -> Session {
    // End-of-generation ignored: the reply runs to the cap whatever the device's numbers.
    let greedy = SamplingParams {
        ignore_eos: true,
        ..SamplingParams::greedy()
    };
    let r = GenerateRequest::new(prompt.to_string(), 64, greedy);
    let (stream, logits) = e.generate_traced(r).unwrap();
    let (_, g) = stream.wait().unwrap();
    // Token ids, not text: a random-weight model's output does not re-tokenise to them.
    let mut next = e.tokenize(prompt).unwrap();
    next.extend_from_slice(&g.tokens[..40]);
    next.extend(
        e.tokenize("<|im_end|>\n<|im_start|>user\nstop<|im_end|>\n")
            .unwrap(),
    );
    let (next_logits, f) = e.logits_of_tokens(&next).unwrap();
    Session {
        tokens: g.tokens,
        logits: logits.try_iter().collect(),
        figures: g.figures,
        next_logits,
        next: f,
    }
}

#[test]
fn accepted_and_partly_accepted_drafts_keep_every_token_and_logit() {
    let _g = serial();
    let prompt = prompts()[0].clone();
    let plain = engine(tiny_model(), Mtp::Off, 3);
    let prompt_tokens = plain.tokenize(&prompt).unwrap();
    let vocab = plain.model().vocabulary;
    let want = session(&plain, &prompt);
    drop(plain);
    assert_eq!(want.tokens.len(), 64, "the reference turn runs to the cap");
    // The mock drafter replays the reference output: all of it (every draft accepted), or
    // with every third or second token wrong (drafts cut back at different depths); with the
    // shared attention cache and with one per sequence (where llama.cpp cuts a stream back).
    let cases = [true, false]
        .into_iter()
        .flat_map(|unified| [0usize, 3, 2].map(|w| (unified, w)));
    for (kv_unified, wrong_every) in cases {
        let mut replay = prompt_tokens.clone();
        for (i, &t) in want.tokens.iter().enumerate() {
            let wrong = wrong_every > 0 && i % wrong_every == wrong_every - 1;
            replay.push(if wrong { (t + 1) % vocab } else { t });
        }
        let settings = EngineSettings {
            draft_tokens: 4,
            draft_replay: replay,
            snapshot_interval: 8,
            kv_unified,
            ..test_settings()
        };
        let e = EngineHandle::load(tiny_model(), &settings, |_| {}).unwrap();
        let got = session(&e, &prompt);
        let case = format!("wrong every {wrong_every}, unified cache {kv_unified}");
        assert_eq!(got.tokens, want.tokens, "{case}: tokens");
        assert_eq!(got.logits.len(), want.logits.len(), "{case}");
        for (g, w) in got.logits.iter().zip(&want.logits) {
            assert_same_logits(g, w);
        }
        match got.next.reuse {
            lilypad::engine::Reuse::Rewound { to } => assert!(
                to > prompt_tokens.len() && to <= prompt_tokens.len() + 40,
                "{case}: a snapshot inside the reply, not {to}"
            ),
            other => panic!("{case}: {other:?}"),
        }
        assert_same_logits(&got.next_logits, &want.next_logits);
        let d = got.figures.draft.expect("draft figures");
        match wrong_every {
            // Each step drafts 4 and keeps them all; the token cap ends the last draft short.
            0 => assert_eq!(d.accepted, d.drafted, "{d:?}"),
            _ => assert!(d.accepted > 0 && d.accepted < d.drafted, "{d:?}"),
        }
        // With every draft accepted, 64 tokens take about 64 / 5 decode steps.
        if wrong_every == 0 {
            assert!(d.accepted >= 48, "{d:?}");
        }
    }
}
