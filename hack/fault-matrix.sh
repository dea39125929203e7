#!/usr/bin/env bash
# The fault matrix (services/standalone): runs its rows against a real
# redis-server, the simulator and the service binaries, prints the table of
# measured recovery times and, with --write, writes it into
# docs/operations.md between the fault-matrix markers, headed by the date,
# commit and cores of the run. `make test` runs the same rows with
# every other test and prints the table it measured.
set -euo pipefail
cd "$(dirname "$0")/.."

report=$(mktemp)
trap 'rm -f "$report"' EXIT
(cd services/standalone && FAULT_MATRIX_REPORT="$report" go test -race -count=1 -run "${FAULT_MATRIX_RUN:-.}" .)
echo
echo "fault matrix (measured on this run):"
cat "$report"

if [ "${1:-}" = "--write" ]; then
  hack/write-doc-table.sh docs/operations.md fault-matrix fault-matrix "$report" services shared
fi
