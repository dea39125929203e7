#!/usr/bin/env bash
# skaffold's builder in the `local` profile (make dev-local): builds one
# service's image without Docker, with hack/imagebuild (the image
# services/Dockerfile makes: its labels, user, ports and entrypoint), on the
# local cluster's stand-in of the Dockerfile's base, and pushes it to the
# name skaffold gives ($IMAGE, in the node's registry). Usage (skaffold
# runs it): hack/skaffold-build.sh SERVICE
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
svc="${1:?usage: hack/skaffold-build.sh SERVICE (skaffold sets IMAGE)}"
: "${IMAGE:?IMAGE (set by skaffold) names the image to push}"
cluster="${CLUSTER_DIR:-$root/.cluster}"
runtime_image="$(sed -n 's/^ARG RUNTIME_IMAGE=//p' services/Dockerfile)"
base="$(awk -v n="$runtime_image" '$1 == n { print $2 }' "$cluster/images" 2>/dev/null || true)"
if [ -z "$base" ]; then
  echo "skaffold-build: no stand-in of $runtime_image in $cluster/images: run make cluster-up first" >&2
  exit 1
fi
if [ ! -x "$root/.bin/imagebuild" ]; then
  (cd hack/imagebuild && GOWORK=off go build -trimpath -o "$root/.bin/imagebuild" .)
fi
exec "$root/.bin/imagebuild" services -image "$IMAGE" -insecure -base "$base" \
  -version "$(hack/version.sh 2>/dev/null || echo dev)" \
  -commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$svc"
