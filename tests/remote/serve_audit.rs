//! `lilypad serve --audit DIR`: one JSON line per request in the UTC day's file, with who asked
//! (key, peer address, request id) and what it cost, the client's `X-Request-Id` echoed (or a
//! new one sent), the messages only with `--audit-content`.

use crate::remote_common::{self, chat, http_request, key_line, serve_with_config};
use serde_json::Value;

fn lines(dir: &std::path::Path) -> (String, Vec<Value>) {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(dir.join(&files[0])).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (files[0].clone(), lines)
}

fn by_id<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    let found: Vec<&Value> = lines.iter().filter(|l| l["request_id"] == id).collect();
    assert_eq!(found.len(), 1, "{id} in {lines:?}");
    found[0]
}

#[test]
fn each_request_has_its_audit_line_and_its_id_back() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit");
    let keys = dir.path().join("keys.jsonl");
    std::fs::write(&keys, key_line("team-a", "tok-a", "") + "\n").unwrap();
    let call = "Read it.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n</function>\n</tool_call>";
    let script = remote_common::script(dir.path(), &[call, "x\n</think>\n\nplain"]);
    let server = serve_with_config(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--keys",
            keys.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[],
        "",
    );
    let port = server.port();
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": "read app.py"}],
        "tools": [{"type": "function", "function": {"name": "Read", "parameters": {
            "type": "object", "properties": {"file_path": {"type": "string"}}}}}],
    });
    let named = http_request(
        port,
        "POST",
        "/v1/chat/completions",
        &[
            ("Authorization", "Bearer tok-a"),
            ("X-Request-Id", "client-chosen-17"),
        ],
        &body.to_string(),
    );
    assert_eq!(named.status, 200, "{}", named.body);
    assert_eq!(named.header("x-request-id"), Some("client-chosen-17"));
    let unnamed = chat(port, Some("tok-a"), "hi", &[]);
    assert_eq!(unnamed.status, 200, "{}", unnamed.body);
    let generated = unnamed
        .header("x-request-id")
        .expect("an id is sent")
        .to_string();
    assert!(!generated.is_empty());
    let refused = chat(
        port,
        Some("tok-wrong"),
        "hi",
        &[("X-Request-Id", "bad-key-1")],
    );
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("x-request-id"), Some("bad-key-1"));

    let (file, lines) = lines(&audit);
    let day = file.strip_suffix(".jsonl").unwrap();
    assert!(
        day.len() == 10 && day.as_bytes()[4] == b'-' && day.as_bytes()[7] == b'-',
        "{file}"
    );
    assert_eq!(lines.len(), 3, "{lines:?}");
    let usage = &named.json()["usage"];
    let l = by_id(&lines, "client-chosen-17");
    assert!(l["ts"].as_str().unwrap().starts_with(day), "{l}");
    assert_eq!(l["key_id"], "team-a");
    assert!(
        l["client"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{l}"
    );
    assert_eq!(l["status"], 200);
    assert_eq!(l["prompt_tokens"], usage["prompt_tokens"]);
    assert_eq!(l["completion_tokens"], usage["completion_tokens"]);
    assert_eq!(
        l["cached_tokens"],
        usage["prompt_tokens_details"]["cached_tokens"]
    );
    assert_eq!(l["finish_reason"], "tool_calls");
    assert_eq!(l["tool_names"], serde_json::json!(["Read"]));
    assert!(l["duration_ms"].is_u64(), "{l}");
    let digest = l["prompt_sha256"].as_str().unwrap();
    assert!(digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(
        l.get("messages").is_none(),
        "no content without --audit-content"
    );

    let l = by_id(&lines, &generated);
    assert_eq!(
        (l["finish_reason"].as_str(), l["key_id"].as_str()),
        (Some("stop"), Some("team-a"))
    );
    assert_ne!(
        l["prompt_sha256"],
        by_id(&lines, "client-chosen-17")["prompt_sha256"]
    );
    let l = by_id(&lines, "bad-key-1");
    assert_eq!(
        (l["status"].as_u64(), l["key_id"].as_str()),
        (Some(401), Some("unknown"))
    );
}

#[test]
fn audit_content_keeps_the_messages() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit");
    let script = remote_common::script(dir.path(), &["x\n</think>\n\nplain"]);
    let server = serve_with_config(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--audit",
            audit.to_str().unwrap(),
            "--audit-content",
        ],
        &[],
        "",
    );
    let r = chat(server.port(), None, "the secret plan", &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, lines) = lines(&audit);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["key_id"], "default");
    assert_eq!(
        lines[0]["messages"][0]["content"], "the secret plan",
        "{}",
        lines[0]
    );
}

/// A directory the audit cannot write into: the request is still answered, and the failure is
/// logged and counted, not written as an empty line.
#[test]
fn an_audit_line_that_cannot_be_written_is_logged_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit");
    let script = remote_common::script(dir.path(), &["x\n</think>\n\nplain"]);
    let server = serve_with_config(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[],
        "",
    );
    // The directory goes away and a file takes its name.
    std::fs::remove_dir(&audit).unwrap();
    std::fs::write(&audit, "").unwrap();
    let r = chat(server.port(), None, "hi", &[("X-Request-Id", "lost-1")]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        remote_common::metric(server.port(), "lilypad:audit_write_failures", &[]),
        1.0
    );
    remote_common::wait_until(&server, "the failure in the log", || {
        server.log().contains("lost-1")
    });
    assert!(
        server.log().contains("audit line was not written"),
        "{}",
        server.log()
    );
}

/// Lilypad's endpoint client names each conversation in `X-Session-ID` (for routers with
/// session affinity), the same for all its turns; the server's audit lines record it.
#[test]
fn the_endpoint_client_sends_one_session_id_per_conversation() {
    use lilypad::engine::remote::ChatRequest;
    use lilypad::engine::SamplingParams;
    use lilypad::protocol::Message;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit");
    let turns = [
        "x\n</think>\n\none",
        "x\n</think>\n\ntwo",
        "x\n</think>\n\nthree",
        "x\n</think>\n\nfour",
    ];
    let script = remote_common::script(dir.path(), &turns);
    let server = serve_with_config(
        &[
            "--engine",
            &format!("script:{}", script.display()),
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[],
        "",
    );
    let engine = remote_common::client(&server.base, |s| s.model_name = Some("script".into()));
    let ask = |messages: Vec<Message>| {
        let r = remote_common::collect_stream(engine.chat(ChatRequest {
            messages,
            tools: Vec::new(),
            max_tokens: 100,
            sampling: SamplingParams::greedy(),
            report: Default::default(),
            session: None,
        }));
        assert!(r.failed.is_none(), "{r:?}");
    };
    let a1 = vec![Message::system("terse"), Message::user("task A")];
    let mut a2 = a1.clone();
    a2.push(Message::assistant(None, "one", vec![]));
    a2.push(Message::user("go on"));
    ask(a1);
    ask(a2);
    ask(vec![Message::system("terse"), Message::user("task B")]);
    // A named sequence (a batch names each attempt's `<instance_id>-<attempt>`) sends its name.
    {
        use lilypad::engine::{Engine, GenerateRequest, Prompt, SequenceId};
        engine.name_sequence(SequenceId(7), "astropy__astropy-12907-2");
        let mut request = GenerateRequest::new(
            Prompt::Chat {
                messages: vec![Message::system("terse"), Message::user("task A")],
                tools: Vec::new(),
            },
            100,
            SamplingParams::greedy(),
        );
        request.sequence = SequenceId(7);
        let r = remote_common::collect_stream(engine.generate(request).unwrap());
        assert!(r.failed.is_none(), "{r:?}");
    }
    let (_, lines) = lines(&audit);
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["session_id"].as_str().unwrap_or_else(|| panic!("{l}")))
        .collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(ids[3], "astropy__astropy-12907-2", "the sequence's name");
    assert!(ids[..3].iter().all(|i| i.len() == 16), "{ids:?}");
    assert_eq!(ids[0], ids[1], "one conversation, one session id");
    assert_ne!(ids[0], ids[2], "another conversation, another id");
}
