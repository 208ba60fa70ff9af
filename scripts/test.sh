#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what the tests need, then runs them.
# This is the README's test command and what CI (.ci/run) calls.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# One compile of llama.cpp's library for cargo and llama.cpp's tools (see the file).
# shellcheck source=scripts/ccache-env.sh
. scripts/ccache-env.sh
# Tests that need fetched data or a real engine fail instead of skipping.
export LILYPAD_TEST_STRICT=1
eval "$(scripts/fetch-test-data.sh)"
# Real engines for the sandbox tests (tests/sandbox/): a
# private Docker engine and a single-node Kubernetes on 127.0.0.1, built in the background
# while the code compiles (the first Kubernetes build takes ~10 min; it is cached in
# /var/cache/lilypad-k8s). Whatever this script started is stopped again on exit.
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
# fd: the baseline of the Glob bench (tests/cli/bench_cli.rs).
if ! command -v fdfind >/dev/null && ! command -v fd >/dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq fd-find \
    || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq fd-find; }
fi
# Python with venv (Debian splits ensurepip, which venv needs, into python3-venv), for the Python
# peers and the W&B client below.
if ! python3 -c "import ensurepip" >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv \
    || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv; }
fi
# The official W&B client, for the offline test of `lilypad run --wandb` (about 20 s, cached).
eval "$(scripts/fetch-test-wandb.sh)"
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
k8s_was_up="" docker_was_up="" registry_was_up="" k8s_pid=""
running /tmp/lilypad-k8s/apiserver.pid && k8s_was_up=1
running /tmp/lilypad-docker/dockerd.pid && docker_was_up=1
running /tmp/lilypad-registry/registry.pid && registry_was_up=1
engines_down() {
  [ -z "$k8s_pid" ] || wait "$k8s_pid" 2>/dev/null || true   # never under a running start
  [ -n "$registry_was_up" ] || $SUDO scripts/registry-down.sh >/dev/null 2>&1 || true
  [ -n "$k8s_was_up" ] || $SUDO scripts/k8s-down.sh >/dev/null 2>&1 || true
  [ -n "$docker_was_up" ] || $SUDO scripts/docker-down.sh >/dev/null 2>&1 || true
}
trap engines_down EXIT
mkdir -p target
# Python peers of the remote-engine tests (the `openai` client, llama-cpp-python's server), cached
# outside the clone; the first build of llama-cpp-python takes 10-15 min (see docs/remote.md),
# so it runs in the background too.
(nice scripts/fetch-test-python.sh >target/python-peers.env 2>target/python-peers.log) &
py_pid=$!
# The engine with the bridge and clamp Kubernetes needs, plus a Debian image with bash; and a
# registry on 127.0.0.1 the image-pull test pushes to and pulls from (tests/sandbox/sandbox_pull.rs).
(nice $SUDO scripts/docker-up.sh --bridge --oom-clamp --debian \
  && nice $SUDO scripts/registry-up.sh >target/registry.env && nice $SUDO scripts/k8s-up.sh) \
  >target/engines-up.log 2>&1 &
k8s_pid=$!
export DOCKER_HOST=unix:///var/run/docker.sock
export LILYPAD_TEST_KUBECONFIG=/tmp/lilypad-k8s/sandbox.kubeconfig
export LILYPAD_TEST_IMAGE=lilypad-sandbox:busybox LILYPAD_TEST_BASH_IMAGE=lilypad-sandbox:debian
export LILYPAD_REQUIRE_DOCKER=1 LILYPAD_REQUIRE_KUBE=1
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# llama.cpp's own llama-perplexity (the peer of `lilypad quant-check`, tests/model/quant.rs),
# llama-bench, llama-batched-bench and llama-server (the baselines of `lilypad bench`,
# tests/cli/bench_cli.rs), built from the llama.cpp Lilypad links and cached in
# ~/.cache/lilypad-ci/llama-tools, in the background while the tests compile. Started only now:
# clippy has run llama-cpp-sys-2's build, so the tools take its flags and ccache hands them the
# library's objects (scripts/ccache-env.sh); only the tools' own files compile.
(nice scripts/build-llama-tools.sh >target/llama-tools.env 2>target/llama-tools.log) &
tools_pid=$!
# The test binaries compile meanwhile, so that the engines, the Python peers and the tools
# building in the background overlap with the longest step of a cold run.
cargo test --all-targets --no-run
wait "$k8s_pid" || { tail -n 40 target/engines-up.log >&2; echo "test: starting the engines failed" >&2; exit 1; }
eval "$(cat target/registry.env)"
wait "$py_pid" || { tail -n 40 target/python-peers.log >&2; echo "test: installing the Python peers failed" >&2; exit 1; }
eval "$(cat target/python-peers.env)"
wait "$tools_pid" || { tail -n 40 target/llama-tools.log >&2; echo "test: building llama.cpp's tools failed" >&2; exit 1; }
eval "$(cat target/llama-tools.env)"
cargo test --all-targets -- --test-threads=2
