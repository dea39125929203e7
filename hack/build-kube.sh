#!/usr/bin/env bash
# Builds the pinned Kubernetes commands (hack/tools/kube/go.mod) into .bin/:
# kube-apiserver and kubectl (the chart check's API server), and the node's
# kube-controller-manager, kube-scheduler, kubelet and kube-proxy (make
# cluster-up), unless they are there already at that version:
# .bin/kube.version records the pin they were built from, so a changed pin
# (or a missing binary) rebuilds and nothing else does. The first build
# takes minutes (each is a large program); later runs return at once.
# The ldflags set the version the binaries report (`kubectl version`, the
# API server's /version), as Kubernetes' own build does.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/toolcache.sh
. "$root/hack/toolcache.sh"
mod="$root/hack/tools/kube"
bin="$root/.bin"
stamp="$bin/kube.version"

version="$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)"
want="$version $(sha256sum "$mod/go.sum" | cut -c1-16)"
cmds=(kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy)
missing=0
for cmd in "${cmds[@]}"; do
  [ -x "$bin/$cmd" ] || missing=1
done
if [ "$missing" = 0 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
mkdir -p "$bin"
rm -f "$stamp"
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitTreeState=clean"
  ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=$(echo "$version" | cut -d. -f2)"
done
key="$(tool_key "$want" "$ldflags" "${cmds[*]}")"
tool_lock kube
if tool_cached kube "$key" "$bin" "${cmds[@]}"; then
  echo "$want" >"$stamp"
  echo "${cmds[*]} $version: taken from this machine's tool cache ($TOOL_CACHE/kube/$key)"
  exit 0
fi
echo "building ${cmds[*]} $version into .bin/ (minutes on first run)"
start=$SECONDS
# One go build for the six: the packages they share compile once and the
# links run side by side (each binary lands in .bin/ under its own name).
(cd "$mod" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/" "${cmds[@]/#/k8s.io/kubernetes/cmd/}")
tool_store kube "$key" "$bin" "${cmds[@]}"
echo "$want" >"$stamp"
echo "built ${cmds[*]} $version in $((SECONDS - start))s"
"$bin/kubectl" version --client
