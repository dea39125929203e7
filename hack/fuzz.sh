#!/usr/bin/env bash
# Runs every fuzz target of the given modules for a short time each
# (FUZZTIME, default 8s), so that a parser of upstream bytes or of stored
# documents that panics on new input fails `make test`. The seed corpora
# already run as plain tests; this adds new, mutated inputs. Found inputs
# are written under the package's testdata/fuzz/ by Go: commit them.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-8s}
failed=()
for m in "$@"; do
  # every "func FuzzX(" in a test file, with its package directory
  while IFS=: read -r file name; do
    dir=$(dirname "$file")
    echo "== fuzz $m/$dir $name ($fuzztime)"
    if ! (cd "$m" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 2 "./$dir" >/tmp/fuzz.$$.log 2>&1); then
      cat /tmp/fuzz.$$.log
      failed+=("$m/$dir $name")
    fi
  done < <(cd "$m" && grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | sed -e 's#^\./##' -e 's#:func #:#')
done
rm -f /tmp/fuzz.$$.log
if [ ${#failed[@]} -gt 0 ]; then
  echo "FUZZ FAILED: ${failed[*]}"
  exit 1
fi
echo "every fuzz target ran clean"
