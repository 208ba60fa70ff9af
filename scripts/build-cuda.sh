#!/usr/bin/env bash
# build-cuda.sh: builds Lilypad with GPU offload through CUDA on a machine without a GPU or a
# CUDA install, from NVIDIA's toolkit wheels on PyPI, for the data-centre GPUs the project
# targets (A100 sm_80, H100/H200 sm_90, B200 sm_100). The result is a directory holding the
# `lilypad` binary and llama.cpp's shared libraries beside it; the binary's `doctor` is run at
# the end and must say that CUDA is compiled in and that no device was found.
#
# Usage: scripts/build-cuda.sh
# Environment:
#   CUDA_ARCHS   CMake CUDA architectures (default "80-real;90-real;100-real")
#   LILYPAD_CUDA_CACHE   where the wheels, the toolkit, the cargo target directory and the
#                        ccache live (default ~/.cache/lilypad-cuda); outside the clone
#   LILYPAD_CUDA_DIST    the output directory (default dist-cuda/ in the repository, ignored
#                        by git, where scripts/bench-gpu.sh looks for it)
# Prints `LILYPAD_CUDA_DIST=<dir>` on stdout at the end. One architecture (CUDA_ARCHS=90-real)
# makes a smaller libggml-cuda.so, for carrying the directory to a GPU machine.
#
# Why CUDA 13 and not 12.9: PyPI's CUDA 12 compiler wheels (nvidia-cuda-nvcc-cu12, every
# version from 12.0 to 12.9) hold ptxas, libnvvm and headers but not the `nvcc` driver, `cicc`,
# `fatbinary` or `nvlink`, so no CUDA 12 toolkit can be assembled from PyPI. The CUDA 13 wheels
# (nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-runtime, nvidia-cuda-cccl,
# nvidia-cublas) unpack into one tree, nvidia/cu13, that is a complete toolkit. A CUDA 13.0
# binary needs an NVIDIA driver of the 580 series or later on the GPU machine.
#
# How it links: PyPI ships cuBLAS only as shared libraries, and llama-cpp-sys-2 links CUDA
# statically unless llama.cpp itself is built as shared libraries, so the build sets
# LLAMA_BUILD_SHARED_LIBS=1: libllama.so and libggml*.so sit beside the binary (found through
# an $ORIGIN run path), and libggml-cuda.so needs libcudart.so.13, libcublas.so.13 and
# libcublasLt.so.13 at run time (the toolkit's lib/ here; on the GPU machine its own CUDA 13
# libraries or a copy of these). The `cuda-no-vmm` feature leaves the driver library out of
# the link, so that the binary starts where there is no driver at all.
set -euo pipefail
trap 'echo "build-cuda: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
repo=$PWD
cache="${LILYPAD_CUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-cuda}"
archs="${CUDA_ARCHS:-80-real;90-real;100-real}"
# CUDA 13.0 Update 2, with the cuBLAS that PyPI pairs with CUDA 13.0.
wheels=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cublas==13.1.2.11)
toolkit="$cache/toolkit-13.0.2"
cuda="$toolkit/nvidia/cu13"
started=$(date +%s)

# 1. The toolkit: the wheels unpacked into one tree (Python's zipfile: no unzip needed).
if [ ! -f "$toolkit/.complete" ]; then
  mkdir -p "$cache/wheels"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "${wheels[@]}" -d "$cache/wheels" >&2
  rm -rf "$toolkit" && mkdir -p "$toolkit"
  for spec in "${wheels[@]}"; do
    name=${spec%%==*}; version=${spec##*==}
    whl=$(ls "$cache/wheels/${name//-/_}-$version-"*.whl)
    python3 -m zipfile -e "$whl" "$toolkit"
  done
  # Wheels carry no file modes; the layout CMake's FindCUDAToolkit and nvcc.profile expect:
  # lib64 beside lib, and unversioned names for the linker.
  chmod +x "$cuda"/bin/* "$cuda"/nvvm/bin/*
  ln -sfn lib "$cuda/lib64"
  for l in cudart cublas cublasLt; do ln -sfn "lib$l.so.13" "$cuda/lib/lib$l.so"; done
  touch "$toolkit/.complete"
fi
export CUDA_PATH="$cuda" CUDAToolkit_ROOT="$cuda" CUDACXX="$cuda/bin/nvcc" PATH="$cuda/bin:$PATH"
"$CUDACXX" --version | tail -n 2 >&2

# 2. Lilypad with `cuda-no-vmm`, its own target directory and ccache (ccache caches nvcc's
# compiles too), under nice: a second run with nothing changed returns in seconds.
export CARGO_TARGET_DIR="$cache/target" CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}"
# shellcheck source=scripts/ccache-env.sh
. scripts/ccache-env.sh
# llama.cpp's CMake reads CMAKE_CUDA_ARCHITECTURES from CUDAARCHS when it is not set.
export CUDAARCHS="$archs" LLAMA_BUILD_SHARED_LIBS=1 CMAKE_CUDA_COMPILER_LAUNCHER=ccache
# DT_RPATH, not RUNPATH (--disable-new-dtags): it also serves the libraries' own dependencies
# (libggml.so.0 needs libggml-cpu.so.0 and libggml-cuda.so.0 from the same directory).
export RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-Wl,--disable-new-dtags,-rpath,\$ORIGIN"
# llama-cpp-sys-2 links llama.cpp's libraries into release/ (and deps/, examples/) by name;
# when the build directory changes, the links from the last build dangle and its build script
# fails on them ("File exists"): they are only copies, so they go first.
for d in "$CARGO_TARGET_DIR"/release "$CARGO_TARGET_DIR"/release/deps "$CARGO_TARGET_DIR"/release/examples; do
  rm -f "$d"/libllama*.so* "$d"/libggml*.so*
done
echo "build-cuda: building for CUDA architectures $archs" >&2
nice -n 19 cargo build --release --locked --features cuda-no-vmm >&2

# 3. The result: the binary and llama.cpp's libraries in one directory.
dist="${LILYPAD_CUDA_DIST:-$repo/dist-cuda}"
mkdir -p "$dist" && rm -f "$dist"/lilypad "$dist"/lib*.so*
cp "$CARGO_TARGET_DIR/release/lilypad" "$dist/"
# llama.cpp's libraries under the names the binary asks for (libllama.so.0, ...), from the
# crate's build directory (the links cargo leaves in release/ point at files it does not copy).
libdir=$(dirname "$(ls -t "$CARGO_TARGET_DIR"/release/build/llama-cpp-sys-2-*/out/lib/libllama.so.0 | head -n1)")
for f in "$libdir"/lib*.so.0; do cp -L "$f" "$dist/"; done
elapsed=$(( $(date +%s) - started ))

# 4. Proof that it runs here, where there is no GPU: doctor loads every library and asks
# CUDA for its devices.
report=$(cd "$repo" && LD_LIBRARY_PATH="$cuda/lib" "$dist/lilypad" doctor 2>&1 || true)
echo "$report" | grep -E "gpu offload|device" >&2 || true
if ! echo "$report" | grep -q "gpu offload     compiled in (cuda)"; then
  echo "build-cuda: the binary's doctor does not report CUDA compiled in:" >&2
  echo "$report" >&2
  exit 1
fi
echo "build-cuda: built in ${elapsed}s; sizes:" >&2
du -sh "$dist"/* | sort -h >&2
echo "build-cuda: libggml-cuda.so.0 needs at run time: $(readelf -d "$dist/libggml-cuda.so.0" | sed -n 's/.*NEEDED.*\[\(lib\(cudart\|cublas\)[^]]*\)\].*/\1/p' | tr '\n' ' ')" >&2
echo "LILYPAD_CUDA_DIST=$dist"
