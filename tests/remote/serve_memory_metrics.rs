//! `/metrics` of `lilypad serve` over the in-process engine (tiny model) reports how full the
//! engine's memory is: `lilypad:kv_cache_usage_perc` (share of the cache in use) and
//! `lilypad:conversations_parked` (a conversation moved to host memory to free the one
//! sequence for another).

use crate::remote_common::{self, http_request, metric, serve_with_engine_config};

#[test]
fn memory_gauges_follow_the_engine() {
    let model = remote_common::tiny_model().display().to_string();
    let server = serve_with_engine_config(&["--model", &model], &[], "", "sequences = 1");
    let port = server.port();
    let ask = |task: &str| {
        let body = serde_json::json!({
            "messages": [{"role": "system", "content": "You are terse."},
                         {"role": "user", "content": task}],
            "max_tokens": 4,
        });
        let a = http_request(port, "POST", "/v1/chat/completions", &[], &body.to_string());
        assert_eq!(a.status, 200, "{}", a.body);
    };
    ask("task A: list files");
    let usage = metric(
        port,
        "lilypad:kv_cache_usage_perc",
        &[("model_name", "tiny-chat")],
    );
    assert!(usage > 0.0 && usage <= 1.0, "{usage}");
    assert_eq!(metric(port, "lilypad:conversations_parked", &[]), 0.0);
    // Another conversation takes the only sequence: A's memory is parked.
    ask("task B: run the tests");
    assert_eq!(
        metric(port, "lilypad:conversations_parked", &[]),
        1.0,
        "{}",
        server.log()
    );
}
