#!/usr/bin/env bash
# make cluster-up: a real single-node Kubernetes cluster on this machine,
# without Docker or kind: etcd (Debian's), the pinned kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kube-proxy
# (hack/build-kube.sh) as processes; containerd + runc (Debian's) with CNI
# (bridge, host-local, portmap: Debian's containernetworking-plugins) for
# the pods; CoreDNS (built from its module) as a pod; the Prometheus
# Operator and the Prometheus it runs (each built from its module) in the
# namespace monitoring (monitoring.yaml); Traefik, the Ingress controller
# and Gateway API implementation, in the namespace traefik (traefik.yaml,
# after Gateway API's CRDs); cert-manager's controller (this project's
# command on its library module) with the ClusterIssuer of a CA of the
# cluster's own (cert-manager.yaml, after cert-manager's CRDs);
# metrics-server (built from its module) serving the resource metrics API
# (metrics-server.yaml); kube-router's
# firewall enforcing NetworkPolicies; a registry (Debian's docker-registry)
# that containerd reads docker.io, ghcr.io, gcr.io, quay.io and
# registry.k8s.io through, holding the stand-ins of the images it cannot pull
# (hack/imagebuild). lib.sh says where it lives and what it changes on the
# host; down.sh puts that back.
#
# Idempotent: on a node that is up it starts what is missing and returns.
# Prints the kubeconfig's path last. Needs root. docs/local-cluster.md.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
require_root
start_all=$SECONDS
# CLUSTER_NODES (make cluster-up NODES=3): nodes to start, the first one
# included. Nodes above it that are up stay up (cluster-down takes them).
NODES="${CLUSTER_NODES:-1}"
[[ "$NODES" =~ ^[1-9]$ ]] || die "NODES=$NODES: the number of nodes, 1 to 9"

mkdir -p "$CLUSTER_DIR"
exec 9>"$CLUSTER_DIR/lock"
flock -w 600 9 || die "another cluster-up or cluster-down holds $CLUSTER_DIR/lock"

# --- What it runs: installed and built once, cached.
"$root/hack/install-cluster-deps.sh"
"$root/hack/build-kube.sh"
"$root/hack/build-node-tools.sh"
(cd "$root/hack/imagebuild" && GOWORK=off go build -trimpath -o "$bin/imagebuild" .)
log "binaries ready ($((SECONDS - start_all))s)"

# A node whose holder is gone lost its mounts and processes with it: clean
# what is left before starting again.
if ! holder_pid >/dev/null && [ -d "$CLUSTER_DIR/pids" ]; then
  log "a previous node is partly gone: cleaning it first"
  CLUSTER_LOCKED=1 "$root/hack/cluster/down.sh"
fi
mkdir -p "$CLUSTER_DIR"/{pids,logs,pki,run,varlib,varlog,cni,certs.d,registry}

# --- The host as found: recorded once, before anything changes.
record="$CLUSTER_DIR/host.record"
if [ ! -f "$record" ]; then
  {
    for k in "${KERNEL_TUNABLES[@]}"; do
      echo "sysctl $k $(sysctl -n "$k")"
    done
    for h in "$CGROUP_ROOT"/*/; do
      [ -d "${h%/}/kubepods" ] && echo "cgroup-existed ${h%/}/kubepods"
    done
    # ip netns add makes /run/netns, and a mount point of it (bound onto
    # itself, shared) when it is not one: both are recorded, and down.sh
    # undoes whichever up made.
    [ -e /run/netns ] && echo "netns-dir-existed"
    mountpoint -q /run/netns 2>/dev/null && echo "netns-mount-existed"
    true
  } >"$record.tmp"
  mv "$record.tmp" "$record"
fi

# --- The node's namespaces. One node per machine: the veth's alias names
# the .cluster directory that owns it.
if owner="$(cat "/sys/class/net/$HOST_IF/ifalias" 2>/dev/null)" && [ -n "$owner" ] && [ "$owner" != "$CLUSTER_DIR" ]; then
  die "the local cluster of $owner is up on this machine: run make cluster-down there first"
fi
if ! ip netns list | grep -qw "$NETNS"; then
  ip netns add "$NETNS"
fi
if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
  ip link add "$HOST_IF" type veth peer name eth0 netns "$NETNS"
  ip link set "$HOST_IF" alias "$CLUSTER_DIR"
  ip addr add "$HOST_IP/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
fi
node_network "$NETNS" "$NODE_IP" "$HOST_IP"
if ! holder_pid >/dev/null; then
  start_holder "$NETNS" "$CLUSTER_DIR"
fi
pod_masquerade
log "namespaces ready: netns $NETNS, node $NODE_IP"

# --- Certificates and kubeconfigs (kept across restarts of the processes).
pki="$CLUSTER_DIR/pki"
if [ ! -f "$pki/ca.crt" ]; then
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=tokendata-local-ca" 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    cert() { # cert NAME SUBJECT [SANS]
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      local ext="extendedKeyUsage=serverAuth,clientAuth"
      [ -n "${3:-}" ] && ext="$ext
subjectAltName=$3"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 \
        -extfile <(printf '%s\n' "$ext") 2>/dev/null
      rm -f "$1.csr"
    }
    cert apiserver "/CN=kube-apiserver" \
      "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1"
    cert admin "/O=system:masters/CN=tokendata-admin"
    cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
    cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  )
  write_kubeconfig admin
  write_kubeconfig kubelet
  cp "$CLUSTER_DIR/admin.kubeconfig" "$KUBECONFIG_FILE"
fi

# The aggregation layer's own CA and the client certificate the API server
# presents to the API servers it proxies to (metrics-server's
# metrics.k8s.io): a CA apart from the cluster's, so that no client
# certificate of the cluster's CA can pass for the proxy.
if [ ! -f "$pki/front-proxy-client.crt" ]; then
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout front-proxy-ca.key -out front-proxy-ca.crt -days 3650 \
      -subj "/CN=tokendata-local-front-proxy-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout front-proxy-client.key -out front-proxy-client.csr \
      -subj "/CN=front-proxy-client" 2>/dev/null
    openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial \
      -out front-proxy-client.crt -days 3650 -extfile <(echo "extendedKeyUsage=clientAuth") 2>/dev/null
    rm -f front-proxy-client.csr
  )
fi

# --- The registry, and containerd reading the upstream registries through it.
cat >"$CLUSTER_DIR/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $CLUSTER_DIR/registry}
  delete: {enabled: true}
http:
  addr: $REGISTRY
EOF
start_node_process registry docker-registry serve "$CLUSTER_DIR/registry.yml"
for upstream in docker.io ghcr.io gcr.io quay.io registry.k8s.io; do
  server="https://$upstream"
  [ "$upstream" = docker.io ] && server=https://registry-1.docker.io
  mkdir -p "$CLUSTER_DIR/certs.d/$upstream"
  cat >"$CLUSTER_DIR/certs.d/$upstream/hosts.toml" <<EOF
# The local cluster's registry first (the stand-ins and the images built
# here); $upstream itself is not reachable from this machine.
server = "$server"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
done
mkdir -p "$CLUSTER_DIR/certs.d/$REGISTRY"
cat >"$CLUSTER_DIR/certs.d/$REGISTRY/hosts.toml" <<EOF
# The local cluster's registry itself, over plain HTTP.
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF

write_containerd_config "$CLUSTER_DIR/containerd.toml" "$CLUSTER_DIR/cni"
write_cni_config "$CLUSTER_DIR/cni/10-tokendata.conflist" "$NODE_POD_CIDR"
start_node_process containerd containerd --config "$CLUSTER_DIR/containerd.toml"

# --- The control plane.
start_node_process etcd etcd --name node --data-dir /var/lib/etcd \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster node=http://127.0.0.1:2380 --log-level warn
start_node_process kube-apiserver "$bin/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 \
  --advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --kubelet-preferred-address-types=InternalIP \
  --requestheader-client-ca-file="$pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$pki/front-proxy-client.crt" --proxy-client-key-file="$pki/front-proxy-client.key" \
  --profiling=false
wait_for kube-apiserver 120 kubectl_node get --raw /readyz
log "control plane store and API ready ($((SECONDS - start_all))s)"
start_node_process kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
  --authentication-kubeconfig="$CLUSTER_DIR/admin.kubeconfig" --authorization-kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
  --allocate-node-cidrs=true --cluster-cidr="$POD_CIDR" --node-cidr-mask-size=24 \
  --service-cluster-ip-range="$SERVICE_CIDR" --profiling=false
start_node_process kube-scheduler "$bin/kube-scheduler" \
  --kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
  --authentication-kubeconfig="$CLUSTER_DIR/admin.kubeconfig" --authorization-kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --profiling=false

# --- The node.
wait_for containerd 60 in_node ctr --address /run/containerd/containerd.sock version
: >"$CLUSTER_DIR/resolv.conf" # pods of dnsPolicy Default get no resolver: nothing outside is reachable
write_kubelet_config "$CLUSTER_DIR/kubelet.yaml"
start_node_process kubelet "$bin/kubelet" --config="$CLUSTER_DIR/kubelet.yaml" \
  --kubeconfig="$CLUSTER_DIR/kubelet.kubeconfig" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"
write_kube_proxy_config "$CLUSTER_DIR/kube-proxy.yaml" "$NODE_NAME" "$NODE_IP"
start_node_process kube-proxy "$bin/kube-proxy" --config="$CLUSTER_DIR/kube-proxy.yaml"
wait_for "node $NODE_NAME Ready" 120 kubectl_node wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
log "node Ready ($((SECONDS - start_all))s)"
start_kube_router "$NODE_NAME"
# The node's pod range is the first the controller-manager gives (the
# CNI configuration above says it).
got="$(pod_cidr_of "$NODE_NAME")"
[ "$got" = "$NODE_POD_CIDR" ] || die "node $NODE_NAME has the pod range $got, not $NODE_POD_CIDR"

# --- Images: the stand-ins, CoreDNS, and the DNS add-on.
wait_for registry 30 curl -fsS "http://$REGISTRY/v2/"
values="$root/charts/tokendata/values.yaml"
chart_image() { # chart_image KEY: repository:tag of .KEY.image in values.yaml
  awk -v key="$1:" '
    $0 ~ "^"key { inside=1; next }
    inside && /^[^ #]/ { inside=0 }
    inside && /^    repository:/ { repo=$2 }
    inside && /^    tag:/ { gsub(/"/, "", $2); tag=$2 }
    END { print repo ":" tag }' "$values"
}
runtime_image="$(sed -n 's/^ARG RUNTIME_IMAGE=//p' "$root/services/Dockerfile")"
coredns_version="$(cd "$root/hack/tools/kube" && GOWORK=off go list -m -f '{{.Version}}' github.com/coredns/coredns)"
po_module=github.com/prometheus-operator/prometheus-operator
po_version="$(cd "$root/hack/tools/kube" && GOWORK=off go list -m -f '{{.Version}}' "$po_module")"
# Prometheus' version, which the operator is told (it picks the server's
# flags by it), from its module's: v0.305.0 is Prometheus v3.5.0.
prometheus_module="$(cd "$root/hack/tools/prometheus" && GOWORK=off go list -m -f '{{.Version}}' github.com/prometheus/prometheus)"
prometheus_version="$(echo "$prometheus_module" | awk -F. '{ minor = $2 + 0; if (minor >= 300) printf "v3.%d.%s", minor - 300, $3; else printf "v2.%d.%s", minor, $3 }')"
ms_version="$(cd "$root/hack/tools/metricsserver" && GOWORK=off go list -m -f '{{.Version}}' sigs.k8s.io/metrics-server)"
traefik_version="$(cd "$root/hack/tools/traefik" && GOWORK=off go list -m -f '{{.Version}}' github.com/traefik/traefik/v3)"
cm_module=github.com/cert-manager/cert-manager
cm_version="$(cd "$root/hack/tools/certmanager" && GOWORK=off go list -m -f '{{.Version}}' "$cm_module")"
{
  "$bin/imagebuild" standin -registry "$REGISTRY" -insecure \
    "static=$runtime_image" "pause=$PAUSE_IMAGE" \
    "nginx=$(chart_image cache)" "redis=$(chart_image redis)" "busybox=$(chart_image tests)"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/coredns" -at /coredns \
    -port 53/udp -port 53/tcp "registry.k8s.io/coredns/coredns:$coredns_version"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/prometheus-operator" -at /bin/operator \
    -port 8080/tcp "quay.io/prometheus-operator/prometheus-operator:$po_version"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/prometheus-config-reloader" \
    -at /bin/prometheus-config-reloader -port 8080/tcp "quay.io/prometheus-operator/prometheus-config-reloader:$po_version"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/prometheus" -at /bin/prometheus \
    -port 9090/tcp "quay.io/prometheus/prometheus:$prometheus_version"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/metrics-server" -at /metrics-server \
    -port 10250/tcp "registry.k8s.io/metrics-server/metrics-server:$ms_version"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/traefik" -at /traefik \
    -port 8000/tcp -port 8443/tcp "docker.io/library/traefik:$traefik_version"
  "$bin/imagebuild" binary -registry "$REGISTRY" -insecure -bin "$bin/cert-manager" -at /app/cmd/controller/controller \
    -port 9403/tcp "quay.io/jetstack/cert-manager-controller:$cm_version"
} >"$CLUSTER_DIR/images.tmp"
mv "$CLUSTER_DIR/images.tmp" "$CLUSTER_DIR/images"
digest_of() { awk -v n="$1" '$1 == n { sub(/.*@/, "", $2); print $2 }' "$CLUSTER_DIR/images"; }
# The chart's third-party images pinned to their stand-ins' digests
# (containerd 1.6 may keep serving an older image under a reused tag): the
# values the node test and skaffold's local profile add.
cat >"$CLUSTER_DIR/values-local.yaml" <<EOF
# Written by make cluster-up: the local cluster's stand-ins of the chart's
# third-party images (hack/imagebuild), by digest.
cache: {image: {digest: "$(digest_of "$(chart_image cache)")"}}
redis: {image: {digest: "$(digest_of "$(chart_image redis)")"}}
tests: {image: {digest: "$(digest_of "$(chart_image tests)")"}}
EOF
log "stand-in images pushed to $REGISTRY ($((SECONDS - start_all))s): $CLUSTER_DIR/images"
# --- The other nodes (NODES), before the add-ons, so that these spread.
for k in $(seq 2 "$NODES"); do
  CLUSTER_LOCKED=1 "$root/hack/cluster/worker.sh" up "$k"
done
coredns_image="$(awk '$1 ~ "/coredns:" {print $2}' "$CLUSTER_DIR/images")"
sed -e "s|@DNS_IP@|$DNS_IP|g" -e "s|@IMAGE@|$coredns_image|g" "$root/hack/cluster/coredns.yaml" |
  kubectl_node apply --server-side --force-conflicts -f - >/dev/null
kubectl_node -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null
# --- Monitoring: the operator's CRDs (from its pinned module), the
# operator, and the Prometheus it runs (monitoring.yaml). The Prometheus
# pod comes up on its own; the node test waits for its targets.
po_dir="$(cd "$root/hack/tools/kube" && GOWORK=off go mod download -json "$po_module" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$po_dir/example/prometheus-operator-crd" ] || die "no CRDs under $po_dir/example/prometheus-operator-crd"
kubectl_node apply --server-side --force-conflicts -f "$po_dir/example/prometheus-operator-crd" >/dev/null
# Retried: kubectl wait fails at once, rather than waiting, on a CRD whose
# status has no conditions yet ("accessor error: <nil> is of the type
# <nil>"), as a just-created one may on a loaded machine.
wait_for "the operator's CRDs Established" 60 kubectl_node wait --for=condition=Established --timeout=2s \
  crd/prometheuses.monitoring.coreos.com crd/servicemonitors.monitoring.coreos.com \
  crd/prometheusrules.monitoring.coreos.com crd/podmonitors.monitoring.coreos.com
image_of() { awk -v n="$1" '$1 == n {print $2}' "$CLUSTER_DIR/images"; }
sed -e "s|@OPERATOR@|$(image_of "quay.io/prometheus-operator/prometheus-operator:$po_version")|g" \
  -e "s|@RELOADER@|$(image_of "quay.io/prometheus-operator/prometheus-config-reloader:$po_version")|g" \
  -e "s|@PROMETHEUS@|$(image_of "quay.io/prometheus/prometheus:$prometheus_version")|g" \
  -e "s|@PROMETHEUS_VERSION@|$prometheus_version|g" "$root/hack/cluster/monitoring.yaml" |
  kubectl_node apply --server-side --force-conflicts -f - >/dev/null
kubectl_node -n monitoring rollout status deployment/kube-prometheus-stack-operator --timeout=120s >/dev/null
log "monitoring: prometheus-operator $po_version, prometheus $prometheus_version ($((SECONDS - start_all))s)"
# --- The resource metrics API (kubectl top, the HorizontalPodAutoscalers):
# metrics-server, built from its pinned module. It comes up on its own;
# the node test waits for its figures before it needs them.
sed -e "s|@IMAGE@|$(image_of "registry.k8s.io/metrics-server/metrics-server:$ms_version")|g" \
  "$root/hack/cluster/metrics-server.yaml" | kubectl_node apply --server-side --force-conflicts -f - >/dev/null
log "metrics-server $ms_version applied ($((SECONDS - start_all))s)"
# --- The Ingress controller and Gateway API implementation: Gateway API's
# standard CRDs (from the pinned sigs.k8s.io/gateway-api module), then
# Traefik (traefik.yaml), built from its pinned module. It comes up on its
# own; the node test waits for it.
gw_module=sigs.k8s.io/gateway-api
gw_version="$(cd "$root/hack/tools/traefik" && GOWORK=off go list -m -f '{{.Version}}' "$gw_module")"
gw_dir="$(cd "$root/hack/tools/traefik" && GOWORK=off go mod download -json "$gw_module" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
gw_crds=("$gw_dir"/config/crd/standard/gateway.networking.k8s.io_*.yaml)
[ -e "${gw_crds[0]}" ] || die "no Gateway API CRDs under $gw_dir/config/crd/standard"
kubectl_node apply --server-side --force-conflicts "${gw_crds[@]/#/-f=}" >/dev/null
wait_for "Gateway API's CRDs Established" 60 kubectl_node wait --for=condition=Established --timeout=2s \
  crd/gatewayclasses.gateway.networking.k8s.io crd/gateways.gateway.networking.k8s.io \
  crd/httproutes.gateway.networking.k8s.io crd/referencegrants.gateway.networking.k8s.io
sed -e "s|@IMAGE@|$(image_of "docker.io/library/traefik:$traefik_version")|g" "$root/hack/cluster/traefik.yaml" |
  kubectl_node apply --server-side --force-conflicts -f - >/dev/null
log "Gateway API $gw_version, traefik $traefik_version applied ($((SECONDS - start_all))s)"
# --- Certificates: cert-manager's CRDs (from its pinned library module's
# deploy/crds), then its controller and the ClusterIssuers of a CA of the
# local cluster's own (cert-manager.yaml), after Gateway API's CRDs (its
# Gateway shim watches Gateways). It comes up on its own; the node test
# waits for it.
cm_dir="$(cd "$root/hack/tools/certmanager" && GOWORK=off go mod download -json "$cm_module" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
cm_crds=("$cm_dir"/deploy/crds/*.yaml)
[ -e "${cm_crds[0]}" ] || die "no cert-manager CRDs under $cm_dir/deploy/crds"
kubectl_node apply --server-side --force-conflicts "${cm_crds[@]/#/-f=}" >/dev/null
wait_for "cert-manager's CRDs Established" 60 kubectl_node wait --for=condition=Established --timeout=2s \
  crd/certificates.cert-manager.io crd/certificaterequests.cert-manager.io \
  crd/issuers.cert-manager.io crd/clusterissuers.cert-manager.io
sed -e "s|@IMAGE@|$(image_of "quay.io/jetstack/cert-manager-controller:$cm_version")|g" "$root/hack/cluster/cert-manager.yaml" |
  kubectl_node apply --server-side --force-conflicts -f - >/dev/null
log "cert-manager $cm_version applied ($((SECONDS - start_all))s)"
# Every process of the node still runs (one that exited at start says so
# in its log).
for name in registry containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kube-router; do
  alive "$name" || die "$name is not running: $(tail -n 3 "$CLUSTER_DIR/logs/$name.log" 2>/dev/null)"
done
log "up in $((SECONDS - start_all))s, $(kubectl_node get nodes --no-headers | wc -l) node(s): KUBECONFIG=$KUBECONFIG_FILE, registry $REGISTRY"
echo "$KUBECONFIG_FILE"
