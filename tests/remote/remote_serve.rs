//! Lilypad's endpoint engine against `lilypad serve` (a real server process): streaming with
//! the tiny model, server-reported figures, per-conversation prefix reuse across interleaved
//! conversations, tool calls parsed by the server (scripted engine behind it), cancellation,
//! and the bearer token.

use crate::remote_common::{self, client, collect_stream, serve, Collected};
use lilypad::agent::{TemplatedModel, TurnRequest};
use lilypad::engine::remote::{ChatRequest, OutputStyle};
use lilypad::engine::SequenceId;
use lilypad::engine::{Reuse, SamplingParams, StopReason};
use lilypad::prompt::builtin_tools;
use lilypad::protocol::Message;
use serde_json::json;
use std::time::{Duration, Instant};

fn sampled(seed: u32) -> SamplingParams {
    SamplingParams {
        seed,
        greedy: false,
        ..SamplingParams::greedy()
    }
}

fn request(messages: Vec<Message>, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        messages,
        tools: builtin_tools(),
        max_tokens,
        sampling: sampled(7),
        report: Default::default(),
        session: None,
    }
}

fn done(c: &Collected) -> &lilypad::engine::Generation {
    assert!(c.failed.is_none(), "failed: {:?}", c.failed);
    c.done.as_ref().expect("done")
}

#[test]
fn streams_from_lilypad_serve_and_keeps_each_conversations_memory() {
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    let engine = client(&server.base, |_| {});
    let a1 = vec![
        Message::system("You are terse."),
        Message::user("task A: list files"),
    ];
    let r = collect_stream(engine.chat(request(a1.clone(), 12)));
    let g = done(&r);
    assert_eq!(g.stop, StopReason::TokenCap, "{r:?}");
    assert_eq!(g.figures.generated_tokens, 12);
    assert!(g.figures.prompt_tokens > 100, "{:?}", g.figures);
    assert_eq!(g.figures.reused_tokens, 0);
    assert!(r.pieces.is_empty(), "lilypad serve parses: no raw pieces");
    assert!(
        !r.reasoning.is_empty(),
        "sampled noise arrives as reasoning: {r:?}"
    );
    assert_eq!(engine.output_style(), OutputStyle::Parsed);
    assert_eq!(engine.model_name().as_deref(), Some("tiny-chat"));
    let a1_prompt = g.figures.prompt_tokens;

    // Another conversation in between. Its system prompt differs, so that it shares only the
    // tool definitions with A: without a slot of its own, A would read its prompt again.
    let b1 = vec![
        Message::system("You are verbose."),
        Message::user("task B: run tests"),
    ];
    let rb = collect_stream(engine.chat(request(b1, 8)));
    assert_eq!(
        done(&rb).figures.reused_tokens,
        0,
        "B shares no slot with A"
    );

    // A continues: its memory was parked, not lost.
    let mut a2 = a1.clone();
    a2.push(Message::assistant(Some(r.reasoning.clone()), "", vec![]));
    a2.push(Message::user("go on"));
    let r2 = collect_stream(engine.chat(request(a2, 8)));
    let f = &done(&r2).figures;
    // A's memory is rewound to the start of its last message at worst (the old reply is
    // re-rendered differently from how it was generated).
    assert!(
        f.reused_tokens + 20 > a1_prompt,
        "A's prefix ({a1_prompt} tokens) was reused after B: {f:?}\n{}",
        server.log()
    );
    assert!(f.prompt_tokens > a1_prompt);
    assert!(server.log().contains("Rewound"), "{}", server.log());
}

#[test]
fn tool_calls_come_back_parsed_and_typed_by_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let script = remote_common::script(
        dir.path(),
        &[
            "The file first.\n</think>\n\nReading it.\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=Bash>\n<parameter=command>\nls -la\n</parameter>\n</function>\n</tool_call>",
            "CAP:still thinking about",
        ],
    );
    let server = serve(&["--engine", &format!("script:{}", script.display())], &[]);
    let model = TemplatedModel::chat(std::sync::Arc::new(
        lilypad::engine::remote::RemoteEngine::new(&lilypad::engine::remote::RemoteSettings {
            endpoint: Some(server.base.clone()),
            ..Default::default()
        })
        .unwrap(),
    ));
    let turn = TurnRequest {
        messages: vec![Message::user("read app.py")],
        tools: builtin_tools(),
        max_tokens: 1000,
        sampling: SamplingParams::greedy(),
        sequence: SequenceId::DEFAULT,
        pin_turn: false,
        report: Default::default(),
    };
    let r = collect_stream(model.start(&turn).unwrap());
    let g = done(&r);
    assert_eq!(g.stop, StopReason::EndOfGeneration);
    assert_eq!(r.reasoning, "The file first.");
    assert_eq!(r.content, "Reading it.");
    assert_eq!(r.order.first(), Some(&"reasoning"));
    assert_eq!(r.calls.len(), 2, "{r:?}");
    assert_eq!(r.calls[0].name, "Read");
    assert_eq!(
        serde_json::Value::Object(r.calls[0].arguments.clone()),
        json!({"file_path": "src/app.py", "limit": 5}),
        "typed by the tool schema: limit is an integer"
    );
    assert_eq!(r.calls[1].arguments["command"], "ls -la");
    assert_ne!(r.calls[0].id, r.calls[1].id);
    assert!(
        model.describe().contains("server parses"),
        "{}",
        model.describe()
    );
    assert!(
        model.describe().contains(&server.base),
        "{}",
        model.describe()
    );

    // A turn cut by the token cap.
    let r = collect_stream(model.start(&turn).unwrap());
    assert_eq!(done(&r).stop, StopReason::TokenCap);
    assert_eq!(r.reasoning, "still thinking about");
    assert!(r.calls.is_empty());
}

#[test]
fn cancelling_closes_the_stream_and_frees_the_server() {
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    let engine = client(&server.base, |_| {});
    let msgs = vec![Message::user("write a long essay")];
    let stream = engine.chat(request(msgs.clone(), 3000));
    let cancel = stream.canceller();
    let mut events = stream.events;
    // Wait for the first output, then cancel.
    let first = events.blocking_recv().expect("an event");
    assert!(
        matches!(first, lilypad::engine::EngineEvent::Parsed(_)),
        "{first:?}"
    );
    let t = Instant::now();
    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut last = None;
    while let Some(ev) = events.blocking_recv() {
        last = Some(ev);
    }
    match last {
        Some(lilypad::engine::EngineEvent::Done(g)) => assert_eq!(g.stop, StopReason::Cancelled),
        other => panic!("expected Done(Cancelled), got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // The server noticed the closed connection and stopped generating. (Generous: on a busy
    // 2-core CI machine the server's log line can take a while.)
    let deadline = Instant::now() + Duration::from_secs(90);
    while !server.log().contains("Cancelled") {
        assert!(Instant::now() < deadline, "{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // And it serves the next request.
    let r = collect_stream(engine.chat(request(msgs, 4)));
    assert_eq!(done(&r).figures.generated_tokens, 4);
    assert!(matches!(
        done(&r).figures.reuse,
        Reuse::Extended | Reuse::Fresh
    ));
}

/// A client that leaves while the model writes a long tool call (nothing is streamed until the
/// call is settled) still stops the engine: the server keeps probing the connection.
#[test]
fn a_client_leaving_during_a_tool_call_stops_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..400).map(|i| format!("line {i}\n")).collect();
    let turn = format!(
        "x\n</think>\n\n<tool_call>\n<function=Write>\n<parameter=file_path>\na.txt\n</parameter>\n<parameter=content>\n{body}</parameter>\n</function>\n</tool_call>"
    );
    let script = remote_common::script(dir.path(), &[&turn]);
    let engine_arg = format!("script:{}", script.display());
    // About 5 ms a piece: the call takes seconds to write.
    let server = serve(
        &["--engine", &engine_arg],
        &[("LILYPAD_SCRIPT_DELAY_MS", "5")],
    );
    let engine = client(&server.base, |_| {});
    let stream = engine.chat(request(vec![Message::user("write it")], 8000));
    let cancel = stream.canceller();
    let mut events = stream.events;
    let first = events.blocking_recv().expect("an event");
    assert!(
        matches!(first, lilypad::engine::EngineEvent::Parsed(_)),
        "{first:?}"
    );
    // Into the call, then away.
    std::thread::sleep(Duration::from_millis(300));
    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    while events.blocking_recv().is_some() {}
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = server.log();
        if log.contains("Cancelled") {
            break;
        }
        assert!(
            !log.contains("EndOfGeneration"),
            "the engine wrote the whole call for a client that had left:\n{log}"
        );
        assert!(Instant::now() < deadline, "{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bearer_token_is_required_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let script = remote_common::script(dir.path(), &["x\n</think>\n\nhello"]);
    let server = serve(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--api-key-env",
            "LILYPAD_TEST_SERVE_KEY",
        ],
        &[("LILYPAD_TEST_SERVE_KEY", "s3cret")],
    );
    let msgs = vec![Message::user("hi")];
    // Connecting up front fails with the server's refusal.
    let err =
        lilypad::engine::remote::RemoteEngine::new(&lilypad::engine::remote::RemoteSettings {
            endpoint: Some(server.base.clone()),
            ..Default::default()
        })
        .and_then(|e| e.connect())
        .expect_err("refused");
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    let anon = client(&server.base, |s| s.model_name = Some("script".into()));
    let r = collect_stream(anon.chat(request(msgs.clone(), 10)));
    let err = r.failed.expect("refused");
    assert!(err.contains("HTTP 401"), "{err}");
    std::env::set_var("LILYPAD_TEST_CLIENT_KEY", "s3cret");
    let keyed = client(&server.base, |s| {
        s.api_key_env = Some("LILYPAD_TEST_CLIENT_KEY".into())
    });
    assert_eq!(keyed.connect().unwrap(), "script");
    let r = collect_stream(keyed.chat(request(msgs, 10)));
    assert_eq!(r.content, "hello", "{r:?}");
    assert_eq!(keyed.model_name().as_deref(), Some("script"));
}

#[test]
fn requests_in_flight_are_bounded_and_one_more_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Each reply takes about 40 pieces x 20 ms.
    let long = format!("{}\n</think>\n\ndone", "x".repeat(120));
    let script = remote_common::script(dir.path(), &[&long, &long, &long]);
    let server = remote_common::serve_with_config(
        &["--engine", &format!("script:{}", script.display())],
        &[("LILYPAD_SCRIPT_DELAY_MS", "20")],
        "[serve]\nmax_queue = 2\n",
    );
    let engine = client(&server.base, |s| {
        s.retries = 0;
        s.model_name = Some("script".into());
    });
    let msgs = vec![Message::user("hi")];
    let first = engine.chat(request(msgs.clone(), 1000));
    std::thread::sleep(Duration::from_millis(200));
    let second = engine.chat(request(msgs.clone(), 1000));
    std::thread::sleep(Duration::from_millis(200));
    // `max_queue` (2) in flight: a third is turned away. (Until the door, 1 let two in.)
    let third = collect_stream(engine.chat(request(msgs, 1000)));
    let err = third.failed.expect("refused");
    assert!(err.contains("HTTP 503"), "{err}");
    let a = collect_stream(first);
    let b = collect_stream(second);
    assert_eq!((a.content.as_str(), b.content.as_str()), ("done", "done"));
}

/// SIGTERM drains: the stream in flight finishes whole, a new request and the readiness probe
/// get 503 (with `Retry-After`) meanwhile while the process still answers `/health/live`, and
/// the process then exits 0.
#[test]
fn sigterm_lets_the_stream_in_flight_finish_and_turns_new_requests_away() {
    let dir = tempfile::tempdir().unwrap();
    // About 40 pieces x 25 ms: the reply is still streaming when the signal comes.
    let long = format!("{}\n</think>\n\ndone", "x".repeat(120));
    let script = remote_common::script(dir.path(), &[&long, &long]);
    let mut server = serve(
        &["--engine", &format!("script:{}", script.display())],
        &[("LILYPAD_SCRIPT_DELAY_MS", "25")],
    );
    let port = server.port();
    assert_eq!(remote_common::http_status(port, "/health/ready"), Some(200));
    assert_eq!(remote_common::http_status(port, "/health/live"), Some(200));
    let engine = client(&server.base, |s| {
        s.retries = 0;
        s.model_name = Some("script".into());
    });
    let msgs = vec![Message::user("hi")];
    let first = engine.chat(request(msgs.clone(), 1000));
    std::thread::sleep(Duration::from_millis(300));
    server.terminate();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        remote_common::http_status(port, "/health/ready"),
        Some(503),
        "{}",
        server.log()
    );
    assert_eq!(remote_common::http_status(port, "/health/live"), Some(200));
    let refused = collect_stream(engine.chat(request(msgs, 1000)));
    let err = refused.failed.expect("refused while draining");
    assert!(err.contains("HTTP 503"), "{err}");
    let a = collect_stream(first);
    assert!(a.failed.is_none(), "{a:?}");
    assert_eq!(
        a.content, "done",
        "the stream in flight finished whole: {a:?}"
    );
    let status = server
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("still running after the drain:\n{}", server.log()));
    assert_eq!(status.code(), Some(0), "{}", server.log());
}

/// A 20 MB prompt (a pasted log) cannot fit a 4,096-token context whatever its tokens: it is
/// refused from its size, before the engine tokenises any of it (the message gives the bound,
/// "at least"), with OpenAI's 400 `context_length_exceeded`, and a small request sent right
/// after it is answered.
#[test]
fn a_prompt_too_large_for_the_context_is_refused_from_its_size() {
    let model = remote_common::tiny_model().display().to_string();
    let server = serve(&["--model", &model], &[]);
    let engine = client(&server.base, |s| s.retries = 0);
    let big = "2026-12-03 11:58:49 worker 7: request 4421 done in 35 ms\n".repeat(380_000);
    assert!(big.len() > 20 << 20);
    let big = engine.chat(request(vec![Message::user(big)], 4));
    let small = collect_stream(engine.chat(request(vec![Message::user("hi")], 4)));
    assert!(small.failed.is_none(), "{small:?}\n{}", server.log());
    assert!(small.done.is_some(), "{small:?}");
    let big = collect_stream(big);
    let err = big.failed.expect("the big prompt is refused");
    assert!(err.contains("HTTP 400"), "{err}");
    assert!(err.contains("at least"), "refused from its size: {err}");
}

/// `GET path` or `POST path` with a JSON body, HTTP/1.0: the status and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    (status, body.unwrap_or_default())
}

/// `/metrics`, read by a Prometheus text parser, counts exactly what was served: three
/// replies (two streamed, one whole) with their tokens, and one request turned away.
#[test]
fn metrics_count_what_was_served() {
    use openmetrics_parser::openmetrics::parse_openmetrics;
    use openmetrics_parser::OpenMetricsValue;
    let dir = tempfile::tempdir().unwrap();
    let reply = "Let me think.\n</think>\n\nall done here";
    let script = remote_common::script(dir.path(), &[reply, reply, reply]);
    let server = serve(&["--engine", &format!("script:{}", script.display())], &[]);
    let port = server.port();
    let engine = client(&server.base, |s| {
        s.retries = 0;
        s.model_name = Some("script".into());
    });
    let mut prompt = 0;
    let mut generated = 0;
    for i in 0..2 {
        let r = collect_stream(engine.chat(request(vec![Message::user(format!("task {i}"))], 100)));
        let g = done(&r);
        prompt += g.figures.prompt_tokens;
        generated += g.figures.generated_tokens;
    }
    let (status, body) = http(
        port,
        "POST",
        "/v1/chat/completions",
        r#"{"messages": [{"role": "user", "content": "task 2"}], "max_tokens": 100}"#,
    );
    assert_eq!(status, 200, "{body}");
    let whole: serde_json::Value = serde_json::from_str(&body).unwrap();
    prompt += whole["usage"]["prompt_tokens"].as_u64().unwrap() as usize;
    generated += whole["usage"]["completion_tokens"].as_u64().unwrap() as usize;
    let (status, _) = http(
        port,
        "POST",
        "/v1/chat/completions",
        r#"{"messages": [{"role": "user", "content": "x"}], "n": 17}"#,
    );
    assert_eq!(status, 400);
    assert!(generated > 0 && prompt > 0);

    let (status, text) = http(port, "GET", "/metrics", "");
    assert_eq!(status, 200);
    let exposition = parse_openmetrics(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    // The value of family `name` in the one series whose `label` matches (or the only one).
    let value = |name: &str, label: Option<(&str, &str)>| -> f64 {
        let family = exposition
            .families
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        let found: Vec<f64> = family
            .iter_samples()
            .filter(|s| {
                let labels = s.get_labelset().unwrap();
                assert_eq!(labels.get_label_value("model_name"), Some("script"));
                label.is_none_or(|(k, v)| labels.get_label_value(k) == Some(v))
            })
            .map(|s| match &s.value {
                OpenMetricsValue::Counter(c) => c.value.as_f64(),
                OpenMetricsValue::Gauge(g) | OpenMetricsValue::Unknown(g) => g.as_f64(),
                OpenMetricsValue::Histogram(h) => h.count.unwrap_or_default() as f64,
                other => panic!("{name}: {other:?}"),
            })
            .collect();
        assert_eq!(found.len(), 1, "{name} {label:?} in\n{text}");
        found[0]
    };
    assert_eq!(
        value("lilypad:request_success", Some(("finished_reason", "stop"))),
        3.0
    );
    assert_eq!(
        value(
            "lilypad:requests_rejected",
            Some(("reason", "invalid_request"))
        ),
        1.0
    );
    assert_eq!(value("lilypad:prompt_tokens", None), prompt as f64);
    assert_eq!(value("lilypad:generation_tokens", None), generated as f64);
    assert_eq!(value("lilypad:num_requests_running", None), 0.0);
    assert_eq!(value("lilypad:num_requests_waiting", None), 0.0);
    assert_eq!(value("lilypad:time_to_first_token_seconds", None), 3.0);
    assert_eq!(value("lilypad:e2e_request_latency_seconds", None), 3.0);
}

/// Asked for a rollout's tokens, the endpoint engine requests `logprobs` and `return_token_ids`
/// and hands back what the server sampled: the ids and ratings of the in-process engine on the
/// other side, the same as that engine reports them itself for the same prompt.
#[test]
fn token_ids_and_logprobs_come_back_from_the_server() {
    let model = remote_common::tiny_model();
    let server = serve(&["--model", model.to_str().unwrap()], &[]);
    let engine = client(&server.base, |_| {});
    let mut req = request(
        vec![
            Message::system("You are terse."),
            Message::user("task T: read main.rs"),
        ],
        10,
    );
    req.sampling = SamplingParams::greedy();
    req.report = lilypad::engine::TokenReport {
        logprobs: Some(0),
        prompt_tokens: true,
    };
    let r = collect_stream(engine.chat(req));
    let g = done(&r);
    assert_eq!(g.sampled.len(), 10, "{g:?}");
    assert!(g.sampled.iter().all(|t| t.logprob <= 0.0));
    let prompt = g.prompt_tokens.clone().expect("the prompt's ids");
    assert_eq!(prompt.len(), g.figures.prompt_tokens);
    // The same prompt in this process: the same greedy tokens, rated alike.
    let local = lilypad::engine::EngineHandle::load(
        model,
        &lilypad::config::EngineSettings {
            ctx: 4096,
            threads: 1,
            ..Default::default()
        },
        |_| {},
    )
    .unwrap();
    let mut direct = lilypad::engine::GenerateRequest::new(
        lilypad::engine::Prompt::Tokens(prompt),
        10,
        SamplingParams::greedy(),
    );
    direct.report.logprobs = Some(0);
    let (_, want) = local.generate(direct).unwrap().wait().unwrap();
    let ids = |s: &[lilypad::engine::SampledToken]| s.iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(ids(&g.sampled), ids(&want.sampled));
    for (a, b) in g.sampled.iter().zip(&want.sampled) {
        assert!((a.logprob - b.logprob).abs() < 1e-4, "{a:?} vs {b:?}");
    }
}
