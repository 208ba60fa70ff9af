#!/usr/bin/env bash
# Builds llama.cpp's own tools from the llama.cpp that Lilypad links (the tree inside the
# llama-cpp-sys-2 crate source), for the peer checks: `llama-perplexity` (the peer of
# `lilypad quant-check`), and `llama-bench`, `llama-batched-bench` and `llama-server` (the
# baselines of `lilypad bench`, docs/PERFORMANCE.md). One cmake build tree for all of them.
# Usage: scripts/build-llama-tools.sh [TARGET...] (default: all four).
#
# The crate ships llama.cpp's library, ggml and common/ but not tools/*: the tools' own sources
# come from the llama-cpp-python sdist on PyPI (the version scripts/fetch-test-python.sh
# installs), and are compiled against the crate's library sources with the build type and
# instruction set of Lilypad's own llama.cpp build (read from its CMakeCache.txt when a cargo
# build exists, else the crate's defaults: Release, GGML_NATIVE off). Run it after a cargo build
# (scripts/test.sh does, after clippy): the library's objects then come from ccache
# (scripts/ccache-env.sh) and only the tools compile. Cached outside the clone
# (~/.cache/lilypad-ci/llama-tools) with ccache, under `nice`; a second run returns at once.
# Prints `export LILYPAD_LLAMA_TOOLS_DIR=...` (the directory of the binaries) for the test
# command to evaluate; on failure prints nothing to stdout.
set -euo pipefail
trap 'echo "build-llama-tools: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
targets=("$@")
all_targets=(llama-perplexity llama-bench llama-batched-bench llama-server)
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
lcp_version=0.3.36
sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/[^0-9.]/,""); print}' Cargo.lock)
[ -n "$sys_version" ] || { echo "build-llama-tools: llama-cpp-sys-2 not in Cargo.lock" >&2; exit 1; }
cache="${LILYPAD_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-ci}/llama-tools"
out="$cache/sys-$sys_version-lcp-$lcp_version"
bin="$out/build/bin"
done_all=1
for t in "${targets[@]}"; do [ -x "$bin/$t" ] || done_all=""; done
if [ -z "$done_all" ]; then
  started=$(date +%s)
  # Not unpacked yet on a fresh machine (the background start of scripts/test.sh runs before
  # any cargo build): `|| true`, or pipefail would end the script here without a word.
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version"/llama.cpp 2>/dev/null | head -1 || true)
  if [ -z "$src" ]; then
    cargo fetch --quiet >&2
    src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version"/llama.cpp | head -1)
  fi
  # The tools' sources, from the sdist (only tools/ is unpacked).
  tools="$out/tools-src"
  if [ ! -f "$tools/.complete" ]; then
    mkdir -p "$out/download"
    sdist="$out/download/llama_cpp_python-$lcp_version.tar.gz"
    [ -f "$sdist" ] || python3 -m pip download --quiet --no-deps --no-binary :all: \
      --disable-pip-version-check "llama-cpp-python==$lcp_version" -d "$out/download" >&2
    rm -rf "$tools" "$out/unpack" && mkdir -p "$out/unpack"
    tar -xzf "$sdist" -C "$out/unpack" "llama_cpp_python-$lcp_version/vendor/llama.cpp/tools"
    mv "$out/unpack/llama_cpp_python-$lcp_version/vendor/llama.cpp/tools" "$tools"
    rm -rf "$out/unpack"
    touch "$tools/.complete"
  fi
  # Lilypad's own llama.cpp build settings, when cargo has built it.
  settings=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF)
  target_dir="${CARGO_TARGET_DIR:-target}"
  cache_file=$(ls -t "$target_dir"/*/build/llama-cpp-sys-2-*/out/build/CMakeCache.txt 2>/dev/null | head -1 || true)
  if [ -n "$cache_file" ]; then
    settings=(-DBUILD_SHARED_LIBS=OFF)
    while IFS= read -r line; do settings+=("-D$line"); done < <(
      grep -E '^(CMAKE_BUILD_TYPE|CMAKE_C_FLAGS|CMAKE_CXX_FLAGS|GGML_(NATIVE|AVX|AVX2|AVX512|AVX512_BF16|AVX512_VBMI|AVX512_VNNI|AVX_VNNI|BMI2|F16C|FMA|SSE42|OPENMP|LLAMAFILE|CPU_REPACK)):' "$cache_file")
  fi
  # Every tool's directory is configured whatever the targets asked for, so that a run for one
  # tool keeps the others' build rules (one build tree, one cache).
  tool_dirs=$(printf '%s\n' "${all_targets[@]}" "${targets[@]}" | sed -e 's/^llama-//' -e 's/^batched-bench$/batched-bench/' \
    -e 's/^bench$/llama-bench/' | sort -u | paste -sd';')
  # With ccache, the library's objects come from cargo's build of the same sources with the
  # same flags (scripts/ccache-env.sh says how), so only the tools' own files compile here.
  launcher=()
  if command -v ccache >/dev/null; then
    # shellcheck source=scripts/ccache-env.sh
    . scripts/ccache-env.sh
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # The build tree belongs to one source directory: the wrapper is copied into the cache so that
  # every clone uses the same one (a tree configured from another path is configured afresh;
  # ccache keeps that cheap).
  mkdir -p "$out/wrapper"
  cp scripts/llama-tools/CMakeLists.txt "$out/wrapper/CMakeLists.txt"
  if [ -f "$out/build/CMakeCache.txt" ] &&
    ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$out/wrapper" "$out/build/CMakeCache.txt"; then
    rm -rf "$out/build/CMakeCache.txt" "$out/build/CMakeFiles"
  fi
  # LC_ALL=C as cargo's cc crate sets it for every compile: ccache hashes it.
  LC_ALL=C nice cmake -S "$out/wrapper" -B "$out/build" "${settings[@]}" "${launcher[@]}" \
    -DLLAMA_SRC="$src" -DTOOLS_SRC="$tools" -DLILYPAD_TOOLS="$tool_dirs" \
    -DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$bin" >&2
  LC_ALL=C nice cmake --build "$out/build" --target "${targets[@]}" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" >&2
  echo "build-llama-tools: built ${targets[*]} in $(( $(date +%s) - started )) s" >&2
fi
echo "export LILYPAD_LLAMA_TOOLS_DIR='$bin'"
