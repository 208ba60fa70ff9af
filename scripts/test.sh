#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what the tests need, then runs them.
# This is the README's test command and what CI (.ci/run) calls.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets -- --test-threads=2
