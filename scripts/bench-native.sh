#!/usr/bin/env bash
# bench-native.sh: does building for this CPU's own instruction set move CPU decoding closer to
# the memory-bandwidth limit? Builds Lilypad in release twice: portable (the default build: Rust
# for the baseline x86-64 target, llama.cpp with GGML_NATIVE off and AVX2) and native
# (RUSTFLAGS="-C target-cpu=native", which also makes llama-cpp-sys-2 build llama.cpp with
# GGML_NATIVE, so AVX-512 where the CPU has it), then runs `lilypad bench decode` with each,
# one after the other, on the same model file (docs/PERFORMANCE.md, "CPU decode and the
# instruction set"). A native binary runs only on CPUs with the same extensions: the portable
# build stays the default.
#
# Usage: scripts/bench-native.sh [THREADS]
# Environment: LILYPAD_NATIVE_TARGET (default ~/.cache/lilypad-native/target), CARGO_TARGET_DIR
#   (the portable build's, default ./target), TOKENS (default 64), VOCAB_DIR (real vocabulary).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
portable_dir=${CARGO_TARGET_DIR:-$PWD/target}
native_dir=${LILYPAD_NATIVE_TARGET:-$HOME/.cache/lilypad-native/target}
echo "bench-native: portable build in $portable_dir" >&2
cargo build --release --target-dir "$portable_dir"
echo "bench-native: native build in $native_dir (a first build compiles llama.cpp again)" >&2
RUSTFLAGS="${RUSTFLAGS:-} -C target-cpu=native" cargo build --release --target-dir "$native_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vocab=()
[ -n "${VOCAB_DIR:-}" ] && vocab=(--vocab-dir "$VOCAB_DIR")
# Each run writes the same deterministic 4B-shaped model into its own temporary directory.
for build in portable native; do
  bin="$portable_dir/release/lilypad"
  [ "$build" = native ] && bin="$native_dir/release/lilypad"
  echo "== $build: $("$bin" --version)" >&2
  "$bin" --threads "$threads" bench decode --decode-tokens "${TOKENS:-64}" "${vocab[@]}" \
    | tee "$work/$build.txt"
done
