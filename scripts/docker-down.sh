#!/usr/bin/env bash
# docker-down.sh: stop the engine that docker-up.sh started (found by its pid file only), after
# removing every container on it, and clean what it left: mounts under $STATE, the docker0
# bridge if it ran with one. Images and the data root are kept for a fast next start unless
# --purge is given, which deletes $STATE.
# Environment: STATE (default /tmp/lilypad-docker), DOCKER_SOCK (default /var/run/docker.sock).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sandbox-common.sh"

STATE=${STATE:-/tmp/lilypad-docker}
SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
export DOCKER_HOST=unix://$SOCK
purge=""
for a in "$@"; do
  case $a in --purge) purge=1 ;; *) die "unknown argument $a" ;; esac
done

if alive "$STATE/dockerd.pid" dockerd; then
  # Containers first: their shims would otherwise outlive the daemon.
  ids=$(docker ps -aq 2>/dev/null || true)
  if [ -n "$ids" ]; then
    log "removing $(echo "$ids" | wc -l) container(s)"
    # shellcheck disable=SC2086
    docker rm -f $ids >/dev/null || log "some containers could not be removed"
  fi
  stop_pid "$STATE/dockerd.pid" dockerd 30
  rm_cgroups docker                 # the cgroupfs parent of its containers outlives it
  # Fixed paths dockerd and the containerd shims create whatever the config says; removed only
  # when empty, so a system engine's files are never touched.
  rmdir /run/docker/plugins /run/docker /run/containerd/s /run/containerd 2>/dev/null || true
  # The bridge outlives dockerd; delete it if this engine had one (only now, right after stopping
  # our own engine, so another engine's docker0 is never touched).
  if ! grep -q '"bridge": "none"' "$STATE/daemon.json" && ip link show docker0 >/dev/null 2>&1; then
    ip link delete docker0 && log "deleted bridge docker0"
  fi
else
  log "no engine started by docker-up.sh under $STATE (an engine not started by it is left alone)"
  rm -f "$STATE/dockerd.pid"
fi

# dockerd normally unmounts its overlays and network namespaces itself; a SIGKILL does not.
[ -d "$STATE" ] && umount_under "$STATE"
[ -S "$SOCK" ] && ! docker info >/dev/null 2>&1 && rm -f "$SOCK"
if [ -n "$purge" ] && [ -d "$STATE" ]; then
  rm -rf --one-file-system "$STATE" && log "removed $STATE"
fi
