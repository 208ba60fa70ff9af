#!/usr/bin/env bash
# k8s-up.sh: a real single-node Kubernetes v1.20 on 127.0.0.1 for lilypad's sandbox tests:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet that drives the
# Docker engine of docker-up.sh through dockershim. Binaries are built once from Debian 12's
# `kubernetes` source package into $K8S_CACHE (about 9 minutes on 2 cores) and reused.
# Idempotent: running components (pid files under $STATE) are left alone. Ends with a smoke
# test as the least-privileged user (pod Running, exec, delete); SMOKE=0 skips it.
# Environment: STATE (default /tmp/lilypad-k8s), K8S_CACHE (default /var/cache/lilypad-k8s),
#   DOCKER_STATE (default /tmp/lilypad-docker), DOCKER_SOCK, K8S_NODE (default lilypad-node),
#   K8S_NAMESPACE (default lilypad-test), DEBIAN_MIRROR, K8S_SRC_VERSION (pin the source
#   package version), K8S_KEEP_BUILD=1 (keep the source tree and Go cache after a build), SMOKE.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sandbox-common.sh"

STATE=${STATE:-/tmp/lilypad-k8s}
CACHE=${K8S_CACHE:-/var/cache/lilypad-k8s}
DOCKER_STATE=${DOCKER_STATE:-/tmp/lilypad-docker}
SOCK=${DOCKER_SOCK:-/var/run/docker.sock}
NODE=${K8S_NODE:-lilypad-node}
NS=${K8S_NAMESPACE:-lilypad-test}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BIN=$CACHE/bin PKI=$STATE/pki API=https://127.0.0.1:6443
export DOCKER_HOST=unix://$SOCK
lock_state "$STATE"

apt_ensure etcd-server golang-go golang-github-modern-go-reflect2-dev rsync jq make gcc libc6-dev \
  dpkg-dev openssl curl
# Machines of this kind ship kubectl (google-cloud-sdk's); Debian's kubernetes-client conflicts
# with it, so it is only installed where no kubectl exists.
command -v kubectl >/dev/null || apt_ensure kubernetes-client

# --- 1. binaries, built once ------------------------------------------------------------------
build_k8s() {
  local w=$CACHE/build t0; t0=$(date +%s)
  rm -rf --one-file-system "$w"; mkdir -p "$w/apt/lists/partial" "$w/apt/cache/archives/partial"
  # A private deb-src list and private apt state: the system's apt configuration is untouched.
  printf 'Types: deb-src\nURIs: %s\nSuites: bookworm\nComponents: main\nSigned-By: %s\n' \
    "$MIRROR" /usr/share/keyrings/debian-archive-keyring.gpg > "$w/apt/src.sources"
  local o=(-o "Dir::Etc::sourcelist=$w/apt/src.sources" -o Dir::Etc::sourceparts=/nonexistent
           -o "Dir::State::Lists=$w/apt/lists" -o "Dir::Cache=$w/apt/cache" -o APT::Sandbox::User=root)
  apt-get "${o[@]}" -qq update || die "apt-get update (deb-src) failed"
  (cd "$w" && apt-get "${o[@]}" -qq source --download-only "kubernetes${K8S_SRC_VERSION:+=$K8S_SRC_VERSION}") ||
    die "apt-get source kubernetes failed"
  dpkg-source -x "$w"/kubernetes_*.dsc "$w/src" >"$CACHE/extract.log" 2>&1 || die "dpkg-source -x failed"
  # 1.20 vendors reflect2 v1.0.1, whose map iteration calls reflect.mapiterinit with the pre-Go
  # 1.18 signature: built with Debian's Go 1.19 every JSON encoding of a map can corrupt memory
  # (seen: kube-apiserver "fatal error: fault" in mapiterinit). Debian ships reflect2 1.0.2.
  local r=$w/src/vendor/github.com/modern-go/reflect2
  rm -f "$r"/*.go "$r"/*.s
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$r/"
  log "building $(basename "$w"/kubernetes_*.dsc .dsc) (log $CACHE/build.log; ~9 min on 2 cores)"
  # GOPATH mode as debian/rules does it; plain `go build -mod=vendor` fails on this tree.
  mkdir -p "$w/src/.go/src/k8s.io"; ln -sfn ../../.. "$w/src/.go/src/k8s.io/kubernetes"
  (cd "$w/src" && env GOPATH="$w/src/.go" GOCACHE="$w/gocache" HOME="$w" CGO_ENABLED=0 GOFLAGS= \
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet") \
    >"$CACHE/build.log" 2>&1 || { tail -n 30 "$CACHE/build.log" >&2; die "build failed; see $CACHE/build.log"; }
  mkdir -p "$BIN"
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    install -m 755 "$w/src/_output/bin/$b" "$BIN/$b"
  done
  # The pause container of every pod, from the tree's own source (no registry to pull from).
  gcc -static -O2 -DVERSION=3.2 -o "$BIN/pause" "$w/src/build/pause/linux/pause.c"
  "$BIN/kube-apiserver" --version > "$BIN/VERSION"     # written last: marks a complete build
  [ "${K8S_KEEP_BUILD:-0}" = 1 ] || rm -rf --one-file-system "$w"
  log "built $(cat "$BIN/VERSION") in $(( $(date +%s) - t0 ))s"
}
[ -s "$BIN/VERSION" ] || build_k8s

# --- 2. the Docker engine, with the bridge dockershim needs and the oomScoreAdj clamp ---------
docker info >/dev/null 2>&1 || { mkdir -p "$STATE"; touch "$STATE/docker-started-here"; }
STATE=$DOCKER_STATE "$here/docker-up.sh" --bridge --oom-clamp >/dev/null
if ! docker image inspect k8s.gcr.io/pause:3.2 >/dev/null 2>&1; then
  d=$(mktemp -d); cp "$BIN/pause" "$d/pause"
  tar -C "$d" -c . | docker import -c 'ENTRYPOINT ["/pause"]' - k8s.gcr.io/pause:3.2 >/dev/null
  rm -rf "$d"; log "imported k8s.gcr.io/pause:3.2"
fi

# --- 3. certificates, keys, tokens, kubeconfigs (once per $STATE) -----------------------------
mkdir -p "$PKI" "$STATE/logs"
if [ ! -s "$PKI/tokens.csv" ]; then
  (
    cd "$PKI"; umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=lilypad-test-ca 2>/dev/null
    # sign NAME SUBJECT EXTENSIONS: a leaf key pair signed by the CA above.
    sign() {
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      printf '%s\n' "$3" > "$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    sign apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
    # The apiserver's identity towards the kubelet (exec, logs): the kubelet trusts only this CA.
    sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
    openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # Static tokens: token,user,uid,"groups". No group for sandbox-controller: only the Role below.
    printf '%s,admin,admin,"system:masters"\n%s,sandbox-controller,sandbox-controller\n%s,system:node:%s,node,"system:nodes"\n' \
      "$(openssl rand -hex 16)" "$(openssl rand -hex 16)" "$(openssl rand -hex 16)" "$NODE" > tokens.csv.tmp
    mv tokens.csv.tmp tokens.csv
  )
fi
token() { awk -F, -v u="$1" '$2 == u {print $1}' "$PKI/tokens.csv"; }
kubeconfig() {  # FILE USER [NAMESPACE]
  (umask 077; cat > "$1") <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lilypad
  cluster: {server: "$API", certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")}
users:
- name: "$2"
  user: {token: "$(token "$2")"}
contexts:
- name: "$2@lilypad"
  context: {cluster: lilypad, user: "$2", namespace: "${3:-default}"}
current-context: "$2@lilypad"
EOF
}
kubeconfig "$STATE/admin.kubeconfig" admin
kubeconfig "$STATE/sandbox.kubeconfig" sandbox-controller "$NS"
kubeconfig "$STATE/node.kubeconfig" "system:node:$NODE"
K=(kubectl --kubeconfig "$STATE/admin.kubeconfig" --request-timeout=20s)
KS=(kubectl --kubeconfig "$STATE/sandbox.kubeconfig" --request-timeout=20s)

# --- 4. the control plane and the node, all on 127.0.0.1 --------------------------------------
start_bg etcd "$STATE/etcd.pid" "$STATE/logs/etcd.log" etcd --name lilypad --data-dir "$STATE/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster lilypad=http://127.0.0.1:2380
wait_until 30 curl -sf http://127.0.0.1:2379/health || die "etcd not healthy; see $STATE/logs/etcd.log"

# --endpoint-reconciler-type=none: a loopback endpoint is refused, so the reconciler would log
# "Resetting endpoints" every 10 s; nothing here uses the kubernetes Service anyway.
start_bg kube-apiserver "$STATE/apiserver.pid" "$STATE/logs/apiserver.log" "$BIN/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --secure-port=6443 --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --token-auth-file="$PKI/tokens.csv" --client-ca-file="$PKI/ca.crt" --authorization-mode=Node,RBAC \
  --kubelet-client-certificate="$PKI/kubelet-client.crt" --kubelet-client-key="$PKI/kubelet-client.key" \
  --kubelet-preferred-address-types=Hostname \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$PKI/sa.pub" \
  --service-account-signing-key-file="$PKI/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
  --allow-privileged=false --enable-admission-plugins=NodeRestriction --endpoint-reconciler-type=none
wait_until 90 curl -sf --cacert "$PKI/ca.crt" "$API/readyz" ||
  die "kube-apiserver not ready after 90s; see $STATE/logs/apiserver.log"

# Controller-manager: default ServiceAccounts (pods are refused without one) and the garbage
# collector (ownerReferences). Controllers for clouds and node IPAM have nothing to do here.
# Both serve health on 127.0.0.1 only, checking tokens through the apiserver; skip-lookup stops
# them asking for a front-proxy CA that does not exist here (an error line every few seconds).
start_bg kube-controller-manager "$STATE/kcm.pid" "$STATE/logs/kcm.log" "$BIN/kube-controller-manager" \
  --kubeconfig="$STATE/admin.kubeconfig" --leader-elect=false --bind-address=127.0.0.1 --port=0 \
  --authentication-kubeconfig="$STATE/admin.kubeconfig" --authentication-skip-lookup \
  --authorization-kubeconfig="$STATE/admin.kubeconfig" \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --controllers='*,-nodeipam,-service,-route,-cloud-node-lifecycle'
start_bg kube-scheduler "$STATE/scheduler.pid" "$STATE/logs/scheduler.log" "$BIN/kube-scheduler" \
  --kubeconfig="$STATE/admin.kubeconfig" --leader-elect=false --bind-address=127.0.0.1 --port=0 \
  --authentication-kubeconfig="$STATE/admin.kubeconfig" --authentication-skip-lookup \
  --authorization-kubeconfig="$STATE/admin.kubeconfig"

# The kubelet rewrites some kernel settings (vm.overcommit_memory, kernel.panic, ...);
# k8s-down.sh puts back the values saved here before its first start.
[ -s "$STATE/sysctl.saved" ] || sysctl vm.overcommit_memory vm.panic_on_oom kernel.panic \
  kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes > "$STATE/sysctl.saved"
# SizeMemoryBackedVolumes (alpha in 1.20, on by default from 1.22): a memory-backed emptyDir
# gets a tmpfs of its sizeLimit, so filling the sandbox's /tmp fails with ENOSPC instead of
# charging the pod's memory until the OOM killer takes its PID 1.
# Every path under $STATE; no iptables chains; no read-only port; only the apiserver's client
# certificate (our CA) may call it, authorised through the apiserver (Webhook). A few paths are
# fixed whatever the flags (pod log links, the device-plugin socket): note which ones it creates.
mkdir -p "$STATE/kubelet"
[ -f "$STATE/created-paths" ] || for p in /var/log/pods /var/log/containers /var/lib/kubelet; do
  [ -e "$p" ] || echo "$p"; done > "$STATE/created-paths"
start_bg kubelet "$STATE/kubelet.pid" "$STATE/logs/kubelet.log" "$BIN/kubelet" \
  --kubeconfig="$STATE/node.kubeconfig" --hostname-override="$NODE" --node-ip=127.0.0.1 \
  --address=127.0.0.1 --read-only-port=0 --healthz-bind-address=127.0.0.1 \
  --client-ca-file="$PKI/ca.crt" --anonymous-auth=false --authorization-mode=Webhook \
  --container-runtime=docker --docker-endpoint="unix://$SOCK" \
  --container-runtime-endpoint="unix://$STATE/dockershim.sock" \
  --experimental-dockershim-root-directory="$STATE/dockershim" \
  --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" --volume-plugin-dir="$STATE/kubelet/volume-plugins" \
  --pod-infra-container-image=k8s.gcr.io/pause:3.2 --cgroup-driver=cgroupfs --fail-swap-on=false \
  --make-iptables-util-chains=false --hairpin-mode=none \
  --eviction-hard= --image-gc-high-threshold=100 --pod-max-pids=128 --max-pods=32 \
  --feature-gates=SizeMemoryBackedVolumes=true

# kubelet 1.20 refuses a loopback node IP and so publishes no address; the apiserver could not
# reach it for exec. A Hostname address "localhost" (resolves to 127.0.0.1) fixes that; the
# kubelet leaves the field alone afterwards.
wait_until 60 "${K[@]}" get node "$NODE" || die "node $NODE did not register; see $STATE/logs/kubelet.log"
curl -sf --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(token admin)" -X PATCH \
  -H 'Content-Type: application/merge-patch+json' "$API/api/v1/nodes/$NODE/status" \
  -d '{"status":{"addresses":[{"type":"Hostname","address":"localhost"}]}}' >/dev/null ||
  die "could not patch the node's address"
"${K[@]}" wait --for=condition=Ready "node/$NODE" --timeout=120s >/dev/null ||
  die "node $NODE not Ready; see $STATE/logs/kubelet.log"
log "node $NODE Ready"

# --- 5. the test namespace and the least-privilege identity -----------------------------------
# The Role is the one users get (docs/kube-rbac.yaml, moved to $NS), so the sandbox tests prove
# it is enough; here it is bound to the token user sandbox-controller.
rbac=$here/../docs/kube-rbac.yaml
[ -f "$rbac" ] || die "missing $rbac"
"${K[@]}" create namespace "$NS" --dry-run=client -o yaml | "${K[@]}" apply -f - >/dev/null
# Earlier versions of this script bound a broader Role under this name (roleRef is immutable).
"${K[@]}" -n "$NS" delete rolebinding sandbox-controller --ignore-not-found >/dev/null
"${K[@]}" -n "$NS" delete role sandbox-controller --ignore-not-found >/dev/null
sed -e "s/namespace: lilypad\$/namespace: $NS/" "$rbac" | awk '
  /^---/ { if (keep) printf "%s---\n", buf; buf=""; keep=1; next }
  /^kind: Namespace/ { keep=0 }
  { buf = buf $0 "\n" }
  END { if (keep) printf "%s", buf }' | "${K[@]}" apply -f - >/dev/null
"${K[@]}" apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lilypad-sandbox-test, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lilypad-sandbox}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: sandbox-controller}]
EOF
# Pods are refused until the controller-manager has made the namespace's default ServiceAccount.
wait_until 60 "${K[@]}" -n "$NS" get serviceaccount default || die "no default ServiceAccount in $NS"

# --- 6. proof: the sandbox identity runs a hardened pod, execs in it, deletes it --------------
if [ "${SMOKE:-1}" = 1 ]; then
  [ "$("${KS[@]}" auth can-i list secrets 2>/dev/null || true)" = no ] || die "sandbox-controller may list secrets"
  "${K[@]}" -n "$NS" delete pod lilypad-smoke --ignore-not-found --wait=true >/dev/null
  "${KS[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: lilypad-smoke, labels: {app.kubernetes.io/name: lilypad-smoke}}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  activeDeadlineSeconds: 600
  securityContext: {runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: sandbox
    image: lilypad-sandbox:busybox
    imagePullPolicy: Never
    command: [sleep, "600"]
    workingDir: /workspace
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: {drop: [ALL]}}
    resources: {limits: {cpu: 500m, memory: 128Mi}}
    volumeMounts: [{name: workspace, mountPath: /workspace}, {name: tmp, mountPath: /tmp}]
  volumes:
  - {name: workspace, emptyDir: {sizeLimit: 64Mi}}
  - {name: tmp, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
EOF
  # Waiting watches pods, which the sandbox Role does not allow: the admin waits.
  "${K[@]}" -n "$NS" wait --for=condition=Ready pod/lilypad-smoke --timeout=120s >/dev/null ||
    die "smoke pod not Ready: $("${KS[@]}" get pod lilypad-smoke -o jsonpath='{.status}' 2>&1)"
  out=$("${KS[@]}" exec lilypad-smoke -- sh -c 'id -u; echo hello > /workspace/f && cat /workspace/f; grep CapEff /proc/self/status')
  [[ $(tr '\n' ' ' <<<"$out") == "1000 hello CapEff:"?"0000000000000000 " ]] || die "unexpected exec output: $out"
  "${KS[@]}" delete pod lilypad-smoke --wait=false >/dev/null
  log "smoke test passed: pod Running as uid 1000, exec ok, no capabilities, deleted"
fi

printf 'KUBECONFIG_ADMIN=%s\nKUBECONFIG_SANDBOX=%s\nNAMESPACE=%s\nDOCKER_HOST=%s\n' \
  "$STATE/admin.kubeconfig" "$STATE/sandbox.kubeconfig" "$NS" "$DOCKER_HOST"
