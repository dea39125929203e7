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
  pid="$(cat "$CLUSTER_DIR/pids/holder" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -q "tokendata-node-holder" "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

# alive NAME: the node process NAME runs (its pid file and its command).
alive() {
  local pid h
  pid="$(cat "$CLUSTER_DIR/pids/$1" 2>/dev/null)" || return 1
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
# a session of its own, detached, logging to logs/NAME.log, unless NAME
# already runs.
start_node_process() {
  local name="$1"
  shift
  if alive "$name"; then
    return 0
  fi
  local h
  h="$(holder_pid)" || die "the node is not up"
  # 9>&-: the lock of up.sh and down.sh is not the process's to hold.
  nsenter -t "$h" -n -m -- setsid "$@" >>"$CLUSTER_DIR/logs/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$CLUSTER_DIR/pids/$name"
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
