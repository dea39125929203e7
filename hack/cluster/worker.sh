#!/usr/bin/env bash
# hack/cluster/worker.sh up|lost|down K: node K (2 to 9) of the local
# cluster, after the first one (lib.sh says how it is wired).
#
#   up K     brings it up and waits until it is Ready: its namespaces, its
#            kubelet's cgroups, containerd, kubelet, kube-proxy, then its
#            pod range (given by the controller-manager) in its CNI
#            configuration and in the first node's routes, kube-router's
#            firewall. make cluster-up runs it for NODES=3.
#   lost K   the node lost at once, as when a machine loses power: every
#            process of it and of its pods killed, its link to the others
#            down. Nothing tells Kubernetes; its Node object stays.
#   down K   stops it and removes what up made (what lost left included):
#            processes, cgroups, namespaces, files. cluster-down runs it
#            for each node before the first one's.
#
# Needs root and the first node up (for up). docs/local-cluster.md.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
require_root
action="${1:-}"
[ "$#" -eq 2 ] || die "usage: hack/cluster/worker.sh up|lost|down K"
if [ -z "${CLUSTER_LOCKED:-}" ]; then
  mkdir -p "$CLUSTER_DIR"
  exec 9>"$CLUSTER_DIR/lock"
  flock -w 600 9 || die "another cluster-up or cluster-down holds $CLUSTER_DIR/lock"
fi
first_holder="$(holder_pid || true)"
use_worker "$2"

# The first node's namespaces (the veth's other end, the routes).
in_first() {
  [ -n "$first_holder" ] || die "the first node is not up"
  nsenter -t "$first_holder" -n -- "$@"
}

# The hierarchies of the kubelet's cgroups: each one's folder, once.
hierarchies() {
  local h
  for h in "$CGROUP_ROOT"/*/; do
    [ -L "${h%/}" ] && continue
    echo "${h%/}"
  done
}

kill_node() { # kill_node SIGNAL: every process of the node and its pods
  local net="" mnt="" h
  [ -e "/run/netns/$W_NETNS" ] && net="net:[$(stat -L -c %i "/run/netns/$W_NETNS")]"
  h="$(holder_pid || true)"
  [ -n "$h" ] && mnt="$(readlink "/proc/$h/ns/mnt")"
  local pids=()
  mapfile -t pids < <(
    node_procs "$net" "$mnt"
    cgroup_pids
  )
  if [ "${#pids[@]}" -gt 0 ]; then
    if [ "$1" = KILL ]; then
      kill -KILL "${pids[@]}" 2>/dev/null || true
    else
      stop "${pids[@]}"
    fi
  fi
}

# cgroup_pids: the processes in the node's cgroups (its pods').
cgroup_pids() {
  local h
  while read -r h; do
    if [ -d "$h/$W_CGROUP" ]; then
      find "$h/$W_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null || true
    fi
  done < <(hierarchies)
}

case "$action" in
up)
  [ -n "$first_holder" ] || die "the first node is not up: make cluster-up"
  # A node whose holder is gone (lost, or killed) lost its mounts and
  # processes with it: what is left goes first.
  if ! holder_pid >/dev/null && [ -d "$PIDS_DIR" ]; then
    log "node $W_NAME is partly gone: cleaning it first"
    CLUSTER_LOCKED=1 "$0" down "$2"
  fi
  mkdir -p "$W_DIR"/{run,varlib,varlog,cni} "$PIDS_DIR" "$LOGS_DIR"
  # The kubelet's cgroups under /$W_CGROUP of each hierarchy (it wants the
  # folder there). cpuset's new folders start with no CPU and no memory
  # node: the parent's are copied. cpu's get the weight the first node's
  # /kubepods gets (1024 a core), not one core's, so that under load the
  # pods of every node weigh the same.
  while read -r h; do
    [ -d "$h/$W_CGROUP" ] || mkdir "$h/$W_CGROUP"
    if [ -f "$h/cpuset.cpus" ] && [ -z "$(cat "$h/$W_CGROUP/cpuset.cpus")" ]; then
      cat "$h/cpuset.cpus" >"$h/$W_CGROUP/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/$W_CGROUP/cpuset.mems"
    fi
    if [ -f "$h/$W_CGROUP/cpu.shares" ]; then
      echo $(($(nproc) * 1024)) >"$h/$W_CGROUP/cpu.shares"
    fi
  done < <(hierarchies)
  if ! ip netns list | grep -qw "$W_NETNS"; then
    ip netns add "$W_NETNS"
  fi
  if ! ip -n "$W_NETNS" link show eth0 >/dev/null 2>&1; then
    in_first ip link del "$W_LINK" 2>/dev/null || true
    ip link add "$W_LINK" netns "$NETNS" type veth peer name eth0 netns "$W_NETNS"
  fi
  in_first sh -ec "
    ip addr show dev $W_LINK | grep -q '$W_GW/' || ip addr add $W_GW/30 dev $W_LINK
    ip link set $W_LINK up
  "
  node_network "$W_NETNS" "$W_IP" "$W_GW"
  if ! holder_pid >/dev/null; then
    start_holder "$W_NETNS" "$W_DIR"
  fi
  pod_masquerade
  kubelet_certificate "$W_NAME"
  write_containerd_config "$W_DIR/containerd.toml" "$W_DIR/cni"
  start_node_process containerd containerd --config "$W_DIR/containerd.toml"
  wait_for "containerd of $W_NAME" 60 in_node ctr --address /run/containerd/containerd.sock version
  write_kubelet_config "$W_DIR/kubelet.yaml" "/$W_CGROUP"
  start_node_process kubelet "$bin/kubelet" --config="$W_DIR/kubelet.yaml" \
    --kubeconfig="$CLUSTER_DIR/$W_NAME.kubeconfig" --hostname-override="$W_NAME" --node-ip="$W_IP"
  write_kube_proxy_config "$W_DIR/kube-proxy.yaml" "$W_NAME" "$W_IP"
  start_node_process kube-proxy "$bin/kube-proxy" --config="$W_DIR/kube-proxy.yaml"
  wait_for "node $W_NAME registered" 120 kubectl_node get node "$W_NAME"
  cidr="$(pod_cidr_of "$W_NAME")"
  write_cni_config "$W_DIR/cni/10-tokendata.conflist" "$cidr"
  in_first ip route replace "$cidr" via "$W_IP" dev "$W_LINK"
  wait_for "node $W_NAME Ready" 120 kubectl_node wait --for=condition=Ready "node/$W_NAME" --timeout=2s
  start_kube_router "$W_NAME"
  for name in containerd kubelet kube-proxy kube-router; do
    alive "$name" || die "$name of $W_NAME is not running: $(tail -n 3 "$LOGS_DIR/$name.log" 2>/dev/null)"
  done
  log "node $W_NAME Ready: $W_IP, pods $cidr"
  ;;
lost)
  kill_node KILL
  kill_node KILL # what was forked in between
  if [ -e "/run/netns/$W_NETNS" ]; then
    ip -n "$W_NETNS" link set eth0 down 2>/dev/null || true
  fi
  log "node $W_NAME lost: its processes and pods killed, its link down"
  ;;
down)
  # kubelet first, so that it restarts nothing; then the pods' processes,
  # until none is left; then the rest.
  p="$(cat "$PIDS_DIR/kubelet" 2>/dev/null || true)"
  if [ -n "$p" ] && alive kubelet; then stop "$p"; fi
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    mapfile -t pods < <(cgroup_pids)
    [ "${#pods[@]}" -eq 0 ] && break
    kill -KILL "${pods[@]}" 2>/dev/null || true
    sleep 0.5
  done
  kill_node TERM
  kill_node KILL
  # Deepest first (a cgroup is removed with rmdir once empty); a process
  # killed a moment ago may still hold one.
  while read -r h; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [ -d "$h/$W_CGROUP" ] || break
      find "$h/$W_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$h/$W_CGROUP" ] && sleep 0.5
    done
    if [ -d "$h/$W_CGROUP" ]; then
      echo "cluster: $h/$W_CGROUP is still there (a process left in it?)" >&2
    fi
  done < <(hierarchies)
  # The pair deleted by its node's end first: deleting the namespace
  # tears it down in the background (and the first node's route with it).
  ip -n "$W_NETNS" link del eth0 2>/dev/null || true
  if ip netns list 2>/dev/null | grep -qw "$W_NETNS"; then
    ip netns del "$W_NETNS"
  fi
  if findmnt -rn -o TARGET | grep -q "^$W_DIR/"; then
    die "mounts under $W_DIR remain on the host"
  fi
  rm -rf --one-file-system "$W_DIR" "$PIDS_DIR"
  log "node $W_NAME down"
  ;;
*)
  die "usage: hack/cluster/worker.sh up|lost|down K"
  ;;
esac
