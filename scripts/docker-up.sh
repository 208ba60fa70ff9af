#!/usr/bin/env bash
# docker-up.sh: start a private Docker engine for lilypad's sandbox tests and build registry-free
# base images. Idempotent: when the engine already answers it only makes sure the images exist.
#
# Usage: docker-up.sh [--bridge] [--oom-clamp] [--debian] [--python]
#   --bridge     keep Docker's default bridge docker0 (Kubernetes' dockershim needs one: with
#                "bridge": "none" pods get no IP and kubelet recreates them forever). Without it
#                the engine has no bridge at all, so containers can only use network "none".
#   --oom-clamp  default runtime = a runc wrapper that clamps a negative oomScoreAdj to 0.
#                These VMs' root lacks CAP_SYS_RESOURCE, so a container asking for a negative
#                oom_score_adj (kubelet's pause container asks for -998) fails to start.
#   --debian     also build lilypad-sandbox:debian with debootstrap (minbase + bash python3 git).
#   --python     also build lilypad-sandbox:python: the same plus python3-pip and python3-venv, so
#                a Dockerfile FROM it can `pip install --no-index` wheels from its build context
#                (the test engine has no way out to a package index).
# Environment: STATE (default /tmp/lilypad-docker: data root, exec root, pid file, log),
#   DOCKER_SOCK (default /var/run/docker.sock), DOCKER_WAIT (seconds, default 60),
#   DEBIAN_MIRROR (default http://deb.debian.org/debian), DEBIAN_SUITE (default bookworm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sandbox-common.sh"

STATE=${STATE:-/tmp/lilypad-docker}
SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
export DOCKER_HOST=unix://$SOCK
bridge="" oom="" debian="" python=""
for a in "$@"; do
  case $a in
    --bridge) bridge=1 ;; --oom-clamp) oom=1 ;; --debian) debian=1 ;; --python) python=1 ;;
    *) die "unknown argument $a (see the header of $0)" ;;
  esac
done

pkgs="docker.io busybox-static iptables"     # iptables: dockerd wants the binary even when off
[ -n "$oom" ] && pkgs="$pkgs jq"
[ -n "$debian$python" ] && pkgs="$pkgs debootstrap"
lock_state "$STATE"
# shellcheck disable=SC2086  # a word list on purpose
apt_ensure $pkgs

# --- the engine -------------------------------------------------------------------------------
if alive "$STATE/dockerd.pid" dockerd && ! docker info >/dev/null 2>&1; then
  log "our dockerd runs but does not answer yet; waiting"    # e.g. two runs racing at start
  wait_until "${DOCKER_WAIT:-60}" docker info ||
    die "dockerd (pid $(cat "$STATE/dockerd.pid")) does not answer on $SOCK; see $STATE/dockerd.log"
fi
if docker info >/dev/null 2>&1; then
  if alive "$STATE/dockerd.pid" dockerd; then
    # Ours: refuse to silently run with less than was asked for (restarting would kill the
    # containers of whoever uses it now).
    cfg=$STATE/daemon.json
    [ -z "$bridge" ] || ! grep -q '"bridge": "none"' "$cfg" ||
      die "the engine at $SOCK runs without a bridge; run docker-down.sh, then docker-up.sh --bridge"
    [ -z "$oom" ] || grep -q '"default-runtime"' "$cfg" ||
      die "the engine at $SOCK runs without --oom-clamp; run docker-down.sh, then again with it"
    log "engine already up (pid $(cat "$STATE/dockerd.pid"))"
  else
    log "an engine not started by this script answers at $SOCK; using it as it is"
    [ -z "$oom" ] || log "note: --oom-clamp cannot be added to it (pods fail if it cannot set oom_score_adj -998)"
    [ -z "$bridge" ] || docker network inspect bridge >/dev/null 2>&1 ||
      die "that engine has no default bridge network, which --bridge asks for"
  fi
else
  [ -z "$oom" ] || {
    # runc is called as `runc [global opts] create --bundle DIR ...`; patch DIR/config.json.
    cat > "$STATE/runc-wrap" <<'EOF'
#!/bin/sh
# Clamp a negative process.oomScoreAdj to 0 (root here lacks CAP_SYS_RESOURCE), then run runc.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
prev=""; bundle=""
for a in "$@"; do
  case $prev in --bundle|-b) bundle=$a ;; esac
  prev=$a
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  jq 'if (.process.oomScoreAdj // 0) < 0 then .process.oomScoreAdj = 0 else . end' \
    "$bundle/config.json" > "$bundle/config.json.tmp" && mv "$bundle/config.json.tmp" "$bundle/config.json"
fi
exec runc "$@"
EOF
    chmod 755 "$STATE/runc-wrap"
  }
  # Keep the engine off the host network: no iptables rules, no ip_forward change, no NAT, no
  # userland proxy (published ports cannot work, which is what we want), and no bridge unless
  # asked. Every path lives under $STATE so nothing clashes with a system engine.
  {
    printf '{\n  "data-root": "%s/data",\n  "exec-root": "%s/exec",\n' "$STATE" "$STATE"
    printf '  "pidfile": "%s/dockerd.pid",\n  "hosts": ["unix://%s"],\n' "$STATE" "$SOCK"
    printf '  "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false,\n'
    printf '  "userland-proxy": false,\n'
    [ -n "$bridge" ] || printf '  "bridge": "none",\n'
    [ -z "$oom" ] || printf '  "default-runtime": "lilypad-runc",\n  "runtimes": {"lilypad-runc": {"path": "%s/runc-wrap"}},\n' "$STATE"
    printf '  "log-opts": {"max-size": "10m", "max-file": "2"}\n}\n'
  } > "$STATE/daemon.json"
  rm -f "$STATE/dockerd.pid"        # dockerd refuses to start over a pid file of a live pid
  setsid dockerd --config-file "$STATE/daemon.json" >>"$STATE/dockerd.log" 2>&1 </dev/null 9>&- &
  pid=$!
  log "started dockerd (pid $pid, log $STATE/dockerd.log)"
  for ((i = 0; i < ${DOCKER_WAIT:-60}; i++)); do
    docker info >/dev/null 2>&1 && break
    kill -0 $pid 2>/dev/null || { tail -n 20 "$STATE/dockerd.log" >&2; die "dockerd exited; see $STATE/dockerd.log"; }
    sleep 1
  done
  docker info >/dev/null 2>&1 || {
    tail -n 20 "$STATE/dockerd.log" >&2
    die "dockerd (pid $pid) did not answer on $SOCK within ${DOCKER_WAIT:-60}s; see $STATE/dockerd.log"
  }
  log "engine ready after ${i}s"
  if [ -n "$bridge" ]; then
    # dockershim only needs each container's IP, not a host address on the bridge. Removing the
    # host's addresses from docker0 (and IPv6 on it) leaves containers nothing to reach the host
    # through. Never send traffic to bridge or container addresses to "check" this.
    ip addr flush dev docker0 2>/dev/null || true
    sysctl -qw net.ipv6.conf.docker0.disable_ipv6=1 2>/dev/null || true
  fi
fi

# --- images -----------------------------------------------------------------------------------
# import_rootfs DIR IMAGE CMD: tar a root filesystem (numeric owners kept) into an image.
import_rootfs() {
  tar -C "$1" --numeric-owner -c . | docker import -c "CMD [\"$3\"]" -c 'WORKDIR /workspace' \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$2" >/dev/null
}
# drop_rootfs DIR: unmount what a build left mounted (debootstrap mounts proc, sys, maybe a bind
# of /dev) before deleting, and never cross into another file system while deleting.
drop_rootfs() { umount_under "$1"; rm -rf --one-file-system "$1"; }

if ! docker image inspect lilypad-sandbox:busybox >/dev/null 2>&1; then
  root=$(mktemp -d "$STATE/busybox-root.XXXXXX")
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,workspace,root,proc,sys,dev}
  cp /bin/busybox "$root/bin/busybox"     # busybox-static: one static binary, no libc needed
  # One symlink per applet at its usual path, except bin/busybox itself (a link would replace it).
  for a in $(/bin/busybox --list-full); do
    [ "$a" = bin/busybox ] || ln -sf /bin/busybox "$root/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n' > "$root/etc/passwd"
  printf 'root:x:0:\nsandbox:x:1000:\n' > "$root/etc/group"
  chmod 1777 "$root/tmp"; chmod 700 "$root/root"; chown 1000:1000 "$root/workspace"
  import_rootfs "$root" lilypad-sandbox:busybox /bin/sh
  drop_rootfs "$root"
  log "built lilypad-sandbox:busybox"
fi

# debian_image TAG PACKAGES: debootstrap minbase with PACKAGES (comma-separated) and a sandbox
# user (uid 1000), imported as TAG.
debian_image() {
  local tag=$1 include=$2 root t0
  root=$(mktemp -d "$STATE/debian-root.XXXXXX")
  t0=$(date +%s)
  log "debootstrap ${DEBIAN_SUITE:-bookworm} (minbase + ${include//,/ }) for $tag, takes minutes"
  if ! debootstrap --variant=minbase --include="$include" \
      "${DEBIAN_SUITE:-bookworm}" "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      >"$STATE/debootstrap.log" 2>&1; then
    drop_rootfs "$root"; die "debootstrap failed; see $STATE/debootstrap.log"
  fi
  chroot "$root" useradd -u 1000 -U -m -d /home/sandbox -s /bin/bash sandbox
  mkdir -p "$root/workspace"; chown 1000:1000 "$root/workspace"; chmod 1777 "$root/tmp"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  umount_under "$root"
  import_rootfs "$root" "$tag" /bin/bash
  drop_rootfs "$root"
  log "built $tag in $(( $(date +%s) - t0 ))s"
}

if [ -n "$debian" ] && ! docker image inspect lilypad-sandbox:debian >/dev/null 2>&1; then
  debian_image lilypad-sandbox:debian bash,python3,git,ca-certificates
fi
if [ -n "$python" ] && ! docker image inspect lilypad-sandbox:python >/dev/null 2>&1; then
  debian_image lilypad-sandbox:python bash,python3,python3-pip,python3-venv,git,ca-certificates
fi

echo "DOCKER_HOST=unix://$SOCK"
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^lilypad-sandbox:' | sed 's/^/image /'
