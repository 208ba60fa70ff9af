//! Lilypad's endpoint engine against someone else's server: llama-cpp-python's
//! OpenAI-compatible server (from PyPI, built by scripts/fetch-test-python.sh) running the same
//! tiny GGUF. That server renders the GGUF's chat template itself and returns the raw text, so
//! this is the raw style: the text arrives as pieces for Lilypad's own parser. Skips loudly
//! without the peer, and fails under `LILYPAD_TEST_STRICT=1`.

use crate::remote_common::{self, client, collect_stream, http_status, python, Peer};
use lilypad::agent::{TemplatedModel, TurnRequest};
use lilypad::engine::remote::{ChatRequest, OutputStyle, RemoteSettings};
use lilypad::engine::SequenceId;
use lilypad::engine::{EngineEvent, SamplingParams, StopReason};
use lilypad::prompt::builtin_tools;
use lilypad::protocol::Message;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// llama-cpp-python's server on a free loopback port, once it answers.
fn llama_cpp_server() -> Option<Peer> {
    let py = python()?;
    let probe = Command::new(&py)
        .args([
            "-c",
            "import llama_cpp.server, llama_cpp; print(llama_cpp.__version__)",
        ])
        .output()
        .expect("run python");
    assert!(
        probe.status.success(),
        "llama-cpp-python[server] is not installed in {}: {}",
        py.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let port = remote_common::free_port();
    let mut child = Command::new(&py)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(remote_common::tiny_model())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "4096", "--n_threads", "1", "--n_batch", "128"])
        .args(["--model_alias", "tiny-chat"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start llama-cpp-python's server");
    let log = Arc::new(Mutex::new(String::new()));
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let peer = Peer::new(child, log.clone(), format!("http://127.0.0.1:{port}/v1"));
    remote_common::collect_into(out, log.clone());
    remote_common::collect_into(err, log);
    let deadline = Instant::now() + Duration::from_secs(120);
    while http_status(port, "/v1/models") != Some(200) {
        assert!(
            Instant::now() < deadline,
            "llama-cpp-python's server did not start:\n{}",
            peer.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Some(peer)
}

fn request(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You are a coding agent."),
            Message::user("list the files"),
        ],
        tools: builtin_tools(),
        max_tokens,
        sampling: SamplingParams::greedy(),
        report: Default::default(),
        session: None,
    }
}

#[test]
fn endpoint_engine_streams_raw_text_from_llama_cpp_python() {
    let Some(server) = llama_cpp_server() else {
        return;
    };
    // Auto: the model name comes from /v1/models; the style is found from the reply.
    let engine = client(&server.base, |_| {});
    let r = collect_stream(engine.chat(request(16)));
    assert!(r.failed.is_none(), "{r:?}\n{}", server.log());
    let g = r.done.as_ref().expect("done");
    assert_eq!(g.stop, StopReason::TokenCap, "{r:?}");
    assert!(!r.pieces.is_empty(), "raw text arrives as pieces: {r:?}");
    assert!(r.reasoning.is_empty() && r.calls.is_empty(), "{r:?}");
    assert_eq!(engine.model_name().as_deref(), Some("tiny-chat"));
    // This server reports no usage when streaming: the figures count the streamed pieces.
    let f = &g.figures;
    assert!((1..=16).contains(&f.generated_tokens), "{f:?}");
    assert!(f.prefill_seconds > 0.0, "{f:?}");

    // Raw, as the agent would run it: pieces stream for Lilypad's parser.
    let model = TemplatedModel::chat(std::sync::Arc::new(
        lilypad::engine::remote::RemoteEngine::new(&RemoteSettings {
            endpoint: Some(server.base.clone()),
            output: OutputStyle::Raw,
            ..Default::default()
        })
        .unwrap(),
    ));
    assert!(
        model.describe().contains("raw text"),
        "{}",
        model.describe()
    );
    let turn = TurnRequest {
        messages: request(1).messages,
        tools: builtin_tools(),
        // Greedy: the tiny model then repeats itself up to the cap, whatever the server does
        // with seeds, so the reply is still running when it is cancelled.
        max_tokens: 2000,
        sampling: SamplingParams::greedy(),
        sequence: SequenceId::DEFAULT,
        pin_turn: false,
        report: Default::default(),
    };
    // Cancelling after the first piece closes the stream at once.
    let stream = model.start(&turn).unwrap();
    let cancel = stream.canceller();
    let mut events = stream.events;
    let first = events.blocking_recv().expect("an event");
    assert!(matches!(first, EngineEvent::Piece(_)), "{first:?}");
    let t = Instant::now();
    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut last = None;
    while let Some(ev) = events.blocking_recv() {
        last = Some(ev);
    }
    match last {
        Some(EngineEvent::Done(g)) => assert_eq!(g.stop, StopReason::Cancelled),
        other => panic!("expected Done(Cancelled), got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(2));
    // The server is still there for the next request.
    let r = collect_stream(engine.chat(request(4)));
    assert!(r.done.is_some(), "{r:?}\n{}", server.log());
}

/// This server sends no usage in its streams: without a tokenizer the prompt is not counted
/// (so the context limit could not hold); with the model's tokenizer.json the count is exactly
/// what llama.cpp reads for the same prompt.
#[test]
fn tokens_are_counted_with_the_tokenizer_when_the_server_reports_none() {
    use lilypad::config::EngineSettings;
    use lilypad::engine::EngineHandle;
    use lilypad::prompt::{GenerationPrompt, PromptSettings, Renderer};
    use lilypad::testmodel::vocab;
    let Some(server) = llama_cpp_server() else {
        return;
    };
    let plain = client(&server.base, |_| {});
    let r = collect_stream(plain.chat(request(4)));
    let g = r.done.as_ref().expect("done");
    assert_eq!(g.figures.prompt_tokens, 0, "{r:?}");

    let dir = tempfile::tempdir().unwrap();
    let tokenizer = dir.path().join("tokenizer.json");
    std::fs::write(
        &tokenizer,
        vocab::tokenizer_json(&vocab::synthetic()).to_string(),
    )
    .unwrap();
    let counting = client(&server.base, |s| s.tokenizer = Some(tokenizer.clone()));
    let r = collect_stream(counting.chat(request(4)));
    assert!(r.failed.is_none(), "{r:?}\n{}", server.log());
    let f = &r.done.as_ref().expect("done").figures;

    let text = Renderer::builtin(&PromptSettings::default())
        .unwrap()
        .render(
            &request(4).messages,
            &builtin_tools(),
            GenerationPrompt::Add,
        )
        .unwrap();
    let engine = EngineHandle::load(
        remote_common::tiny_model(),
        &EngineSettings {
            ctx: 4096,
            threads: 1,
            ..EngineSettings::default()
        },
        |_| {},
    )
    .unwrap();
    let expected = engine.tokenize(&text).unwrap().len();
    assert!(expected > 100, "{expected}");
    assert_eq!(f.prompt_tokens, expected, "{f:?}");
    assert_eq!(f.evaluated_tokens, expected, "{f:?}");
    assert!((1..=8).contains(&f.generated_tokens), "{f:?}");
}
