#!/usr/bin/env bash
# Installs the system packages Lilypad needs to build (Debian/Ubuntu), only if missing, and
# Rust with rustup if there is no cargo. What counts as missing is decided in
# scripts/setup-lib.sh (tested on fake trees by tests/pure/setup_script.rs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/setup-lib.sh
. "$here/setup-lib.sh"
mapfile -t need < <(setup_missing_packages "")
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
