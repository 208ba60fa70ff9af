# sandbox-common.sh: helpers shared by scripts/docker-*.sh and scripts/k8s-*.sh (adapted from the
# project recipes). Sourced, never run.
# Everything here is plain POSIX-ish bash; no systemd is assumed (there is none on these machines).

log() { printf '[%s %s] %s\n' "$(date +%T)" "${0##*/}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (starts daemons, writes /var/cache, installs packages)"

# apt_ensure PKG...: install only what is missing. `apt-get update` runs at most once per
# script tree (APT_UPDATED is exported so a child recipe does not update again).
apt_ensure() {
  local p missing=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ -z "${APT_UPDATED:-}" ]; then
    log "apt-get update"
    apt-get update -qq || die "apt-get update failed"
    export APT_UPDATED=1
  fi
  log "installing:$missing"
  # Packages such as docker.io and etcd-server ship init scripts; without systemd, invoke-rc.d
  # would start a system daemon on the default ports. A policy-rc.d that answers 101 forbids
  # that. It is only added (and removed again) when the machine does not already have one.
  local own_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
  local rc=$?
  [ -n "$own_policy" ] && rm -f /usr/sbin/policy-rc.d
  [ $rc = 0 ] || die "apt-get install$missing failed"
}

# lock_state DIR: one run at a time per state dir (parallel test processes may all call an up
# script). fd 9 holds the lock; every daemon is started with fd 9 closed so it never inherits it.
lock_state() {
  mkdir -p "$1"; exec 9>"$1/.lock"
  flock -w "${LOCK_WAIT:-900}" 9 || die "another run holds $1/.lock"
}

# alive PIDFILE [NAME]: true if the pid in PIDFILE runs (and its command line contains NAME).
alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  kill -0 "$pid" 2>/dev/null || return 1
  [ -z "${2:-}" ] || tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

# start_bg NAME PIDFILE LOG CMD...: start a daemon in its own session (so it outlives this
# script and the caller's process group), unless the one recorded in PIDFILE still runs.
start_bg() {
  local name=$1 pidfile=$2 logf=$3; shift 3
  if alive "$pidfile" "$1"; then log "$name already running (pid $(cat "$pidfile"))"; return 0; fi
  # Not a job-control shell, so the background child is no group leader and setsid execs in
  # place: $! is the daemon's own pid.
  setsid "$@" >>"$logf" 2>&1 </dev/null 9>&- &
  echo $! > "$pidfile"
  log "started $name (pid $!, log $logf)"
}

# wait_until SECONDS CMD...: poll CMD (output discarded) every second; false on timeout.
wait_until() {
  local t=$1 i; shift
  for ((i = 0; i < t; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}

# stop_pid PIDFILE NAME [GRACE]: SIGTERM the recorded pid, wait GRACE s (default 20), then
# SIGKILL. Only the recorded pid is signalled, never anything found by name.
stop_pid() {
  local pidfile=$1 name=$2 grace=${3:-20} pid i
  if ! alive "$pidfile"; then rm -f "$pidfile"; log "$name not running"; return 0; fi
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < grace * 5; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) ignored SIGTERM for ${grace}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null; sleep 1
  fi
  rm -f "$pidfile"
  log "stopped $name (pid $pid)"
}

# umount_under DIR: unmount everything mounted at or below DIR, deepest first.
umount_under() {
  local d m
  d=$(readlink -f "$1" 2>/dev/null) || return 0
  # /proc/self/mountinfo field 5 is the mount point (octal escapes for spaces are not expected).
  awk -v d="$d" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo |
    sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
}

# rm_cgroups NAME: remove the cgroup NAME (docker, kubepods) and its children in every hierarchy
# (v1 and v2), deepest first. rmdir only succeeds on cgroups without processes.
rm_cgroups() {
  local d
  for d in /sys/fs/cgroup/"$1" /sys/fs/cgroup/*/"$1"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ -d "$d" ] && log "cgroup $d is still in use"
  done
  return 0
}
