#!/usr/bin/env bash
# make bench-events: 10,000 subscribers of /api/events on one
# edge started as make bench starts it; its RSS, the fan-out of one change
# to all of them (p50, p99, max), CPU per delivered event, and make bench's
# edge row with them connected against the same edge without. Options are
# passed to the Go driver (-n 10000 subscribers, -changes 20, -rounds 3,
# -d 5s, -heap-profile FILE). Only 127.0.0.1; the whole run takes about
# two minutes.
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
if ! command -v redis-server >/dev/null; then
  echo "redis-server is missing: run hack/install-test-deps.sh (make deps)" >&2
  exit 1
fi

bin="$(mktemp -d)/edge-bench"
trap 'rm -rf "$(dirname "$bin")"' EXIT
GOWORK=off go build -trimpath -o "$bin" ./edge
"$bin" events "$@"
