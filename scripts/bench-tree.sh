#!/usr/bin/env bash
# bench-tree.sh: fetch a large real source tree for `lilypad bench tools` (Glob against fd):
# the Linux kernel sources as Debian packages them (linux-source-6.1, about 140 MB download,
# 1.3 GB and ~80,000 files unpacked), into a cache outside the clone, and print its path.
# Also installs fd (Debian's fd-find) when missing. Idempotent: a second run only prints.
#
# Usage: scripts/bench-tree.sh [CACHE_DIR]   (default ~/.cache/lilypad-bench)
set -euo pipefail
cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-bench}
pkg=linux-source-6.1
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v fdfind >/dev/null && ! command -v fd >/dev/null; then
  $SUDO apt-get install -y fd-find >&2
fi
tree="$cache/$pkg"
if [ ! -f "$tree/.complete" ]; then
  mkdir -p "$cache"
  rm -rf "$tree" "$cache/deb"
  mkdir -p "$cache/deb" "$tree"
  (cd "$cache/deb" && apt-get download "$pkg" >&2)
  dpkg-deb --fsys-tarfile "$cache"/deb/"$pkg"_*.deb \
    | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' \
    | tar -xJ -C "$tree" --strip-components=1
  # Debian's packaging adds "ignore everything at the top level" to the kernel's .gitignore;
  # drop those two rules so the tree is upstream's (a session would otherwise copy nothing).
  sed -i -e '\|^/\*$|d' -e '\|^!/debian/$|d' "$tree/.gitignore"
  # A git repository without commits, so both walkers read the tree's .gitignore files alike.
  git -C "$tree" init -q
  rm -rf "$cache/deb"
  touch "$tree/.complete"
fi
echo "$tree"
