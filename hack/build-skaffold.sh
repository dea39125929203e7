#!/usr/bin/env bash
# Builds the pinned skaffold (hack/tools/kube/go.mod, with skaffold's own
# replace directives repeated except Kubernetes', which that module pins at the
# local cluster's release) into .bin/skaffold, unless it is there
# already from the same pin: .bin/skaffold.version records the version and
# go.sum it was built from. make test runs this, so a pin that stops
# building through the module proxy fails CI instead of `make dev` on a
# user's machine. The first build takes minutes; later runs return at once,
# and so does a new clone on a machine that built that pin before
# (hack/toolcache.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/toolcache.sh
. "$root/hack/toolcache.sh"
mod="$root/hack/tools/kube"
out="$root/.bin/skaffold"
stamp="$root/.bin/skaffold.version"

version="$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' github.com/GoogleContainerTools/skaffold/v2)"
want="$version $(sha256sum "$mod/go.sum" | cut -c1-16)"
if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
mkdir -p "$root/.bin"
rm -f "$stamp"
ldflags="-s -w -X github.com/GoogleContainerTools/skaffold/v2/pkg/skaffold/version.version=$version"
key="$(tool_key "$want" "$ldflags")"
tool_lock skaffold
if tool_cached skaffold "$key" "$root/.bin" skaffold; then
  echo "$want" >"$stamp"
  echo "skaffold $version: taken from this machine's tool cache"
  exit 0
fi
echo "building skaffold $version into .bin/skaffold (minutes on first run)"
start=$SECONDS
# -mod=readonly: go.sum is committed; a pin that needs more fails here.
(cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath \
  -ldflags "$ldflags" -o "$out" github.com/GoogleContainerTools/skaffold/v2/cmd/skaffold)
tool_store skaffold "$key" "$root/.bin" skaffold
echo "$want" >"$stamp"
echo "built skaffold $version in $((SECONDS - start))s"
"$out" version
