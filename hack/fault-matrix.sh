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
  doc=docs/operations.md
  begin='<!-- fault-matrix:begin (make fault-matrix writes this table) -->'
  end='<!-- fault-matrix:end -->'
  grep -qF "$begin" "$doc" && grep -qF "$end" "$doc" || { echo "$doc lacks the fault-matrix markers" >&2; exit 1; }
  commit=$(git rev-parse --short HEAD)
  if [ -n "$(git status --porcelain -- services shared 2>/dev/null)" ]; then commit="$commit with uncommitted changes"; fi
  header="Measured by \`make fault-matrix\` on $(date -u +%Y-%m-%d), commit $commit, $(nproc) cores."
  awk -v begin="$begin" -v end="$end" -v report="$report" -v header="$header" '
    $0 == begin { print; print header; print ""; while ((getline line < report) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' "$doc" > "$doc.tmp"
  mv "$doc.tmp" "$doc"
  echo "$doc: fault matrix table rewritten"
fi
