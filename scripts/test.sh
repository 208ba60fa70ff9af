#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what the tests need, then runs them.
# This is the README's test command and what CI (.ci/run) calls.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
# Tests that need fetched data or a real engine fail instead of skipping.
export LILYPAD_TEST_STRICT=1
eval "$(scripts/fetch-test-data.sh)"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets -- --test-threads=2
