#!/usr/bin/env bash
# The fault matrix (services/standalone): runs its rows against a real
# redis-server, the simulator and the service binaries, prints the table of
# measured recovery times and, with --readme, writes it into README.md
# between the fault-matrix markers. `make test` runs the same rows with
# every other test and prints the table it measured.
set -euo pipefail
cd "$(dirname "$0")/.."

report=$(mktemp)
trap 'rm -f "$report"' EXIT
(cd services/standalone && FAULT_MATRIX_REPORT="$report" go test -race -count=1 -run "${FAULT_MATRIX_RUN:-.}" .)
echo
echo "fault matrix (measured on this run):"
cat "$report"

if [ "${1:-}" = "--readme" ]; then
  begin='<!-- fault-matrix:begin (make fault-matrix writes this table) -->'
  end='<!-- fault-matrix:end -->'
  grep -qF "$begin" README.md && grep -qF "$end" README.md || { echo "README.md lacks the fault-matrix markers" >&2; exit 1; }
  awk -v begin="$begin" -v end="$end" -v report="$report" '
    $0 == begin { print; while ((getline line < report) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' README.md > README.md.tmp
  mv README.md.tmp README.md
  echo "README.md: fault matrix table rewritten"
fi
