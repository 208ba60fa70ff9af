#!/usr/bin/env bash
# registry-up.sh: a private image registry on 127.0.0.1 for the test of pulling a missing sandbox
# image (tests/sandbox/sandbox_pull.rs): Debian's docker-registry (the distribution registry),
# plain HTTP, which Docker allows for 127.0.0.0/8 without configuration. Idempotent: when ours
# already runs it only makes sure it answers. Prints `export LILYPAD_TEST_REGISTRY=ADDR` on stdout
# (eval it); everything else goes to stderr. scripts/registry-down.sh stops it.
# Environment: STATE (default /tmp/lilypad-registry: config, blobs, pid file, log),
#   REGISTRY_ADDR (default 127.0.0.1:5000), REGISTRY_WAIT (seconds, default 30).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sandbox-common.sh"

STATE=${STATE:-/tmp/lilypad-registry}
ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
case $ADDR in 127.*:*) ;; *) die "REGISTRY_ADDR must be 127.x.y.z:PORT (Docker pulls plain HTTP only there)" ;; esac
lock_state "$STATE"
apt_ensure docker-registry curl
answers() { curl -fsS -o /dev/null "http://$ADDR/v2/"; }

if alive "$STATE/registry.pid" docker-registry; then
  log "registry already running (pid $(cat "$STATE/registry.pid"))"
elif answers 2>/dev/null; then
  die "something not started by this script answers at $ADDR; set REGISTRY_ADDR to a free port"
else
  mkdir -p "$STATE/data"
  cat > "$STATE/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $STATE/data
  delete:
    enabled: true
http:
  addr: $ADDR
EOF
  start_bg docker-registry "$STATE/registry.pid" "$STATE/registry.log" \
    /usr/bin/docker-registry serve "$STATE/config.yml"
fi
wait_until "${REGISTRY_WAIT:-30}" answers ||
  die "the registry does not answer at http://$ADDR/v2/; see $STATE/registry.log"
log "registry answers at $ADDR"
echo "export LILYPAD_TEST_REGISTRY=$ADDR"
