#!/usr/bin/env bash
# Load benchmark of the edge (make bench): wrk on loopback against the edge
# as deployed (every middleware on, snapshot from a real redis-server),
# against a minimal Gin handler with a constant body of the same size (bare,
# and sending the contract's headers), and the chart's nginx cache tier in
# front of the edge against Debian's nginx serving the same bytes as static
# files, for /api/total-supply, /api/price and /api/market-data. Prints
# rps, p50, p99, RSS, allocs/op and the ratios. Options are passed to the Go driver (-d 5s per run, -c 64, -rounds 3: edge
# and minimal runs are interleaved and medians reported, since wrk and the
# server share this machine's cores and single runs vary by ±10 %).
set -euo pipefail
# hack/bench is its own module, outside go.work (like hack/chartcheck)
cd "$(dirname "$0")/.."

if ! command -v wrk >/dev/null; then
  echo "wrk is missing: installing it from the Debian packages"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq wrk
fi
# Debian's nginx for the cache tier rows, and the pinned helm that renders
# the chart's nginx config (both through the chart check's own scripts)
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  ../install-chart-deps.sh
fi
../build-helm.sh
if ! command -v redis-server >/dev/null; then
  echo "redis-server is missing: run hack/install-test-deps.sh (make deps)" >&2
  exit 1
fi

bin="$(mktemp -d)/edge-bench"
trap 'rm -rf "$(dirname "$bin")"' EXIT
GOWORK=off go build -trimpath -o "$bin" ./edge
"$bin" -root "$(cd ../.. && pwd)" "$@"
