#!/usr/bin/env bash
# make cluster-down: stops the local cluster of hack/cluster/up.sh and puts
# the host back as up.sh found it (host.record): every process of the node
# and its pods ended (only those: found by the node's namespaces and
# kubelet's kubepods cgroups), the kubepods cgroups removed, the netns and
# veth deleted (the bridge, iptables rules and ipsets were only in it), the
# kernel tunables kubelet set restored. The mounts were only in the node's
# mount namespace, gone with its last process. The registry's storage
# ($CLUSTER_DIR/registry) is kept, as .bin/ is: a cache of what was built.
# Logs of the last run stay in $CLUSTER_DIR/logs.last. Idempotent.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
require_root

if owner="$(cat "/sys/class/net/$HOST_IF/ifalias" 2>/dev/null)" && [ -n "$owner" ] && [ "$owner" != "$CLUSTER_DIR" ]; then
  die "the local cluster up on this machine is $owner's, not this checkout's: run make cluster-down there"
fi
if [ -z "${CLUSTER_LOCKED:-}" ]; then
  mkdir -p "$CLUSTER_DIR"
  exec 9>"$CLUSTER_DIR/lock"
  flock -w 600 9 || die "another cluster-up or cluster-down holds $CLUSTER_DIR/lock"
fi

pid_of() { cat "$CLUSTER_DIR/pids/$1" 2>/dev/null || true; }

# kubepods_pids: every process in kubelet's cgroups (the pods' containers).
kubepods_pids() {
  local f
  for f in "$CGROUP_ROOT"/*/kubepods; do
    [ -d "$f" ] || continue
    find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null || true
  done | sort -u
}

# The other nodes first (NODES), each with what it made.
for k in $(workers); do
  CLUSTER_LOCKED=1 "$root/hack/cluster/worker.sh" down "$k"
done

h="$(holder_pid || true)"
net=""
if [ -e "/run/netns/$NETNS" ]; then
  net="net:[$(stat -L -c %i "/run/netns/$NETNS")]"
fi
mnt=""
[ -n "$h" ] && mnt="$(readlink "/proc/$h/ns/mnt")"
in_node() { # in_node PID: PID is a process of the node
  [ -n "$1" ] && [ -n "$net" ] && [ "$(readlink "/proc/$1/ns/net" 2>/dev/null)" = "$net" ]
}
if [ -n "$net$mnt" ]; then
  log "stopping the node"
  # kubelet first, so that it restarts nothing; then the pods' processes.
  for name in kubelet kube-router kube-proxy; do
    p="$(pid_of "$name")"
    if in_node "$p"; then stop "$p"; fi
  done
  for _ in 1 2 3 4 5; do
    mapfile -t pods < <(kubepods_pids)
    [ "${#pods[@]}" -eq 0 ] && break
    kill -KILL "${pods[@]}" 2>/dev/null || true
    sleep 0.5
  done
  for name in containerd registry kube-controller-manager kube-scheduler kube-apiserver etcd; do
    p="$(pid_of "$name")"
    if in_node "$p"; then stop "$p"; fi
  done
  mapfile -t rest < <(node_procs "$net" "$mnt" | grep -vx "${h:-none}")
  stop "${rest[@]}"
  [ -n "$h" ] && stop "$h"
fi

# kubelet's cgroups, deepest first (a cgroup is removed with rmdir once
# empty), unless they were there before up.
record="$CLUSTER_DIR/host.record"
for f in "$CGROUP_ROOT"/*/kubepods; do
  [ -d "$f" ] || continue
  if grep -qx "cgroup-existed ${f%/kubepods}/kubepods" "$record" 2>/dev/null; then
    continue
  fi
  find "$f" -depth -type d -exec rmdir {} + 2>/dev/null || true
  [ -d "$f" ] && echo "cluster-down: $f is still there (a process left in it?)" >&2
done

# The host's end of the pair first: deleting it deletes its peer at once.
# Deleted after the namespace, the pair goes when the kernel tears the
# namespace down, in the background: a link seen a moment before could be
# gone when deleted ("Cannot find device"), and cluster-down would fail.
if ip link show "$HOST_IF" >/dev/null 2>&1; then
  if ! ip link del "$HOST_IF" && ip link show "$HOST_IF" >/dev/null 2>&1; then
    echo "cluster-down: could not delete $HOST_IF" >&2
    exit 1
  fi
fi
if ip netns list 2>/dev/null | grep -qw "$NETNS"; then
  ip netns del "$NETNS"
fi
if [ -f "$record" ]; then
  while read -r kind k v; do
    case "$kind" in
      sysctl) sysctl -qw "$k=$v" ;;
    esac
  done <"$record"
  # ip netns made /run/netns a mount point (and the folder, on a fresh
  # host) when it was none: undone once no other namespace is named there.
  # What up found there is kept.
  if [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
    if ! grep -qx netns-mount-existed "$record"; then
      for _ in 1 2 3 4; do # stacked, when two ip commands raced to make it
        mountpoint -q /run/netns || break
        # -n: no /run/mount on the host (up.sh)
        umount -n /run/netns || die "cannot unmount /run/netns, which cluster-up made a mount point"
      done
    fi
    if ! grep -qx netns-dir-existed "$record"; then
      rmdir /run/netns || die "cannot remove /run/netns, which cluster-up made"
    fi
  fi
fi

# Nothing of the node may still be mounted on the host before its files go.
if findmnt -rn -o TARGET | grep -q "^$CLUSTER_DIR/"; then
  die "mounts under $CLUSTER_DIR remain on the host: $(findmnt -rn -o TARGET | grep "^$CLUSTER_DIR/" | head -3 | tr '\n' ' ')"
fi
if [ -d "$CLUSTER_DIR/logs" ]; then
  rm -rf "$CLUSTER_DIR/logs.last"
  mv "$CLUSTER_DIR/logs" "$CLUSTER_DIR/logs.last"
fi
rm -rf --one-file-system "$CLUSTER_DIR"/{pids,run,varlib,varlog,cni,certs.d,pki,nodes} \
  "$CLUSTER_DIR"/*.kubeconfig "$CLUSTER_DIR"/kubeconfig "$CLUSTER_DIR"/*.yaml "$CLUSTER_DIR"/*.yml \
  "$CLUSTER_DIR"/*.toml "$CLUSTER_DIR"/resolv.conf "$CLUSTER_DIR"/images "$CLUSTER_DIR"/values-local.yaml "$CLUSTER_DIR"/holder.ready "$record"
log "down: the host is as up.sh found it"
