#!/usr/bin/env bash
# Runs every fuzz target of the given modules for a short time each
# (FUZZTIME, default 8s; FUZZPARALLEL workers, default 1), so that a
# parser of upstream bytes or of stored documents that panics on new input
# fails `make test`. The seed corpora already run as plain tests; this
# adds new, mutated inputs. Found inputs are written under the package's
# testdata/fuzz/ by Go: commit them.
#
# Go 1.26's fuzzing coordinator can end a clean run with a bare
# "context deadline exceeded" when -fuzztime runs out while a worker is
# still busy (a race in the coordinator, go.dev/issue/75804, fixed in Go
# 1.27; a loaded machine makes it likelier: a worker starved for seconds
# was seen here). Such a run wrote no failing input, so it found nothing:
# the target is run again, up to twice, and fails only if those runs fail
# too. A run that writes a failing input fails at once.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-8s}
# One worker: make test runs the fuzz targets beside the module tests and
# the tools' build, all of which want both cores; a second worker bought no
# more CPU there, only 8 more CPU-seconds a target (24 targets: over 3
# minutes of a cold run's CPU).
parallel=${FUZZPARALLEL:-1}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# fuzz_once MODULE DIR NAME: 0 when clean, 1 on a finding, 2 on the
# coordinator's deadline race alone.
fuzz_once() {
  if (cd "$1" && go test -run '^$' -fuzz "^${3}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel "$parallel" "./$2" >"$log" 2>&1); then
    return 0
  fi
  cat "$log"
  if ! grep -q 'Failing input written to' "$log" && grep -qx '[[:space:]]*context deadline exceeded' "$log" \
    && [ "$(grep -c -- '^--- FAIL' "$log")" -eq 1 ]; then
    return 2
  fi
  return 1
}

failed=()
for m in "$@"; do
  # every "func FuzzX(" in a test file, with its package directory
  while IFS=: read -r file name; do
    dir=$(dirname "$file")
    echo "== fuzz $m/$dir $name ($fuzztime)"
    rc=0
    t0="$(date +%s.%N)"
    fuzz_once "$m" "$dir" "$name" || rc=$?
    for again in 1 2; do
      [ "$rc" -eq 2 ] || break
      echo "== fuzz $m/$dir $name: no failing input, only Go's fuzztime deadline race (go.dev/issue/75804); once more ($again of 2)"
      rc=0
      fuzz_once "$m" "$dir" "$name" || rc=$?
    done
    # one row of the timing table a target (hack/step.sh), under its step
    printf '%s\t%s\t%s\t%s\t%s\t-\t%s\n' "${STEP_GROUP:-$t0}" "$t0" "${STEP_DEPTH:-0}" "fuzz $m/$dir $name" \
      "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" \
      "$([ "$rc" -eq 0 ] && echo ok || echo failed)" >>"${TIMING:-/dev/null}"
    if [ "$rc" -ne 0 ]; then
      failed+=("$m/$dir $name")
    fi
  done < <(cd "$m" && grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | sed -e 's#^\./##' -e 's#:func #:#')
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FUZZ FAILED: ${failed[*]}"
  exit 1
fi
echo "every fuzz target ran clean"
