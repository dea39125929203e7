#!/usr/bin/env bash
# Installs what the local cluster (make cluster-up) needs and a fresh
# machine lacks, from Debian's packages: containerd (its CRI serves the
# kubelet), runc, the CNI plugins (bridge, host-local, portmap, loopback),
# iptables and ipset (kube-proxy's and kube-router's rules), etcd-server
# (the control plane's store), docker-registry (the node's registry),
# conntrack; and what the stand-in images are made of (hack/imagebuild):
# catatonit (the pod sandbox's pause process), busybox-static, wget, dash, nginx,
# redis-server and redis-tools, ca-certificates. Idempotent and quick when
# everything is present. The packages' services are not started (the node
# starts its own, in its own namespaces).
set -euo pipefail
# shellcheck source=hack/apt.sh
. "$(dirname "$0")/apt.sh"

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ] || [ -x "/sbin/$1" ]; }
missing=()
need() { # need PACKAGE FILE...
  local pkg="$1"
  shift
  for f in "$@"; do
    case "$f" in
      /*) [ -e "$f" ] || { missing+=("$pkg"); return; } ;;
      *) have "$f" || { missing+=("$pkg"); return; } ;;
    esac
  done
}
need containerd containerd containerd-shim-runc-v2 ctr
need runc runc
need containernetworking-plugins /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback
need iptables iptables
need ipset ipset
need etcd-server etcd
need docker-registry docker-registry
need conntrack conntrack
need catatonit catatonit
need busybox-static /bin/busybox
need wget wget
need dash dash
need nginx nginx
need redis-server redis-server
need redis-tools redis-cli
need ca-certificates /etc/ssl/certs/ca-certificates.crt
need iproute2 ip
need util-linux nsenter unshare
need openssl openssl
need curl curl
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
echo "installing the local cluster's dependencies: ${missing[*]}"
# Keep the maintainer scripts from starting containerd, etcd, the
# registry, nginx or redis.
apt_install --no-start "${missing[@]}"
