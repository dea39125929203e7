#!/usr/bin/env bash
# Prints the digest of every third-party image the project pins by version:
# the chart's Redis, nginx (cache tier) and busybox (helm test) images and
# the Dockerfile's base images, with the values or build arguments that pin
# them by digest too. Needs registry access and one of crane or docker
# (buildx). The update path: bump the tag in charts/tokendata/values.yaml (or
# GO_IMAGE/RUNTIME_IMAGE in services/Dockerfile), run this, paste the
# digests it prints, run make chart-check, commit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
values="$root/charts/tokendata/values.yaml"

digest() {
  if command -v crane >/dev/null 2>&1; then
    crane digest "$1"
  elif command -v docker >/dev/null 2>&1; then
    docker buildx imagetools inspect "$1" --format '{{json .Manifest.Digest}}' | tr -d '"'
  else
    echo "image-digests: needs crane or docker" >&2
    exit 1
  fi
}

# repository and tag of a values block (redis, cache, tests).
image_of() {
  awk -v block="$1" '
    $0 ~ "^"block":" {inblock=1; next}
    inblock && /^[a-z]/ {inblock=0}
    inblock && /^    repository:/ {repo=$2}
    inblock && /^    tag:/ {gsub(/"/, "", $2); tag=$2}
    END {print repo ":" tag}' "$values"
}

for block in redis cache tests; do
  ref="$(image_of "$block")"
  echo "$block.image.digest: $(digest "$ref")   # $ref"
done
for arg in GO_IMAGE RUNTIME_IMAGE; do
  ref="$(sed -n "s/^ARG $arg=//p" "$root/services/Dockerfile")"
  echo "--build-arg $arg=$ref@$(digest "$ref")"
done
