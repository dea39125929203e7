#!/usr/bin/env bash
# Builds one image per service from services/Dockerfile (context: the
# repository root), tagged with the version and commit.
#
#   hack/images.sh                       # every service, loaded into the local Docker
#   PUSH=1 REGISTRY=ghcr.io/me hack/images.sh edge market
#   PLATFORMS=linux/amd64,linux/arm64 PUSH=1 hack/images.sh
#
# Environment: REGISTRY (default ghcr.io/tokendata), TAG (default the
# version), VERSION/COMMIT (default from git), PUSH=1 to push instead of
# loading, PLATFORMS for a multi-arch build (needs PUSH=1).
set -euo pipefail
cd "$(dirname "$0")/.."

REGISTRY="${REGISTRY:-ghcr.io/tokendata}"
VERSION="${VERSION:-$(hack/version.sh 2>/dev/null || echo dev)}"
COMMIT="${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
TAG="${TAG:-${VERSION//+/-}}" # an image tag has no "+"
PUSH="${PUSH:-}"
PLATFORMS="${PLATFORMS:-}"

if [ "$#" -gt 0 ]; then
  services=("$@")
else
  services=(edge supply market holders standalone)
fi

if ! command -v docker >/dev/null 2>&1; then
  echo "images: docker is required (docker buildx, or docker build with BuildKit)" >&2
  exit 1
fi

output=(--load)
if [ -n "$PUSH" ]; then
  output=(--push)
elif [ -n "$PLATFORMS" ]; then
  echo "images: PLATFORMS needs PUSH=1 (a multi-arch image cannot be loaded locally)" >&2
  exit 1
fi
platform=()
if [ -n "$PLATFORMS" ]; then
  platform=(--platform "$PLATFORMS")
fi

for s in "${services[@]}"; do
  if [ ! -d "services/$s/cmd/$s" ]; then
    echo "images: no service $s (services/$s/cmd/$s)" >&2
    exit 1
  fi
  image="$REGISTRY/$s:$TAG"
  echo "== $image"
  docker buildx build \
    --file services/Dockerfile \
    --build-arg "SERVICE=$s" \
    --build-arg "VERSION=$VERSION" \
    --build-arg "COMMIT=$COMMIT" \
    "${platform[@]}" \
    "${output[@]}" \
    --tag "$image" \
    .
done
echo "images: ${services[*]} tagged $TAG under $REGISTRY"
