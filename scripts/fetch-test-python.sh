#!/usr/bin/env bash
# Installs the Python peers of the remote-engine tests (tests/remote/, `cargo test --test remote`)
# into a virtual environment cached outside the clone, once: the official `openai` client and
# llama-cpp-python's OpenAI-compatible server (a third-party server for the same tiny GGUF),
# both from PyPI; and the official `huggingface_hub` client, which keeps the mock Hub of the
# `pull` tests (tests/cli/hub_pull.rs) honest. llama-cpp-python compiles llama.cpp from
# source the first time (about 8.5 CPU-minutes: some 5 minutes on two idle cores); later runs
# find the environment and return at once. Prints an `export` line for the test command to
# evaluate; on failure it prints nothing to stdout and the tests that need the peers
# fail under LILYPAD_TEST_STRICT=1.
set -euo pipefail
cache="${LILYPAD_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-test}"
openai_version=3.51.0
llama_cpp_python_version=0.3.36
venv="$cache/py-openai-$openai_version-lcp-$llama_cpp_python_version"
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "openai==$openai_version" >&2
  # Only the library: no llava/mtmd, tests, examples or tools; ccache when available.
  launcher=""
  if command -v ccache >/dev/null; then
    launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  fi
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=ON $launcher" \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    nice "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "llama-cpp-python[server]==$llama_cpp_python_version" >&2
  touch "$venv/.complete"
fi
# Added after the environment was first made, so installed on its own (no rebuild of the rest).
huggingface_hub_version=2.4.0
if ! "$venv/bin/python" -c "import huggingface_hub, sys; sys.exit(huggingface_hub.__version__ != '$huggingface_hub_version')" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "huggingface_hub==$huggingface_hub_version" >&2
fi
echo "export LILYPAD_TEST_PYTHON='$venv/bin/python'"
