#!/usr/bin/env bash
# Builds one image per service from services/Dockerfile (context: the
# repository root), tagged with the version: the release tag's version
# without its "v" (2.0.0 on tag v2.0.0: the chart's appVersion, the default
# image tag of every component), else hack/version.sh's with "+" made "-"
# (2.0.0-dev, v2.0.0-3-gabc1234). The binaries carry the version and commit
# (build.version of /api/health).
#
#   hack/images.sh                       # every service, loaded into the local Docker
#   PUSH=1 REGISTRY=ghcr.io/me hack/images.sh edge market
#   PLATFORMS=linux/amd64,linux/arm64 PUSH=1 hack/images.sh
#   DRY_RUN=1 PUSH=1 hack/images.sh      # print the docker commands, run nothing
#
# Environment: REGISTRY (default ghcr.io/tokendata), TAG (default from the
# version, as above), VERSION/COMMIT (default from git), PUSH=1 to push
# instead of loading, PLATFORMS for a multi-arch build (needs PUSH=1),
# DRY_RUN=1 to print the commands instead of running them (needs no
# Docker).
#
# Attestations: with PUSH=1 every image is pushed with an SBOM and a
# provenance attestation (--sbom=true --provenance=mode=max), which needs a
# BuildKit builder that supports them (docker-container driver: `docker
# buildx create --use`; a multi-arch build needs one anyway); ATTEST=0
# leaves them out for a builder that does not. Without PUSH the image is
# loaded into the local Docker (--load) with no attestations: the local
# image store does not keep them.
#
# `make release` (.ci/release) runs this with PUSH=1 and both platforms.
set -euo pipefail
cd "$(dirname "$0")/.."

REGISTRY="${REGISTRY:-ghcr.io/tokendata}"
VERSION="${VERSION:-$(hack/version.sh 2>/dev/null || echo dev)}"
COMMIT="${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
if [ -z "${TAG:-}" ]; then
  TAG="${VERSION//+/-}" # an image tag has no "+"
  case "$TAG" in
    v[0-9]*) TAG="${TAG#v}" ;; # tag v2.0.0: image 2.0.0, the chart's appVersion
  esac
fi
PUSH="${PUSH:-}"
PLATFORMS="${PLATFORMS:-}"
ATTEST="${ATTEST:-1}"
DRY_RUN="${DRY_RUN:-}"

if [ "$#" -gt 0 ]; then
  services=("$@")
else
  services=(edge supply market holders standalone)
fi

if [ -z "$DRY_RUN" ] && ! command -v docker >/dev/null 2>&1; then
  echo "images: docker is required (docker buildx, or docker build with BuildKit)" >&2
  exit 1
fi

output=(--load)
if [ -n "$PUSH" ]; then
  output=(--push)
  if [ "$ATTEST" != 0 ]; then
    output+=(--sbom=true --provenance=mode=max)
  fi
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
  cmd=(docker buildx build
    --file services/Dockerfile
    --build-arg "SERVICE=$s"
    --build-arg "VERSION=$VERSION"
    --build-arg "COMMIT=$COMMIT"
    "${platform[@]}"
    "${output[@]}"
    --tag "$image"
    .)
  if [ -n "$DRY_RUN" ]; then
    printf 'would run:'
    for w in "${cmd[@]}"; do
      if [[ "$w" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then printf ' %s' "$w"; else printf ' %q' "$w"; fi
    done
    printf '\n'
  else
    "${cmd[@]}"
  fi
done
if [ -n "$DRY_RUN" ]; then
  echo "images (dry run): ${services[*]} would be tagged $TAG under $REGISTRY"
else
  echo "images: ${services[*]} tagged $TAG under $REGISTRY"
fi
