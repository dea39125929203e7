#!/usr/bin/env bash
# Builds the local cluster's pinned Go tools into .bin/ (make cluster-up runs
# this): CoreDNS (hack/tools/kube/coredns), kube-router and the Prometheus
# Operator with its config reloader, all in the Kubernetes commands' module
# (hack/tools/kube), whose libraries they share, metrics-server
# (hack/tools/metricsserver) and the Prometheus the operator runs
# (hack/tools/prometheus), each in a module of its own, cert-manager's
# controller (hack/tools/certmanager: this project's command on its
# library, the module of its own command not being served) and Traefik
# (hack/tools/traefik, built from a copy of its own module),
# unless they are there already from the same pin: .bin/<tool>.version
# records the version and go.sum each was built from, so a changed pin (or a
# missing binary) rebuilds and nothing else does; a pin built once on this
# machine is taken from its tool cache (hack/toolcache.sh). Static (CGO_ENABLED=0):
# CoreDNS, the operator's two programs, metrics-server, cert-manager, Traefik
# and Prometheus run in
# containers of their own images (hack/imagebuild).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/toolcache.sh
. "$root/hack/toolcache.sh"
bin="$root/.bin"
mkdir -p "$bin"

# PLUGINS, when set for a build, names the only service discoveries of
# Prometheus that are built in (its plugins/plugins.go, the list Prometheus'
# own `make plugins` writes from plugins.yml so that a build can leave some
# out). The local cluster's Prometheus is given Kubernetes service discovery
# alone, the only one the operator's configuration for ServiceMonitors uses:
# the other twenty-two pull in the clouds' SDKs (AWS, Azure, Google, ...),
# most of a cold build's work.
build() { # build <tool dir> <module> <package> <binary>
  local mod="$root/hack/tools/$1" module="$2" pkg="$3" out="$bin/$4" stamp="$bin/$4.version"
  local version want
  version="$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' "$module")"
  want="$version $(sha256sum "$mod/go.sum" | cut -c1-16)${PLUGINS:+ plugins: $PLUGINS}"
  # A builder of its own (its changes to the module) is part of the pin.
  if [ -n "${BUILDER:-}" ]; then
    want="$want builder: $({ declare -f "$BUILDER"; cat "$mod"/*/go.mod; } | sha256sum | cut -c1-16)"
  fi
  if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  rm -f "$stamp"
  local key
  key="$(tool_key "$want" "$pkg" "-trimpath -s -w" "$(cat "$mod"/*.go "$mod"/*/*.go 2>/dev/null | sha256sum)")"
  (
    tool_lock "$4"
    if tool_cached "$4" "$key" "$bin" "$4"; then
      echo "$4 $version: taken from this machine's tool cache"
      exit 0
    fi
    echo "building $4 $version into .bin/"
    start=$SECONDS
    if [ -n "${BUILDER:-}" ]; then
      "$BUILDER" "$mod" "$module" "$pkg" "$out"
    elif [ -n "${PLUGINS:-}" ]; then
      build_plugins "$mod" "$module" "$pkg" "$out"
    else
      (cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" "$pkg")
    fi
    tool_store "$4" "$key" "$bin" "$4"
    echo "built $4 $version in $((SECONDS - start))s"
  )
  echo "$want" >"$stamp"
}

# build_plugins <tool dir> <module> <package> <out>: the build of a Prometheus
# whose plugins/plugins.go registers only $PLUGINS. Go builds no edited file
# of its module cache, so the module is copied to a temporary folder, its
# plugins.go written there, and the wrapper's go.mod (as a -modfile copy,
# with its go.sum) replaces the module by that folder: every dependency
# stays the wrapper's pinned one.
build_plugins() {
  local mod="$1" module="$2" pkg="$3" out="$4" src tmp p
  src="$(cd "$mod" && GOWORK=off go list -m -f '{{.Dir}}' "$module")"
  tmp="$(mktemp -d)"
  cp -r "$src" "$tmp/module"
  chmod -R u+w "$tmp/module"
  {
    echo '// Written by hack/build-node-tools.sh: the service discoveries built in.'
    echo
    echo 'package plugins'
    echo
    echo 'import ('
    for p in $PLUGINS; do
      [ -d "$tmp/module/discovery/$p" ] || { echo "no service discovery $p in $module" >&2; rm -rf "$tmp"; return 1; }
      printf '\t_ "%s/discovery/%s"\n' "$module" "$p"
    done
    echo ')'
  } >"$tmp/module/plugins/plugins.go"
  cp "$mod/go.mod" "$tmp/go.mod"
  cp "$mod/go.sum" "$tmp/go.sum"
  (cd "$mod" && GOWORK=off go mod edit -modfile="$tmp/go.mod" -replace "$module=$tmp/module")
  if ! (cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -modfile="$tmp/go.mod" -trimpath -ldflags "-s -w" -o "$out" "$pkg"); then
    rm -rf "$tmp"
    return 1
  fi
  rm -rf "$tmp"
}

# build_traefik <tool dir> <module> <package> <out>: Traefik, whose go.mod
# has replace directives (a wrapper's build would ignore them) and names two
# modules the Go module proxy does not serve, built as the main module of a
# copy of its own module with three changes (hack/tools/traefik/go.mod,
# docs/decisions.md): its go-http-auth fork at the version the proxy
# serves; lego v5, its ACME client, copied with the registry of DNS
# providers written with none (each imports a cloud's SDK the proxy does not
# serve; the DNS-01 challenge goes, HTTP-01 and TLS-ALPN-01 stay); and the
# nested module dynamic/ext, absent from the zip, from hack/tools/traefik/ext.
# Every other version is Traefik's own (-mod=mod adds the fork's go.sum
# lines in the copy, checked against the checksum database).
build_traefik() {
  local mod="$1" module="$2" pkg="$3" out="$4" version src lego lego_version
  version="$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' "$module")"
  src="$(cd "$mod" && GOWORK=off go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  lego_version="$(awk '$1 == "github.com/go-acme/lego/v5" { print $2; exit }' "$src/go.mod")"
  [ -n "$lego_version" ] || { echo "no lego v5 in $module's go.mod" >&2; return 1; }
  # From / (no go.mod there): the download is of that version alone.
  lego="$(cd / && GOWORK=off go mod download -json "github.com/go-acme/lego/v5@$lego_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  # build runs this in a subshell of its own: the copy goes with it,
  # whatever ends it.
  traefik_tmp="$(mktemp -d)"
  trap 'rm -rf "$traefik_tmp"' EXIT
  cp -r "$src" "$traefik_tmp/traefik"
  cp -r "$lego" "$traefik_tmp/lego"
  chmod -R u+w "$traefik_tmp"
  mkdir -p "$traefik_tmp/traefik/pkg/config/dynamic/ext"
  cp -r "$mod/ext/." "$traefik_tmp/traefik/pkg/config/dynamic/ext"
  cat >"$traefik_tmp/lego/providers/dns/zz_gen_dns_providers.go" <<'GO'
// Written by hack/build-node-tools.sh: lego's registry of DNS providers,
// with none (each imports a cloud SDK the Go module proxy does not serve).

package dns

import (
	"fmt"

	"github.com/go-acme/lego/v5/challenge"
)

// NewDNSChallengeProviderByName knows no DNS provider in this build.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("unrecognized DNS provider: %s (this build of Traefik has none)", name)
}
GO
  (cd "$traefik_tmp/traefik" && GOWORK=off go mod edit \
    -replace github.com/abbot/go-http-auth=github.com/containous/go-http-auth@v0.4.1-0.20200324110947-a37a7636d23e \
    -replace github.com/go-acme/lego/v5=../lego)
  (cd "$traefik_tmp/traefik" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$version" -o "$out" "$pkg")
}

build kube github.com/coredns/coredns github.com/tokendata/tokendata/hack/tools/kube/coredns coredns
build kube github.com/cloudnativelabs/kube-router/v2 github.com/cloudnativelabs/kube-router/v2/cmd/kube-router kube-router
build kube github.com/prometheus-operator/prometheus-operator \
  github.com/prometheus-operator/prometheus-operator/cmd/operator prometheus-operator
build kube github.com/prometheus-operator/prometheus-operator \
  github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader prometheus-config-reloader
build metricsserver sigs.k8s.io/metrics-server sigs.k8s.io/metrics-server/cmd/metrics-server metrics-server
build certmanager github.com/cert-manager/cert-manager github.com/tokendata/tokendata/hack/tools/certmanager cert-manager
BUILDER=build_traefik build traefik github.com/traefik/traefik/v3 ./cmd/traefik traefik
PLUGINS=kubernetes build prometheus github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/prometheus prometheus
