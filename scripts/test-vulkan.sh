#!/usr/bin/env bash
# GPU offload exercised on a machine without a GPU: builds Lilypad with `--features vulkan`
# and runs the engine's model tests on Mesa's software Vulkan device (lavapipe), every layer
# offloaded (tests/model/offload.rs: the same greedy tokens as the CPU, the device listed with
# its memory), then `lilypad doctor` on the tiny model, which must report the layers offloaded.
# Installs what the Vulkan build needs (libvulkan-dev, glslc, glslang-tools, spirv-headers,
# mesa-vulkan-drivers) when missing, and newer Vulkan headers (see below). The build has its own cached target directory
# (~/.cache/lilypad-vk/target; llama.cpp's objects are shared with the CPU build through
# ccache): the first build compiles llama.cpp's Vulkan shaders and takes a while; a second run
# is quick. Not part of scripts/test.sh (see docs/PERFORMANCE.md for how long it takes).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
for p in libvulkan-dev glslc glslang-tools spirv-headers mesa-vulkan-drivers; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "test-vulkan: installing ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" \
    || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"; }
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}"
# Debian bookworm's Vulkan headers (1.3.239) are older than the vendored llama.cpp's Vulkan
# backend needs (it uses VK_EXT_layer_settings). The headers alone are taken from Debian
# trixie's libvulkan-dev (downloaded with a private package list, never installed), and the
# build links against this system's own Vulkan loader: an SDK directory in the cache,
# pointed at by VULKAN_SDK, as llama.cpp's CMake expects one.
sdk="$cache/lilypad-vk/sdk"
if [ ! -f "$sdk/.complete" ]; then
  rm -rf "$sdk" && mkdir -p "$sdk/lib" "$sdk/bin" "$sdk/download/lists/partial"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    > "$sdk/download/trixie.sources"
  apt_private=(-o "Dir::Etc::sourcelist=$sdk/download/trixie.sources" -o Dir::Etc::sourceparts=-
    -o "Dir::State::Lists=$sdk/download/lists" -o "Dir::Cache=$sdk/download/cache")
  mkdir -p "$sdk/download/cache/archives/partial"
  $SUDO apt-get update -qq "${apt_private[@]}"
  (cd "$sdk/download" && $SUDO apt-get download -qq "${apt_private[@]}" libvulkan-dev)
  dpkg-deb -x "$sdk"/download/libvulkan-dev_*.deb "$sdk/download/unpacked"
  cp -r "$sdk/download/unpacked/usr/include" "$sdk/include"
  ln -s "$(ls /usr/lib/*/libvulkan.so.1 | head -1)" "$sdk/lib/libvulkan.so"
  ln -s "$(command -v glslc)" "$sdk/bin/glslc"
  ln -s "$(command -v glslangValidator)" "$sdk/bin/glslangValidator"
  touch "$sdk/.complete"
fi
export VULKAN_SDK="$sdk"
export CARGO_TARGET_DIR="${LILYPAD_VK_TARGET_DIR:-$cache/lilypad-vk/target}"
export CCACHE_DIR="${CCACHE_DIR:-$cache/lilypad-ci/ccache}"
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
started=$(date +%s)
cargo build --features vulkan --bin lilypad --test model
echo "test-vulkan: built in $(( $(date +%s) - started )) s" >&2
# Only the software device: the tests must not depend on a real GPU being there. llama.cpp
# skips devices of the CPU type unless they are named (GGML_VK_VISIBLE_DEVICES), and
# lavapipe is one.
export VK_ICD_FILENAMES="${VK_ICD_FILENAMES:-$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -1)}"
export GGML_VK_VISIBLE_DEVICES="${GGML_VK_VISIBLE_DEVICES:-0}"
cargo test --features vulkan --test model -- --test-threads=1 offload engine:: mtp::
bin="$CARGO_TARGET_DIR/debug/lilypad"
tiny=$(mktemp -d)/tiny.gguf
trap 'rm -rf "$(dirname "$tiny")"' EXIT
"$bin" tiny-model "$tiny" >/dev/null
report=$("$bin" --model "$tiny" doctor 2>&1 || true)
echo "$report"
grep -q "gpu offload     compiled in" <<<"$report" \
  || { echo "test-vulkan: doctor does not see the Vulkan build" >&2; exit 1; }
grep -Eq "gpu layers +(all )?[1-9]" <<<"$report" \
  || { echo "test-vulkan: doctor reports no layer offloaded" >&2; exit 1; }
echo "test-vulkan: passed in $(( $(date +%s) - started )) s" >&2
