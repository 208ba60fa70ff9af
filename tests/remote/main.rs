//! Integration tests of the endpoint engine and `lilypad serve`, over 127.0.0.1: `lilypad
//! serve` as a child process (tiny model or scripted engine), loopback sockets that answer with
//! exact bytes, and the Python peers of `scripts/fetch-test-python.sh` (the `openai` client,
//! llama-cpp-python's server), which skip loudly when absent unless `LILYPAD_TEST_STRICT=1`. And
//! one test on the Kubernetes cluster of scripts/k8s-up.sh (`serve_kube`, the manifests of
//! deploy/kubernetes/ with `lilypad serve` in a pod).

#![expect(
    unreachable_pub,
    reason = "the helpers are `pub` to the modules of this one binary, which is all a test crate has"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code throughout: clippy.toml's allow-unwrap-in-tests covers only #[test] functions, not the helpers beside them"
)]

mod remote_agent;
mod remote_common;
mod remote_errors;
mod remote_llama_cpp_python;
mod remote_serve;
mod serve_audit;
mod serve_choices;
mod serve_cli;
mod serve_door;
mod serve_hangups;
mod serve_keys;
mod serve_kube;
mod serve_manifests;
mod serve_memory_metrics;
mod serve_openai;
mod serve_soak;
mod serve_tokens;
