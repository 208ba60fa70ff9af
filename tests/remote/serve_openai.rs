//! The official `openai` Python client (from PyPI, installed by scripts/fetch-test-python.sh)
//! against `lilypad serve`: the checks themselves are in tests/py/openai_peer.py. Skips loudly
//! without the Python peer, and fails under `LILYPAD_TEST_STRICT=1`.

use crate::remote_common::{self, python, serve, Peer};
use std::process::Command;

fn run_peer(py: &std::path::Path, server: &Peer, mode: &str, key: Option<&str>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/openai_peer.py");
    let mut cmd = Command::new(py);
    cmd.arg(script).arg(mode).arg(&server.base);
    if let Some(k) = key {
        cmd.arg(k);
    }
    let out = cmd.output().expect("run the Python peer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "openai_peer.py {mode} failed:\n{stdout}\n{stderr}\n--- server log ---\n{}",
        server.log()
    );
    assert!(stdout.contains(&format!("OK {mode}")), "{stdout}");
    eprintln!("{stdout}");
}

#[test]
fn openai_client_gets_streamed_and_whole_tool_calls() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = remote_common::script(
        dir.path(),
        &[
            "I should read the file first.\n</think>\n\nReading it.\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n<parameter=offset>\n3\n</parameter>\n<parameter=limit>\n10\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=Bash>\n<parameter=command>\nls -la\nwc -l src/*.py\n</parameter>\n<parameter=timeout>\n30\n</parameter>\n</function>\n</tool_call>",
            "Now the edit.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n</function>\n</tool_call>",
            "All checked.\n</think>\n\nDone: x is 1.",
            "CAP:thinking more and more",
        ],
    );
    let server = serve(&["--engine", &format!("script:{}", script.display())], &[]);
    run_peer(&py, &server, "scripted", None);
}

#[test]
fn openai_client_against_the_tiny_model_with_interleaved_conversations() {
    let Some(py) = python() else { return };
    let server = serve(
        &[
            "--model",
            remote_common::tiny_model().to_str().unwrap(),
            "--api-key-env",
            "LILYPAD_TEST_SERVE_KEY",
        ],
        &[("LILYPAD_TEST_SERVE_KEY", "team-key")],
    );
    run_peer(&py, &server, "model", Some("team-key"));
}

#[test]
fn four_concurrent_openai_clients_get_the_replies_of_one_at_a_time() {
    let Some(py) = python() else { return };
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    run_peer(&py, &server, "concurrent", None);
}

#[test]
fn openai_client_gets_logprobs_token_ids_and_token_in_completions() {
    let Some(py) = python() else { return };
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    run_peer(&py, &server, "tokens", None);
}

/// The `openai` client against a server with a keys file: 401 as `AuthenticationError`, 429 as
/// `RateLimitError` with `Retry-After`, `X-Request-Id` echoed.
#[test]
fn openai_client_sees_keys_and_limits() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.jsonl");
    let line = remote_common::key_line("py", "py-token", r#", "tokens_per_minute": 20"#);
    std::fs::write(&keys, line + "\n").unwrap();
    let script = remote_common::script(
        dir.path(),
        &["x\n</think>\n\nfirst", "x\n</think>\n\nsecond"],
    );
    let server = serve(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--keys",
            keys.to_str().unwrap(),
        ],
        &[],
    );
    run_peer(&py, &server, "keys", Some("py-token"));
}
