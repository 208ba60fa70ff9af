# shellcheck shell=bash
# What scripts/setup.sh decides, as functions of a root prefix, so that tests can run the
# decisions on fake trees: ROOT "" is this machine. Sourced, never run.

# setup_has_command ROOT NAME: NAME is an executable on ROOT's usual paths (on this machine:
# on PATH).
setup_has_command() {
  local root=$1 name=$2 d
  if [ -z "$root" ]; then
    command -v "$name" >/dev/null 2>&1
    return
  fi
  for d in usr/local/bin usr/bin bin usr/local/sbin usr/sbin sbin; do
    [ -x "$root/$d/$name" ] && return 0
  done
  return 1
}

# setup_has_libclang ROOT: a library bindgen (clang-sys) loads: `libclang.so` or a versioned
# `libclang-N.so`, in the directories clang-sys searches on Linux. `libclang-cpp` (the C++
# library, on many fresh machines as libclang-cpp14) is another library and does not count.
setup_has_libclang() {
  local root=$1 f base
  shopt -s nullglob
  for f in "$root"/usr/local/llvm*/lib*/libclang*.so \
           "$root"/usr/local/lib*/libclang*.so "$root"/usr/local/lib*/*/libclang*.so \
           "$root"/usr/local/lib*/*/*/libclang*.so \
           "$root"/usr/lib*/libclang*.so "$root"/usr/lib*/*/libclang*.so \
           "$root"/usr/lib*/*/*/libclang*.so; do
    base=${f##*/}
    case "$base" in
      libclang.so|libclang-[0-9]*.so) [ -e "$f" ] && { shopt -u nullglob; return 0; } ;;
    esac
  done
  shopt -u nullglob
  return 1
}

# setup_has_clang_headers ROOT: clang's own headers (stddef.h and friends), which bindgen
# needs to parse llama.cpp's headers; libclang-dev brings them (libclang-common-N-dev).
setup_has_clang_headers() {
  local root=$1 f
  for f in "$root"/usr/lib/llvm-*/lib/clang/*/include/stddef.h \
           "$root"/usr/lib/clang/*/include/stddef.h "$root"/usr/local/lib/clang/*/include/stddef.h; do
    [ -e "$f" ] && return 0
  done
  return 1
}

# setup_missing_packages ROOT: the Debian packages the build and the tests need that ROOT
# lacks, one per line.
setup_missing_packages() {
  local root=$1
  setup_has_command "$root" cmake || echo cmake
  setup_has_command "$root" ccache || echo ccache
  setup_has_command "$root" tmux || echo tmux
  setup_has_command "$root" git || echo git
  setup_has_command "$root" curl || echo curl
  if ! setup_has_command "$root" cc || ! setup_has_command "$root" c++ \
      || ! setup_has_command "$root" make; then
    echo build-essential
  fi
  setup_has_command "$root" pkg-config || echo pkg-config
  # bubblewrap contains the host sandbox's commands (read-only host, no network, secrets hidden).
  setup_has_command "$root" bwrap || echo bubblewrap
  if ! setup_has_libclang "$root" || ! setup_has_clang_headers "$root"; then
    echo libclang-dev
  fi
  # TLS roots for downloads (rustup, crates, test data).
  [ -e "$root/etc/ssl/certs/ca-certificates.crt" ] || echo ca-certificates
}
