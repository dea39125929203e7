# shellcheck shell=bash
# Shared by hack/cluster/up.sh and down.sh: where the local cluster lives
# and how its processes are started and found.
#
# The node is one network namespace and one mount namespace of its own:
#   - network: $NETNS, reached from the host over one veth pair
#     ($HOST_IF $HOST_IP <-> $NODE_IP); its bridge, iptables rules, ipsets
#     and net.* sysctls (ip_forward, bridge-nf-call-iptables) exist only
#     in it, and go with it;
#   - mount: private, made by a holder process; $CLUSTER_DIR/{run,varlib,
#     varlog} are bound over /run, /var/lib and /var/log inside it, so
#     containerd, kubelet and CNI keep their default paths and every mount
#     they make (rootfs overlays, volumes, network namespaces) stays in it
#     and is gone when it ends.
# Every process of the node (etcd, the control plane, containerd, kubelet,
# kube-proxy, kube-router, the registry) runs in both, started by
# start_node_process, its pid in $CLUSTER_DIR/pids/, its log in
# $CLUSTER_DIR/logs/. What the node changes outside them (the kernel
# tunables kubelet sets, its cgroups, the netns and veth) is recorded by
# up.sh in $CLUSTER_DIR/host.record and put back by down.sh.
#
# More nodes (NODES=3 make cluster-up): node K (2 to NODES) is a kubelet,
# containerd, kube-proxy and kube-router in namespaces of its own, as the
# first node's (the control plane's) are, its files in $CLUSTER_DIR/nodes/
# nodeK, its pids and logs in pids/nodeK and logs/nodeK. It is wired to
# the first node only, by a veth pair (tdwK 10.231.K.1 in the first node's
# netns, eth0 10.231.K.2 in its own), its default route through it: the
# first node routes every node's pod range, so pods reach each other
# across nodes unmasqueraded (the NetworkPolicies see their addresses) and
# the host forwards nothing. Its kubelet's cgroups are under
# /tokendata-nodeK of each hierarchy (cgroupRoot), apart from the first
# node's /kubepods. hack/cluster/worker.sh brings one up, kills it (a node
# lost) and removes it.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$root/.bin"
CLUSTER_DIR="${CLUSTER_DIR:-$root/.cluster}"
NETNS="${CLUSTER_NETNS:-tokendata-node}"
HOST_IF="${CLUSTER_HOST_IF:-tdnode0}"
HOST_IP=10.231.0.1
NODE_IP=10.231.0.2
POD_CIDR=10.232.0.0/16
NODE_POD_CIDR=10.232.0.0/24
SERVICE_CIDR=10.233.0.0/16
API_SERVICE_IP=10.233.0.1
DNS_IP=10.233.0.10
NODE_NAME=tokendata-node
REGISTRY="$NODE_IP:5000"
PAUSE_IMAGE=registry.k8s.io/pause:3.10
KUBECONFIG_FILE="$CLUSTER_DIR/kubeconfig"
# The kernel tunables kubelet sets at start (its protectKernelDefaults is
# off): recorded at up, put back at down.
KERNEL_TUNABLES=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# The cgroup v1 hierarchies kubelet makes its kubepods tree in.
CGROUP_ROOT=/sys/fs/cgroup
# The node the functions below act on: the first one unless use_worker
# chose another.
PIDS_DIR="$CLUSTER_DIR/pids"
LOGS_DIR="$CLUSTER_DIR/logs"
HOLDER_NAME=tokendata-node-holder

# use_worker K: the functions below act on node K (2 and up), and W_*
# name its parts.
use_worker() {
  [[ "$1" =~ ^[2-9]$ ]] || die "node $1: the nodes after the first are numbered 2 to 9"
  W_NAME="tokendata-node$1"
  W_NETNS="tokendata-node$1"
  W_LINK="tdw$1"
  W_GW="10.231.$1.1"
  W_IP="10.231.$1.2"
  W_DIR="$CLUSTER_DIR/nodes/node$1"
  W_CGROUP="tokendata-node$1"
  PIDS_DIR="$CLUSTER_DIR/pids/node$1"
  LOGS_DIR="$CLUSTER_DIR/logs/node$1"
  HOLDER_NAME="tokendata-node$1-holder"
}

# workers: the numbers of the nodes after the first that have a pid
# folder (brought up, or partly gone).
workers() {
  local d
  for d in "$CLUSTER_DIR"/pids/node[2-9]; do
    [ -d "$d" ] && echo "${d##*/node}"
  done
  true
}

log() { printf '%s cluster: %s\n' "$(date +%H:%M:%S)" "$*"; }
die() {
  printf 'cluster: %s\n' "$*" >&2
  exit 1
}

require_root() {
  [ "$(id -u)" -eq 0 ] || die "the local cluster needs root (network and mount namespaces, cgroups)"
}

# holder_pid prints the pid of the node's holder process, if it runs.
holder_pid() {
  local pid
  pid="$(cat "$PIDS_DIR/holder" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -q "$HOLDER_NAME" "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

# alive NAME: the node process NAME runs (its pid file and its command).
alive() {
  local pid h
  pid="$(cat "$PIDS_DIR/$1" 2>/dev/null)" || return 1
  h="$(holder_pid)" || return 1
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$(readlink "/proc/$h/ns/net")" ]
}

# in_node CMD...: runs CMD in the node's namespaces, in the foreground.
in_node() {
  local h
  h="$(holder_pid)" || die "the node is not up"
  nsenter -t "$h" -n -m -- "$@"
}

# start_node_process NAME CMD...: starts CMD in the node's namespaces, in
# a session of its own, detached, logging to $LOGS_DIR/NAME.log, unless
# NAME already runs. The control plane, the kubelets, kube-proxy and
# kube-router run at nice -10: the nodes share the host's cores with
# their pods and claim them all (none is reserved, as kubeReserved and
# systemReserved do on a real node). Under a drain's load a run saw the
# endpoints of the cache's pods late in a node's rules, seconds after
# the pods had gone or come (connections to its Service refused or
# unrouted): the daemons that carry them go first.
# containerd and the registry keep nice 0: the pods' processes descend
# from containerd and would inherit its priority.
start_node_process() {
  local name="$1"
  shift
  if alive "$name"; then
    return 0
  fi
  local h prio=-10
  case "$name" in containerd | registry) prio=0 ;; esac
  h="$(holder_pid)" || die "the node is not up"
  # 9>&-: the lock of up.sh and down.sh is not the process's to hold.
  nsenter -t "$h" -n -m -- setsid nice -n "$prio" "$@" >>"$LOGS_DIR/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$PIDS_DIR/$name"
  disown
}

# wait_for WHAT SECONDS CMD...: runs CMD until it succeeds, at most SECONDS.
wait_for() {
  local what="$1" limit="$2"
  shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      die "$what: not ready after ${limit}s (logs: $CLUSTER_DIR/logs/)"
    fi
    sleep 0.5
  done
}

kubectl_node() { "$bin/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# pod_cidr_of NAME: node NAME's pod range, once the controller-manager
# gave it one (up to 60 s after the node registered).
pod_cidr_of() {
  local cidr="" start=$SECONDS
  while [ -z "$cidr" ]; do
    cidr="$(kubectl_node get node "$1" -o jsonpath='{.spec.podCIDR}' 2>/dev/null || true)"
    [ -n "$cidr" ] && break
    [ $((SECONDS - start)) -ge 60 ] && die "node $1: no pod range after 60s"
    sleep 0.5
  done
  echo "$cidr"
}

# stop PID...: SIGTERM, up to 10 s, then SIGKILL.
stop() {
  [ "$#" -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 100); do
    local left=0
    for p in "$@"; do
      [ -d "/proc/$p" ] && left=1
    done
    [ "$left" = 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

# node_procs NET MNT: pids of every process in a node's network namespace
# (its inode NET, from the netns' file) or in its holder's mount
# namespace MNT: the node's processes and containerd's shims, even when
# the holder is gone.
node_procs() {
  local net="$1" mnt="$2" p
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    [ "$p" = "$$" ] && continue
    if { [ -n "$net" ] && [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$net" ]; } ||
      { [ -n "$mnt" ] && [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$mnt" ]; }; then
      echo "$p"
    fi
  done
}

# node_network NETNS IP GATEWAY: a node's network namespace: its end of
# the veth pair (eth0) at IP/30, its default route through GATEWAY, and
# the forwarding and bridge sysctls its pods need (only in it).
node_network() {
  ip netns exec "$1" sh -ec "
    ip addr show dev eth0 | grep -q '$2/' || ip addr add $2/30 dev eth0
    ip link set lo up
    ip link set eth0 up
    ip route show default | grep -q . || ip route add default via $3
    sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
  "
}

# start_holder NETNS DIR: the holder of a node's private mount namespace,
# in the network namespace NETNS, with DIR/{run,varlib,varlog} bound over
# /run, /var/lib and /var/log; its name ($HOLDER_NAME) marks it
# (holder_pid checks it). mount -n: the first bind would otherwise make
# the host's /run/mount (util-linux's record of mount options, utab) on a
# host that has none, and leave it.
start_holder() {
  local netns="$1" dir="$2"
  rm -f "$dir/holder.ready"
  nsenter --net="/run/netns/$netns" -- unshare --mount --propagation private -- \
    setsid bash -c '
      set -e
      # The copies of the other nodes network namespaces this new mount
      # namespace got would keep them alive past their ip netns del.
      for f in /run/netns/*; do
        if mountpoint -q "$f"; then umount -n "$f"; fi
      done
      mount -n --make-rshared /
      mount -n --bind "$1/run" /run
      mount -n --bind "$1/varlib" /var/lib
      mount -n --bind "$1/varlog" /var/log
      touch "$1/holder.ready"
      exec -a "$2" sleep infinity
    ' "$HOLDER_NAME" "$dir" "$HOLDER_NAME" >"$LOGS_DIR/holder.log" 2>&1 </dev/null 9>&- &
  echo $! >"$PIDS_DIR/holder"
  disown
  wait_for "the node's namespaces" 10 test -f "$dir/holder.ready"
}

# write_containerd_config FILE CNI_DIR: containerd's configuration for a
# node whose CNI configuration is in CNI_DIR.
write_containerd_config() {
  cat >"$1" <<EOC
# containerd for a node of the local cluster (in its namespaces: /var/lib
# and /run are its own folders, bound over them).
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # No container gets an oom_score_adj below containerd's own: lowering it
  # needs CAP_SYS_RESOURCE, which a machine may withhold from root (runc
  # then fails every pod sandbox, whose adjustment is -998).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$2"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$CLUSTER_DIR/certs.d"
EOC
}

# move_if_changed FILE: FILE.new becomes FILE when they differ (a process
# watching FILE sees no write otherwise), and is removed when they do not.
move_if_changed() {
  if cmp -s "$1.new" "$1"; then
    rm "$1.new"
  else
    mv "$1.new" "$1"
  fi
}

# write_cni_config FILE SUBNET: the pods' network of a node: a bridge with
# the node's pod range (containerd watches the folder: written only when
# it changed). No masquerade by the bridge (it would hide a pod's
# address from the pods of other nodes, and from their NetworkPolicies):
# pod_masquerade does it for what leaves the pods' range.
write_cni_config() {
  cat >"$1.new" <<EOC
{
  "cniVersion": "1.0.0",
  "name": "tokendata",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "tdk0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$2"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOC
  move_if_changed "$1"
}

# pod_masquerade: in the node's network namespace, what the pods send out
# of the cluster's pod range leaves with the node's address.
pod_masquerade() {
  local rule=(POSTROUTING -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "tokendata: pods leaving the pod range" -j MASQUERADE)
  in_node iptables -w -t nat -C "${rule[@]}" 2>/dev/null || in_node iptables -w -t nat -A "${rule[@]}"
}

# write_kubelet_config FILE [CGROUP_ROOT]: kubelet's configuration, its
# pods' cgroups under CGROUP_ROOT (default: /kubepods of each hierarchy).
write_kubelet_config() {
  cat >"$1" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Kubernetes 1.35 refuses cgroup v1 unless told; this machine has only v1.
failCgroupV1: false
cgroupDriver: cgroupfs
${2:+cgroupRoot: $2
}containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $CLUSTER_DIR/pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: $CLUSTER_DIR/resolv.conf
failSwapOn: false
serializeImagePulls: false
# A shared development machine: evict only when truly short.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
# Its own oom_score_adj left as it is (lowering it needs CAP_SYS_RESOURCE).
oomScoreAdj: 0
EOC
}

# write_kube_proxy_config FILE NODE_NAME NODE_IP: kube-proxy's
# configuration, written aside and moved in only when it changed:
# kube-proxy watches its configuration file and exits on any write to it,
# even of the same content, which killed it on a second cluster-up
# (2026-12-01).
write_kube_proxy_config() {
  cat >"$1.new" <<EOC
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $CLUSTER_DIR/admin.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $2
bindAddress: $3
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# The node's netns has no conntrack table limits of its own to set.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
oomScoreAdj: 0
EOC
  move_if_changed "$1"
}

# start_kube_router NODE_NAME: kube-router's firewall, enforcing the
# NetworkPolicies for the pods of NODE_NAME. It finds its node object at
# start (and exits without it): after the kubelet registered it.
start_kube_router() {
  start_node_process kube-router "$bin/kube-router" --kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
    --run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
    --hostname-override="$1" --service-cluster-ip-range="$SERVICE_CIDR" \
    --metrics-port=0 --health-port=0
}

# kubelet_certificate NAME: a client certificate for node NAME's kubelet
# (group system:nodes, as the Node authorizer wants) and its kubeconfig,
# $CLUSTER_DIR/NAME.kubeconfig.
kubelet_certificate() {
  local pki="$CLUSTER_DIR/pki" name="$1"
  [ -f "$CLUSTER_DIR/$name.kubeconfig" ] && return 0
  (
    cd "$pki"
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/O=system:nodes/CN=system:node:$name" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 3650 \
      -extfile <(echo "extendedKeyUsage=clientAuth") 2>/dev/null
    rm -f "$name.csr"
  )
  write_kubeconfig "$name"
}

# write_kubeconfig WHO: $CLUSTER_DIR/WHO.kubeconfig, the API server's
# address and the client certificate pki/WHO.crt.
write_kubeconfig() {
  cat >"$CLUSTER_DIR/$1.kubeconfig" <<EOC
apiVersion: v1
kind: Config
clusters:
  - name: tokendata-local
    cluster:
      server: https://$NODE_IP:6443
      certificate-authority: $CLUSTER_DIR/pki/ca.crt
users:
  - name: $1
    user:
      client-certificate: $CLUSTER_DIR/pki/$1.crt
      client-key: $CLUSTER_DIR/pki/$1.key
contexts:
  - name: tokendata-local
    context: {cluster: tokendata-local, user: $1}
current-context: tokendata-local
EOC
}
