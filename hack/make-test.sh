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
  if [ -n "${tools_pid:-}" ] && kill -0 "$tools_pid" 2>/dev/null; then
    kill -TERM -- "-$tools_pid" 2>/dev/null || true
  fi
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
# only afterwards. A failed build fails the chart checks' own call of the
# same script, with its output.
tools_log="$root/.bin/build-tools.log"
# its own process group (set -m), in the same session (nice is relative
# within a session's autogroup), so that a run that stops early ends it
set -m
STEP_BESIDE=1 nice -n 19 "$step" "build pinned tools (nice 19)" hack/build-tools.sh >"$tools_log" 2>&1 &
tools_pid=$!
set +m
FAULT_MATRIX_REPORT="$root/.bin/fault-matrix.md" hack/test.sh "$@"
echo "fault matrix (services/standalone, measured on this run):"
cat .bin/fault-matrix.md
"$step" "fuzz targets" hack/fuzz.sh "$@"
"$step" "hack/bench" bash -c 'cd hack/bench && GOWORK=off go vet ./... && GOWORK=off go test -race -count=1 ./...'
# The chart checks wait for each tool where they need it (its build's lock).
NODE_REPORT="$root/.bin/node-report.md" hack/chart-check.sh
echo "local cluster (hack/chartcheck TestNode, measured on this run):"
cat .bin/node-report.md
tools_rc=0
wait "$tools_pid" || tools_rc=$?
echo "== the pinned tools' build beside the module tests (.bin/build-tools.log)"
grep -v '^go: downloading' "$tools_log" || true
if [ "$tools_rc" -ne 0 ]; then
  echo "building the pinned tools beside the tests failed (above)"
  exit 1
fi
