#!/usr/bin/env bash
# make test: every step of the project's tests, each timed (hack/step.sh),
# with the timing table printed at the end, passed or failed. What the
# tests need is installed first when missing (hack/install-test-deps.sh);
# then three lanes run side by side on the machine's cores:
#   - the module lane: every module's tests with -race (hack/test.sh) and
#     the fault matrix's measured table, hack/bench's own tests, then every
#     fuzz target briefly (hack/fuzz.sh), at nice 5;
#   - the chart lane: the chart checks (hack/chart-check.sh: a real
#     kube-apiserver, the chart on a real local cluster of three nodes,
#     skaffold deploying to it) and the cluster's report. TestNode is the
#     run's longest path (its time: docs/benchmarks.md), so the lane starts with what it needs and TestNode starts as
#     soon as the tools are there; it spends most of its time waiting on
#     the nodes and on processes it starts, which the module lane fills;
#     on a fresh machine the builds of the module lane and of the chart
#     checks' first steps fill the wait for the tools;
#   - the pinned tools (helm, Kubernetes, CoreDNS, kube-router, Traefik,
#     cert-manager, skaffold, ...),
#     built once per machine (nothing to do on a machine that built them);
#     the chart lane waits for each where it needs it.
# Every lane runs to its end even when another fails, so that a failure
# never leaves a local cluster up; make test then fails.
# Arguments: the modules (the Makefile's MODULES).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mkdir -p .bin
# -trimpath: a package's compile key in Go's build cache then leaves out the
# checkout's path, so that a new clone on a machine that ran the tests
# before (CI's clone is new every run) takes the project's own packages
# from the cache instead of compiling each of them again. Every go test
# here runs with -count=1, so no test result is taken from the cache.
export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"
export TIMING="$root/.bin/timing.tsv"
rm -f "$TIMING" .bin/fault-matrix.md .bin/node-report.md .bin/chartcheck.log
step="$root/hack/step.sh"
start=$SECONDS
tools_log="$root/.bin/build-tools.log"
chart_log="$root/.bin/chart-check.log"
report() {
  # an early end (a signal, or the install step failing) ends the lanes
  # still running: each runs in its own process group
  for pid in ${tools_pid:-} ${chart_pid:-}; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || true
    fi
  done
  # and waits (up to 5 minutes) until nothing of them runs: stopped, the
  # chart lane's last act is taking down the local cluster its node test
  # left up (hack/chart-check.sh)
  for pid in ${tools_pid:-} ${chart_pid:-}; do
    for _ in $(seq 300); do
      kill -0 -- "-$pid" 2>/dev/null || break
      sleep 1
    done
  done
  echo "== timing of this run (wall and CPU of each step; .bin/timing.tsv)"
  echo "Measured by \`${TIMING_COMMAND:-make test}\` on $(date -u +%F), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores."
  echo
  "$step" --report
  [ -n "${busy_pid:-}" ] && kill "$busy_pid" 2>/dev/null
  busy_report
  # last, where a reader of the output's tail finds them: the messages of
  # each chart check that failed (its -v log has them far above)
  if grep -qs -- '--- FAIL:' "$root/.bin/chartcheck.log"; then
    echo "== the failed chart checks' own lines, again (.bin/chartcheck.log)"
    "$root/hack/failed-lines.sh" "$root/.bin/chartcheck.log"
  fi
  echo "make test: $((SECONDS - start)) s in all"
}
trap report EXIT

# The whole machine's CPU use while the run lasts, every minute from
# /proc/stat (the cluster's daemons and pods included, which no step's CPU
# counts), so that the report says where the cores sat idle: a CPU-bound
# run is shortened only by less work, one with idle minutes by another
# order of it.
busy_log="$root/.bin/cpu-busy.tsv"
rm -f "$busy_log"
busy_sample() { awk '$1 == "cpu" { idle = $5 + $6; t = 0; for (i = 2; i <= 9; i++) t += $i; print t - idle, t }' /proc/stat; }
(
  prev="$(busy_sample)"
  while sleep 60; do
    now="$(busy_sample)"
    echo "$prev $now" | awk '{ printf "%d\n", (($4 - $2) > 0 ? 100 * ($3 - $1) / ($4 - $2) + 0.5 : 0) }' >>"$busy_log"
    prev="$now"
  done
) &
busy_pid=$!
busy_report() {
  [ -s "$busy_log" ] || return 0
  echo "machine CPU busy ($(nproc) cores, /proc/stat), each minute in %, five to a group:"
  awk '{ printf "%s%3d", (NR % 5 == 1 ? (NR > 1 ? "\n" : "") sprintf("  %3d min:", NR - 1) : " "), $1; s += $1 }
    END { printf "\n  mean %d%% over %d min\n", s / NR + 0.5, NR }' "$busy_log"
}

"$step" "install test deps" hack/install-test-deps.sh

# The lanes beside this shell run in process groups of their own (set -m),
# in the same session.
set -m
STEP_BESIDE=1 "$step" "build pinned tools" hack/build-tools.sh >"$tools_log" 2>&1 &
tools_pid=$!
chart_lane() {
  NODE_REPORT="$root/.bin/node-report.md" NODE_ALERTS_REPORT="$root/.bin/node-alerts.md" "$step" "chart checks" hack/chart-check.sh
}
STEP_BESIDE=1 chart_lane >"$chart_log" 2>&1 &
chart_pid=$!
set +m

failed=()
echo "== the module lane (beside it the chart checks: .bin/chart-check.log; the pinned tools' build: .bin/build-tools.log)"
# The module lane at nice 5: on a fresh machine the chart lane's path is
# the tools' build and then the node test, which mostly waits on its
# node, and the module lane ends first; taking the cores from the tools'
# build, it only moved the node test later, into minutes where the cores
# sat idle (docs/decisions.md, "The test run").
if FAULT_MATRIX_REPORT="$root/.bin/fault-matrix.md" nice -n 5 hack/test.sh "$@"; then
  echo "fault matrix (services/standalone, measured on this run):"
  cat .bin/fault-matrix.md
else
  failed+=("module tests")
fi
nice -n 5 "$step" "hack/bench" bash -c 'cd hack/bench && GOWORK=off go vet ./... && GOWORK=off go test -race -count=1 ./...' || failed+=("hack/bench")
echo "== every fuzz target briefly"
nice -n 5 "$step" "fuzz targets" hack/fuzz.sh "$@" || failed+=("fuzz targets")

echo "== the chart lane: the chart checks (.bin/chart-check.log; waiting for it)"
chart_rc=0
wait "$chart_pid" || chart_rc=$?
grep -v '^go: downloading' "$chart_log" || true
if [ "$chart_rc" -eq 0 ]; then
  echo "local cluster (hack/chartcheck TestNode, measured on this run):"
  cat .bin/node-report.md
  echo "alerts fired by their causes on the node (measured on this run; make alert-times writes it into docs/operations.md):"
  cat .bin/node-alerts.md 2>/dev/null || true
else
  failed+=("the chart checks (above)")
fi
tools_rc=0
wait "$tools_pid" || tools_rc=$?
echo "== the pinned tools' build (.bin/build-tools.log)"
grep -v '^go: downloading' "$tools_log" || true
[ "$tools_rc" -eq 0 ] || failed+=("the pinned tools' build")

if [ ${#failed[@]} -gt 0 ]; then
  echo "make test FAILED: ${failed[*]}"
  exit 1
fi
echo "make test: passed"
