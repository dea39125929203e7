#!/usr/bin/env bash
# What each process of a release costs its Redis (make bench-redis): builds
# the four cluster binaries and standalone (for its simulator), then runs
# the Go driver, which starts redis-server, the simulator, the three
# collectors and two edges on loopback and counts each one's Redis commands
# through a relay of its own, without and with client traffic. Options are
# passed to the driver (-d 120s per window, -warmup 30s, -c 8 clients per
# edge).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "redis-server is missing: run hack/install-test-deps.sh (make deps)" >&2
  exit 1
fi

bins="$(mktemp -d)"
trap 'rm -rf "$bins"' EXIT
for s in edge supply market holders standalone; do
  CGO_ENABLED=0 go build -trimpath -o "$bins/$s" "./services/$s/cmd/$s"
done
cd hack/bench
GOWORK=off go run ./redisops -bins "$bins" "$@"
