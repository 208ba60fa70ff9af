//! `n` choices on `lilypad serve` (`src/serve/choices.rs`): a scripted engine (one script turn
//! per choice, in index order) for the shapes, streamed and whole, chat and completions, the
//! refusals and the door (one request, one audit line); the tiny model for the prompt read
//! once, seeds that differ per choice, and usage counting the prompt once.

use crate::remote_common::{
    self, http_request, serve, serve_with_config, serve_with_engine_config, Answer,
};
use serde_json::{json, Value};

fn post(port: u16, path: &str, body: &Value) -> Answer {
    http_request(port, "POST", path, &[], &body.to_string())
}

fn chat_body(n: usize, extra: Value) -> Value {
    let mut body = json!({
        "messages": [{"role": "user", "content": "answer in several ways"}],
        "max_tokens": 1000,
        "n": n,
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    body
}

/// The `data:` events of a server-sent stream, `[DONE]` left out.
fn events(body: &str) -> Vec<Value> {
    let mut seen_done = false;
    let out = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| {
            let done = *d == "[DONE]";
            seen_done |= done;
            !done
        })
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect();
    assert!(seen_done, "the stream ends with [DONE]: {body}");
    out
}

fn script_server(
    dir: &std::path::Path,
    turns: &[&str],
    extra_args: &[&str],
) -> remote_common::Peer {
    let script = remote_common::script(dir, turns);
    let mut args = vec![
        "--engine".to_string(),
        format!("script:{}", script.display()),
    ];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serve(&args, &[])
}

#[test]
fn whole_chat_answers_every_choice_indexed_with_its_own_finish_and_usage() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit");
    let server = script_server(
        dir.path(),
        &[
            "one\n</think>\n\nfirst answer",
            "two\n</think>\n\nsecond answer",
            "CAP:three, cut off",
            "four\n</think>\n\nfourth answer",
            "alone\n</think>\n\nthe single answer",
        ],
        &["--audit", audit.to_str().unwrap()],
    );
    let port = server.port();
    let a = post(port, "/v1/chat/completions", &chat_body(4, json!({})));
    assert_eq!(a.status, 200, "{}", a.body);
    let r = a.json();
    let choices = r["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 4, "{r}");
    let mut completion = 0;
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i, "{c}");
    }
    // Choice i is the script's turn i: the choices start in index order.
    let contents: Vec<&str> = choices
        .iter()
        .map(|c| c["message"]["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        contents,
        ["first answer", "second answer", "", "fourth answer"],
        "{r}"
    );
    assert_eq!(choices[0]["message"]["reasoning_content"], "one");
    let finishes: Vec<&str> = choices
        .iter()
        .map(|c| c["finish_reason"].as_str().unwrap())
        .collect();
    assert_eq!(finishes, ["stop", "stop", "length", "stop"]);
    // The scripted engine counts a piece as a token and a character of the prompt as one.
    let single = post(port, "/v1/chat/completions", &chat_body(1, json!({})));
    assert_eq!(single.status, 200, "{}", single.body);
    let single = single.json();
    assert_eq!(single["choices"].as_array().unwrap().len(), 1);
    assert_eq!(
        single["choices"][0]["message"]["content"],
        "the single answer"
    );
    let usage = &r["usage"];
    assert_eq!(
        usage["prompt_tokens"], single["usage"]["prompt_tokens"],
        "the prompt counts once: {usage}"
    );
    for c in &contents {
        completion += c.len();
    }
    assert!(
        usage["completion_tokens"].as_u64().unwrap() as usize >= completion / 4,
        "{usage}"
    );
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
    // One request through the door: one audit line with every choice's tokens.
    let file = std::fs::read_dir(&audit)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(
        lines[0]["completion_tokens"], usage["completion_tokens"],
        "{text}"
    );
    assert_eq!(lines[0]["prompt_tokens"], usage["prompt_tokens"], "{text}");
    assert_eq!(
        remote_common::metric(
            port,
            "lilypad:requests",
            &[("endpoint", "chat_completions"), ("code", "200")]
        ),
        2.0
    );
}

#[test]
fn a_stream_names_each_chunks_choice_and_ends_each_choice() {
    let dir = tempfile::tempdir().unwrap();
    let call = "Read it.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n</function>\n</tool_call>";
    let server = script_server(
        dir.path(),
        &["a\n</think>\n\nalpha", call, "CAP:gamma gamma gamma gamma"],
        &[],
    );
    let body = chat_body(
        3,
        json!({
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "Read", "parameters": {
                "type": "object", "properties": {"file_path": {"type": "string"}}}}}],
        }),
    );
    let a = post(server.port(), "/v1/chat/completions", &body);
    assert_eq!(a.status, 200, "{}", a.body);
    let events = events(&a.body);
    let mut content = vec![String::new(); 3];
    let mut calls = vec![0; 3];
    let mut finish: Vec<Option<String>> = vec![None; 3];
    let mut roles = 0;
    let usage = events.last().unwrap();
    assert_eq!(usage["choices"], json!([]), "the usage chunk comes last");
    for e in &events[..events.len() - 1] {
        let choices = e["choices"].as_array().unwrap();
        assert_eq!(choices.len(), 1, "one choice a chunk: {e}");
        let c = &choices[0];
        let i = c["index"].as_u64().unwrap() as usize;
        assert!(
            finish[i].is_none(),
            "choice {i} has a chunk after its end: {e}"
        );
        if c["delta"]["role"] == "assistant" {
            roles += 1;
        }
        content[i] += c["delta"]["content"].as_str().unwrap_or("");
        calls[i] += c["delta"]["tool_calls"].as_array().map_or(0, Vec::len);
        if let Some(f) = c["finish_reason"].as_str() {
            finish[i] = Some(f.to_string());
        }
    }
    assert_eq!(roles, 3);
    assert_eq!(content[0], "alpha");
    assert_eq!(calls, [0, 1, 0]);
    let finish: Vec<&str> = finish.iter().map(|f| f.as_deref().unwrap()).collect();
    assert_eq!(finish, ["stop", "tool_calls", "length"]);
    let u = &usage["usage"];
    assert!(u["completion_tokens"].as_u64().unwrap() > 3, "{u}");
}

#[test]
fn completions_answer_n_choices_of_one_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let server = script_server(dir.path(), &["uno", "dos", "tres"], &[]);
    let a = post(
        server.port(),
        "/v1/completions",
        &json!({"prompt": "count in Spanish:", "max_tokens": 100, "n": 3}),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let r = a.json();
    let texts: Vec<(u64, &str, &str)> = r["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["index"].as_u64().unwrap(),
                c["text"].as_str().unwrap(),
                c["finish_reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [(0, "uno", "stop"), (1, "dos", "stop"), (2, "tres", "stop")]
    );
    assert_eq!(
        r["usage"]["prompt_tokens"],
        "count in Spanish:".chars().count(),
        "the prompt counts once"
    );
}

#[test]
fn n_outside_the_bound_and_best_of_are_refused_with_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let script = remote_common::script(dir.path(), &["x"]);
    let server = serve_with_config(
        &["--engine", &format!("script:{}", script.display())],
        &[],
        "[serve]\nmax_n = 3\n",
    );
    let port = server.port();
    for (path, body, says) in [
        (
            "/v1/chat/completions",
            chat_body(4, json!({})),
            "from 1 to 3",
        ),
        (
            "/v1/chat/completions",
            chat_body(0, json!({})),
            "from 1 to 3",
        ),
        (
            "/v1/completions",
            json!({"prompt": "p", "n": 9}),
            "from 1 to 3",
        ),
        (
            "/v1/chat/completions",
            chat_body(2, json!({"best_of": 3})),
            "\"best_of\" is not supported",
        ),
        (
            "/v1/completions",
            json!({"prompt": "p", "best_of": 2}),
            "\"best_of\" is not supported",
        ),
    ] {
        let a = post(port, path, &body);
        assert_eq!(a.status, 400, "{body}: {}", a.body);
        let e = a.json();
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    // Nothing was generated: the one script turn is still there.
    let a = post(port, "/v1/completions", &json!({"prompt": "p", "n": 1}));
    assert_eq!(a.json()["choices"][0]["text"], "x", "{}", a.body);
}

/// A whole chat request for `n` choices sampled at temperature 1 with `seed`, each generating
/// exactly `max_tokens` tokens, with their ids.
fn sampled(port: u16, user: &str, n: usize, seed: u32, max_tokens: u32) -> Value {
    let a = post(
        port,
        "/v1/chat/completions",
        &json!({
            "messages": [{"role": "system", "content": "You are terse."},
                         {"role": "user", "content": user}],
            "max_tokens": max_tokens, "temperature": 1.0, "seed": seed, "n": n,
            "ignore_eos": true, "return_token_ids": true,
        }),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

/// Every choice after the first of `n` read only the last token of the `prompt` tokens (as
/// the server's log line of each says): the rest was in memory.
fn read_only_the_last_token(server: &remote_common::Peer, prompt: u64, n: usize) {
    // A choice's line is logged as its generation ends, which may come after its answer
    // reached the client.
    let line_of = |i: usize| {
        let needle = format!("choice {i}: TokenCap");
        server
            .log()
            .lines()
            .find(|l| l.contains(&needle))
            .map(str::to_string)
    };
    for i in 1..n {
        remote_common::wait_until(server, &format!("the log line of choice {i}"), || {
            line_of(i).is_some()
        });
        let line = line_of(i).expect("the line was waited for");
        assert!(
            line.contains(&format!("prompt {prompt} tokens ({} reused", prompt - 1)),
            "choice {i} read more than the prompt's last token: {line}"
        );
    }
}

/// The tiny model, three choices at once: each is generated, seeds differ per choice, the
/// prompt is counted once and read once (each choice after the first finds all of it but its
/// last token in memory). Tokens are not compared with single requests here: choices decoded
/// side by side share llama.cpp's batches, and its sums depend on a batch's make-up, so a
/// near tie may fall the other way (docs/remote.md, "n choices").
#[test]
fn tiny_model_choices_differ_by_seed_and_read_the_prompt_once() {
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    let port = server.port();
    let group = sampled(port, "three ways, please", 3, 11, 6);
    let choices = group["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3, "{group}");
    let ids: Vec<&Value> = choices.iter().map(|c| &c["token_ids"]).collect();
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i);
        assert_eq!(c["finish_reason"], "length");
        assert_eq!(c["token_ids"].as_array().unwrap().len(), 6, "{c}");
    }
    assert!(
        ids[0] != ids[1] || ids[1] != ids[2],
        "seeds differ per choice, so do the choices: {ids:?}"
    );
    let usage = &group["usage"];
    assert_eq!(usage["completion_tokens"], 18, "{usage}");
    assert_eq!(
        usage["prompt_tokens_details"]["cached_tokens"], 0,
        "{usage}"
    );
    read_only_the_last_token(&server, usage["prompt_tokens"].as_u64().unwrap(), 3);
}

/// More choices than the engine's sequences: the later ones wait for a sequence of the request
/// to be free and go back to the prompt in it (reading only its last token). With one
/// sequence every choice is decoded alone, as a single request is, so choice `i` is exactly
/// the reply of seed + `i`, and the prompt counts once.
#[test]
fn more_choices_than_sequences_are_the_seeds_replies_one_after_another() {
    let server = serve_with_engine_config(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
        "",
        "sequences = 1",
    );
    let port = server.port();
    let group = sampled(port, "five tries", 5, 40, 5);
    assert_eq!(group["usage"]["completion_tokens"], 25);
    let ids: Vec<&Value> = (0..5).map(|i| &group["choices"][i]["token_ids"]).collect();
    assert!(
        ids.windows(2).any(|w| w[0] != w[1]),
        "seeds differ per choice, so do the choices: {ids:?}"
    );
    for (i, expected) in ids.iter().enumerate() {
        let alone = sampled(port, "five tries", 1, 40 + i as u32, 5);
        assert_eq!(
            alone["usage"]["prompt_tokens"], group["usage"]["prompt_tokens"],
            "the prompt counts once"
        );
        assert_eq!(
            &&alone["choices"][0]["token_ids"], expected,
            "choice {i} is the reply with seed 40 + {i}"
        );
    }
    read_only_the_last_token(
        &server,
        group["usage"]["prompt_tokens"].as_u64().unwrap(),
        5,
    );
}

/// Two sequences for five choices: the pool hands each waiting choice a sequence of its
/// request as one frees up; every choice is whole and reads only the prompt's last token.
#[test]
fn more_choices_than_sequences_reuse_the_requests_sequences() {
    let server = serve_with_engine_config(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
        "",
        "sequences = 2",
    );
    let port = server.port();
    let group = sampled(port, "five tries", 5, 40, 5);
    assert_eq!(group["usage"]["completion_tokens"], 25);
    for i in 0..5 {
        let c = &group["choices"][i];
        assert_eq!(c["index"], i);
        assert_eq!(c["token_ids"].as_array().map(Vec::len), Some(5), "{c}");
    }
    read_only_the_last_token(
        &server,
        group["usage"]["prompt_tokens"].as_u64().unwrap(),
        5,
    );
}

/// A client that hangs up on a stream of several choices stops them all; the server holds no
/// generation afterwards and answers the next request.
#[test]
fn hanging_up_on_a_stream_of_choices_stops_every_choice() {
    use std::io::{Read, Write};
    let server = serve(
        &["--model", remote_common::tiny_model().to_str().unwrap()],
        &[],
    );
    let port = server.port();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let body = json!({
        "messages": [{"role": "user", "content": "go on for a long time"}],
        "max_tokens": 3000, "temperature": 1.0, "n": 3, "ignore_eos": true, "stream": true,
    })
    .to_string();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&seen).matches("data: ").count() < 12 {
        let k = s.read(&mut buf).unwrap();
        assert!(
            k > 0,
            "the stream ended early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..k]);
    }
    drop(s);
    // Every choice that started ends cancelled (a choice whose generation had not begun when
    // the client left never starts, and logs nothing); none runs on to its token cap; and the
    // server holds no request afterwards.
    remote_common::wait_until(&server, "the choices cancelled and nothing held", || {
        remote_common::metric(port, "lilypad:num_requests_running", &[]) == 0.0
            && remote_common::metric(port, "lilypad:num_requests_waiting", &[]) == 0.0
            && server.log().contains(": Cancelled")
    });
    let log = server.log();
    for i in 1..3 {
        let ended = log
            .lines()
            .find(|l| l.contains(&format!("choice {i}: ")) && !l.contains("moved to"));
        if let Some(line) = ended {
            assert!(
                line.contains(": Cancelled"),
                "choice {i} was not stopped: {line}"
            );
        }
    }
    let a = post(
        port,
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "still there?"}], "max_tokens": 3}),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}
