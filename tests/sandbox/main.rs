//! Integration tests of the sandboxes: the tool formats and the attack cases of docs/testing.md on
//! the host sandbox, a real Docker engine (`scripts/docker-up.sh`) and a real Kubernetes
//! cluster (`scripts/k8s-up.sh`). Without an engine its tests skip loudly, unless
//! `LILYPAD_REQUIRE_DOCKER=1` / `LILYPAD_REQUIRE_KUBE=1`. The attack tests of the three kinds
//! hold [`sandbox_suite::exclusive`], so they never overlap on the one machine.

#![expect(
    unreachable_pub,
    reason = "the helpers are `pub` to the modules of this one binary, which is all a test crate has"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test code throughout: clippy.toml's allow-unwrap-in-tests covers only #[test] functions, not the helpers beside them"
)]

#[path = "../common/mod.rs"]
mod common;
mod sandbox_docker;
mod sandbox_host;
mod sandbox_image;
mod sandbox_kube;
mod sandbox_pull;
mod sandbox_suite;
mod tasks_filter;
mod tasks_host;
mod tasks_mine;
mod tasks_mutate;
