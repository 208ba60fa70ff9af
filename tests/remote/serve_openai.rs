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

/// `n` = 4: four indexed choices from the `openai` client, whole and streamed, chat and
/// completions; `best_of` refused.
#[test]
fn openai_client_gets_n_indexed_choices() {
    let Some(py) = python() else { return };
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    run_peer(&py, &server, "choices", None);
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

/// `lilypad serve --replicas 2` on the tiny model, each keeping the memory of all six
/// conversations (when replica 0 fails, replica 1 holds them all); the test-only fault route
/// open.
fn two_replicas() -> Peer {
    remote_common::serve_with_engine_config(
        &[
            "--model",
            remote_common::tiny_model().to_str().unwrap(),
            "--replicas",
            "2",
        ],
        &[("LILYPAD_TEST_FAULTS", "1")],
        "",
        "conversation_slots = 8",
    )
}

#[test]
fn replicas_keep_each_conversation_where_its_memory_is() {
    let Some(py) = python() else { return };
    let server = two_replicas();
    run_peer(&py, &server, "replicas", None);
    // Both replicas answered: the requests' series carry each index.
    for replica in ["0", "1"] {
        let n = remote_common::metric(
            server.port(),
            "lilypad:e2e_request_latency_seconds",
            &[("replica", replica)],
        );
        assert!(
            n >= 4.0,
            "replica {replica}: {n} requests\n{}",
            server.log()
        );
    }
}

#[test]
fn replicas_keep_each_session_where_its_memory_is() {
    let Some(py) = python() else { return };
    let server = two_replicas();
    run_peer(&py, &server, "replicas-session", None);
}

#[test]
fn a_failed_replica_moves_its_conversations_and_replies_stay_right() {
    let Some(py) = python() else { return };
    let server = two_replicas();
    run_peer(&py, &server, "replicas-failover", None);
    assert_eq!(
        remote_common::http_status(server.port(), "/health/ready"),
        Some(200)
    );
    let log = server.log();
    assert!(log.contains("replica 0: its engine stopped"), "{log}");
}

#[test]
fn the_fault_route_is_closed_unless_asked_for() {
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    let answer =
        remote_common::http_request(server.port(), "POST", "/test/replicas/0/halt", &[], "");
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert_eq!(
        remote_common::http_status(server.port(), "/health/ready"),
        Some(200)
    );
}

/// A second tiny model: the same vocabulary and template, other weights.
fn second_tiny_model(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tiny-chat-round-2.gguf");
    let spec = lilypad::testmodel::TinySpec {
        seed: 99,
        chat_template: Some(lilypad::prompt::BUILTIN_TEMPLATE.to_string()),
        ..lilypad::testmodel::TinySpec::synthetic()
    };
    lilypad::testmodel::write(&path, &spec).expect("write the second tiny model");
    path
}

/// `POST /update_weights` to a second tiny model while a stream runs: the stream finishes on
/// the old weights, then replies are those of a server that runs the second model.
#[test]
fn update_weights_while_a_stream_runs() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let second = second_tiny_model(dir.path());
    let server = serve(
        &[
            "--model",
            remote_common::tiny_model().to_str().unwrap(),
            "--weight-updates",
        ],
        &[],
    );
    let reference = serve(&["--model", second.to_str().unwrap()], &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/openai_peer.py");
    let out = Command::new(&py)
        .arg(script)
        .arg("weights")
        .arg(&server.base)
        .arg(&second)
        .arg(&reference.base)
        .output()
        .expect("run the Python peer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK weights"),
        "openai_peer.py weights failed:\n{stdout}\n{}\n--- server log ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    assert!(
        server.log().contains("new weights in force"),
        "{}",
        server.log()
    );
}

#[test]
fn weight_updates_are_closed_unless_asked_for() {
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    let answer = remote_common::http_request(
        server.port(),
        "POST",
        "/update_weights",
        &[],
        r#"{"model_path": "/dev/null"}"#,
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(answer.body.contains("--weight-updates"), "{}", answer.body);
}
