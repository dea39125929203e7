#!/usr/bin/env bash
# make images: builds the five service images without Docker, with
# hack/imagebuild (go-containerregistry): the image services/Dockerfile
# makes (its labels, user 65532, ports, entrypoint /service; the binaries
# built as the Dockerfile builds them, with version and commit), on a
# base pulled by reference, and pushes each to $REGISTRY/<service>:$TAG.
# Prints each image by digest.
#
#   make images                                  # the local cluster's registry (make cluster-up)
#   REGISTRY=ghcr.io/me make images              # onto the Dockerfile's base (gcr.io/distroless/static:nonroot)
#   BASE_IMAGE=gcr.io/distroless/static:nonroot@sha256:… REGISTRY=… make images
#
# REGISTRY: default the local cluster's (10.231.0.2:5000/tokendata) when it
# is up, whose base is then its stand-in of the Dockerfile's, by digest.
# TAG: default from the version, as hack/images.sh (Docker's path, which
# make images-docker and make release keep) tags it. Credentials: those of
# ~/.docker/config.json, as docker login writes them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cluster="${CLUSTER_DIR:-$root/.cluster}"
VERSION="${VERSION:-$(hack/version.sh 2>/dev/null || echo dev)}"
COMMIT="${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
if [ -z "${TAG:-}" ]; then
  TAG="${VERSION//+/-}"
  case "$TAG" in
    v[0-9]*) TAG="${TAG#v}" ;;
  esac
fi
insecure=()
if [ -z "${REGISTRY:-}" ]; then
  if [ ! -f "$cluster/images" ]; then
    echo "images: set REGISTRY (e.g. ghcr.io/me), or run make cluster-up to push to the local cluster's registry" >&2
    exit 1
  fi
  REGISTRY=10.231.0.2:5000/tokendata
fi
case "$REGISTRY" in
  10.231.0.2:5000/*)
    insecure=(-insecure)
    if [ -z "${BASE_IMAGE:-}" ]; then
      runtime_image="$(sed -n 's/^ARG RUNTIME_IMAGE=//p' services/Dockerfile)"
      BASE_IMAGE="$(awk -v n="$runtime_image" '$1 == n { print $2 }' "$cluster/images")"
    fi
    ;;
esac
mkdir -p .bin
(cd hack/imagebuild && GOWORK=off go build -trimpath -o "$root/.bin/imagebuild" .)
base=()
[ -n "${BASE_IMAGE:-}" ] && base=(-base "$BASE_IMAGE")
exec .bin/imagebuild services -registry "$REGISTRY" "${insecure[@]}" -tag "$TAG" "${base[@]}" \
  -version "$VERSION" -commit "$COMMIT" "$@"
