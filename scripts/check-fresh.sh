#!/usr/bin/env bash
# Proves the README's first command from nothing: in a container made from a bare Debian
# bookworm rootfs (debootstrap minbase, nothing added), with only the Rust toolchain and the
# ccache directory mounted, it runs `scripts/setup.sh`, the release build, and `lilypad demo`
# in a tmux pane long enough to see the interface start.
#
# Needs: a Docker engine (scripts/docker-up.sh) and debootstrap; the container uses the host's
# network (apt and crates.io). The committed tree (HEAD) is what is built, as a clone has it.
# Takes a long time on 2 cores (the whole release build took 43 min here, loaded); run it before
# submitting any change to the setup or the build. Exit status 0: the demo started.
#
# Environment: LILYPAD_FRESH_CACHE (default /var/cache/lilypad-fresh, holds the rootfs image
# tarball), CCACHE_DIR (default ~/.cache/lilypad-ci/ccache), DEBIAN_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${LILYPAD_FRESH_CACHE:-/var/cache/lilypad-fresh}
ccache_dir=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-ci/ccache}
image=lilypad-fresh:bookworm
log() { echo "check-fresh: $*" >&2; }
mkdir -p "$cache" "$ccache_dir"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  if [ ! -s "$cache/rootfs.tar" ]; then
    root=$(mktemp -d "$cache/root.XXXXXX")
    log "debootstrap bookworm minbase (a bare system), takes minutes"
    debootstrap --variant=minbase bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      >"$cache/debootstrap.log" 2>&1 || { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
    tar -C "$root" --numeric-owner -cf "$cache/rootfs.tar.tmp" .
    mv "$cache/rootfs.tar.tmp" "$cache/rootfs.tar"
    rm -rf --one-file-system "$root"
  fi
  docker import "$cache/rootfs.tar" "$image" >/dev/null
fi
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git archive HEAD | tar -x -C "$src"
toolchain=$(rustc --print sysroot)
# The host's CA bundle, for networks whose TLS is re-signed by a local authority (as on this
# project's machines); the bare system's own bundle does not know it.
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
ca_args=()
if [ -s "$ca" ]; then
  ca_args=(-v "$ca:/etc/ssl/host-ca.crt:ro" -e CARGO_HTTP_CAINFO=/etc/ssl/host-ca.crt
           -e CURL_CA_BUNDLE=/etc/ssl/host-ca.crt)
fi
log "building $(git rev-parse --short HEAD) in a bare bookworm container"
# Inside: the README's first command, with the demo under `script` (a pseudo-terminal) for a
# few seconds; the alternate screen and the demo's task on it show that it started.
docker run --rm --network host \
  -v "$src:/src" -v "$toolchain:/opt/rust:ro" -v "$ccache_dir:/ccache" \
  -e PATH=/opt/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -e CCACHE_DIR=/ccache -e CMAKE_C_COMPILER_LAUNCHER=ccache -e CMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -e TERM=xterm-256color -e HOME=/root "${ca_args[@]}" \
  "$image" bash -c '
    set -eo pipefail
    cd /src
    ./scripts/setup.sh >/tmp/setup.log 2>&1 || { tail -n 30 /tmp/setup.log >&2; exit 1; }
    echo "check-fresh: setup.sh installed: $(grep -o "installing .*" /tmp/setup.log | head -n 1)"
    cargo build --release 2>&1 | tail -n 3
    # The demo in a tmux pane of a fixed size (tmux comes from setup.sh), read back after a
    # few seconds: the first review on screen shows that the interface started.
    tmux new-session -d -s demo -x 100 -y 30 "target/release/lilypad demo --repo /tmp/demo-repo"
    sleep 8
    tmux capture-pane -p -t demo > /tmp/demo.out || true
    tmux kill-server 2>/dev/null || true
    if grep -q "inventory.py" /tmp/demo.out; then
      echo "check-fresh: the demo started on a bare bookworm system:"
      head -n 8 /tmp/demo.out
    else
      echo "check-fresh: the demo did not start; the screen:" >&2
      cat /tmp/demo.out >&2
      exit 1
    fi'
