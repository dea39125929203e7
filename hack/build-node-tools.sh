#!/usr/bin/env bash
# Builds the local cluster's pinned Go tools into .bin/ (make cluster-up runs
# this): CoreDNS (hack/tools/coredns), kube-router (hack/tools/kuberouter),
# the Prometheus Operator with its config reloader (hack/tools/promoperator)
# and the Prometheus it runs (hack/tools/prometheus),
# unless they are there already from the same pin: .bin/<tool>.version
# records the version and go.sum each was built from, so a changed pin (or a
# missing binary) rebuilds and nothing else does; a pin built once on this
# machine is taken from its tool cache (hack/toolcache.sh). Static (CGO_ENABLED=0):
# CoreDNS, the operator's two programs and Prometheus run in containers of
# their own images (hack/imagebuild).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/toolcache.sh
. "$root/hack/toolcache.sh"
bin="$root/.bin"
mkdir -p "$bin"

build() { # build <tool dir> <module> <package> <binary>
  local mod="$root/hack/tools/$1" module="$2" pkg="$3" out="$bin/$4" stamp="$bin/$4.version"
  local version want
  version="$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' "$module")"
  want="$version $(sha256sum "$mod/go.sum" | cut -c1-16)"
  if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  rm -f "$stamp"
  local key
  key="$(tool_key "$want" "$pkg" "-trimpath -s -w" "$(cat "$mod"/*.go 2>/dev/null | sha256sum)")"
  (
    tool_lock "$4"
    if tool_cached "$4" "$key" "$bin" "$4"; then
      echo "$4 $version: taken from this machine's tool cache"
      exit 0
    fi
    echo "building $4 $version into .bin/"
    start=$SECONDS
    (cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" "$pkg")
    tool_store "$4" "$key" "$bin" "$4"
    echo "built $4 $version in $((SECONDS - start))s"
  )
  echo "$want" >"$stamp"
}

build coredns github.com/coredns/coredns github.com/tokendata/tokendata/hack/tools/coredns coredns
build kuberouter github.com/cloudnativelabs/kube-router/v2 github.com/cloudnativelabs/kube-router/v2/cmd/kube-router kube-router
build promoperator github.com/prometheus-operator/prometheus-operator \
  github.com/prometheus-operator/prometheus-operator/cmd/operator prometheus-operator
build promoperator github.com/prometheus-operator/prometheus-operator \
  github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader prometheus-config-reloader
build prometheus github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/prometheus prometheus
