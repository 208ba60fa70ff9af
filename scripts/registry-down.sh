#!/usr/bin/env bash
# registry-down.sh: stop the registry that registry-up.sh started (found by its pid file only).
# Its blobs are kept for a fast next start unless --purge is given, which deletes $STATE.
# Environment: STATE (default /tmp/lilypad-registry).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sandbox-common.sh"

STATE=${STATE:-/tmp/lilypad-registry}
purge=""
for a in "$@"; do
  case $a in --purge) purge=1 ;; *) die "unknown argument $a" ;; esac
done
stop_pid "$STATE/registry.pid" docker-registry
[ -z "$purge" ] || { rm -rf "$STATE"; log "removed $STATE"; }
