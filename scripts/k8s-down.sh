#!/usr/bin/env bash
# k8s-down.sh: stop what k8s-up.sh started, by pid file only, node first; then remove the pods'
# containers, unmount what the kubelet mounted, remove its cgroups, put back the kernel settings
# it changed, and stop the Docker engine if k8s-up.sh was the one that started it.
# --purge also deletes $STATE (etcd data, certificates, logs) and, with the engine, its state.
# The build cache ($K8S_CACHE) is never touched.
# Environment: STATE (default /tmp/lilypad-k8s), DOCKER_STATE (default /tmp/lilypad-docker),
#   DOCKER_SOCK (default /var/run/docker.sock).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sandbox-common.sh"

STATE=${STATE:-/tmp/lilypad-k8s}
DOCKER_STATE=${DOCKER_STATE:-/tmp/lilypad-docker}
SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
export DOCKER_HOST=unix://$SOCK
purge=""
for a in "$@"; do
  case $a in --purge) purge=1 ;; *) die "unknown argument $a" ;; esac
done

# Delete the pods through the API first (best effort), so a later start with the same etcd data
# does not bring them back.
if alive "$STATE/apiserver.pid" kube-apiserver && alive "$STATE/kubelet.pid" kubelet; then
  kubectl --kubeconfig "$STATE/admin.kubeconfig" --request-timeout=10s delete pods --all -A \
    --grace-period=1 --timeout=30s >/dev/null 2>&1 || log "could not delete all pods through the API"
fi
stop_pid "$STATE/kubelet.pid" kubelet
stop_pid "$STATE/scheduler.pid" kube-scheduler
stop_pid "$STATE/kcm.pid" kube-controller-manager
stop_pid "$STATE/apiserver.pid" kube-apiserver
stop_pid "$STATE/etcd.pid" etcd

# Containers dockershim made (pods and their pause sandboxes) carry the pod uid label.
if docker info >/dev/null 2>&1; then
  ids=$(docker ps -aq --filter label=io.kubernetes.pod.uid)
  # shellcheck disable=SC2086
  [ -z "$ids" ] || { docker rm -f $ids >/dev/null; log "removed $(echo "$ids" | wc -l) pod container(s)"; }
fi
# Pod log links: the kubelet's are /var/log/pods/<pod>/<container>/N.log -> this engine's data
# root. Drop pod dirs holding nothing else (the kubelet may have emptied them already); the links
# in /var/log/containers point into those and dangle once they are gone.
for d in /var/log/pods/*/; do
  [ -d "$d" ] && [ -z "$(find "$d" ! -type d ! -lname "$DOCKER_STATE/*")" ] && rm -rf "$d"
done
find /var/log/containers -maxdepth 1 -xtype l -delete 2>/dev/null || true
rm -f /var/lib/kubelet/device-plugins/kubelet.sock      # fixed path in 1.20, ignores --root-dir
if [ -f "$STATE/created-paths" ]; then                  # what did not exist before the kubelet
  while read -r p; do rm -rf --one-file-system "$p"; done < "$STATE/created-paths"
  rm -f "$STATE/created-paths"
fi
# The kubelet bind-mounts its root dir onto itself and mounts emptyDir tmpfs volumes under it.
[ -d "$STATE" ] && umount_under "$STATE"
rm_cgroups kubepods                # its QoS cgroups (/kubepods/...) outlive it
# The kubelet sets vm.overcommit_memory, kernel.panic etc.; put back what k8s-up.sh saved.
if [ -s "$STATE/sysctl.saved" ]; then
  if sysctl -q -p "$STATE/sysctl.saved"; then rm -f "$STATE/sysctl.saved"; log "restored kernel settings"
  else log "could not restore all of $STATE/sysctl.saved"; fi
fi

if [ -f "$STATE/docker-started-here" ]; then
  STATE=$DOCKER_STATE "$here/docker-down.sh" ${purge:+--purge}
  rm -f "$STATE/docker-started-here"
fi
if [ -n "$purge" ] && [ -d "$STATE" ]; then
  rm -rf --one-file-system "$STATE" && log "removed $STATE"
fi
