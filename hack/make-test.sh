#!/usr/bin/env bash
# make test: every step of the project's tests, each timed (hack/step.sh),
# with the timing table printed at the end, passed or failed:
#   - what the tests need, installed when missing (hack/install-test-deps.sh);
#   - every module's tests with -race (hack/test.sh), the fault matrix's
#     measured table;
#   - every fuzz target briefly (hack/fuzz.sh);
#   - hack/bench's own tests;
#   - the chart checks (hack/chart-check.sh: a real kube-apiserver, the chart
#     on a real local node, skaffold deploying to it) and the node's report;
#   - the pinned tools (helm, Kubernetes, CoreDNS, kube-router, skaffold)
#     built beside the module tests, at the lowest priority.
# Arguments: the modules (the Makefile's MODULES).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mkdir -p .bin
export TIMING="$root/.bin/timing.tsv"
rm -f "$TIMING" .bin/fault-matrix.md .bin/node-report.md
step="$root/hack/step.sh"
start=$SECONDS
report() {
  echo "== timing of this run (wall and CPU of each step; .bin/timing.tsv)"
  echo "Measured by \`${TIMING_COMMAND:-make test}\` on $(date -u +%F), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores."
  echo
  "$step" --report
  echo "make test: $((SECONDS - start)) s in all"
}
trap report EXIT

"$step" "install test deps" hack/install-test-deps.sh
# The pinned tools (minutes each on a fresh machine, nothing once built on
# this machine) build at the lowest priority beside the module tests: they
# take only the CPU the tests leave idle, and the chart checks need them
# only afterwards.
tools_log="$root/.bin/build-tools.log"
STEP_BESIDE=1 nice -n 19 "$step" "build pinned tools (nice 19)" hack/build-tools.sh >"$tools_log" 2>&1 &
tools_pid=$!
FAULT_MATRIX_REPORT="$root/.bin/fault-matrix.md" hack/test.sh "$@"
echo "fault matrix (services/standalone, measured on this run):"
cat .bin/fault-matrix.md
"$step" "fuzz targets" hack/fuzz.sh "$@"
"$step" "hack/bench" bash -c 'cd hack/bench && GOWORK=off go vet ./... && GOWORK=off go test -race -count=1 ./...'
tools_rc=0
t0="$(date +%s.%N)"
wait "$tools_pid" || tools_rc=$?
printf '%s\t%s\t0\t%s\t%s\t0\tok\n' "$t0" "$t0" "wait for the pinned tools" \
  "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >>"$TIMING"
cat "$tools_log"
if [ "$tools_rc" -ne 0 ]; then
  echo "building the pinned tools failed (hack/build-tools.sh, above)"
  exit 1
fi
NODE_REPORT="$root/.bin/node-report.md" hack/chart-check.sh
echo "local cluster (hack/chartcheck TestNode, measured on this run):"
cat .bin/node-report.md
