#!/usr/bin/env bash
# Installs the system packages Lilypad needs to build (Debian/Ubuntu), only if missing.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ccache >/dev/null || need+=(ccache)
command -v tmux >/dev/null || need+=(tmux)
command -v git >/dev/null || need+=(git)
command -v cc >/dev/null || need+=(build-essential)
# bindgen needs libclang itself and clang's headers: libclang-dev brings both. The check names
# libclang.so exactly, since libclang-cpp (another library, on many fresh machines) also matches
# a looser pattern.
ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || need+=(libclang-dev)
command -v curl >/dev/null || need+=(curl)
# bubblewrap contains the host sandbox's commands (read-only host, no network, secrets hidden).
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! command -v cargo >/dev/null; then
  echo "setup: installing Rust with rustup" >&2
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy -c rustfmt
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
