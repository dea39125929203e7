#!/usr/bin/env bash
# Runs the tests of every module given as an argument, with -race, and
# fails when any module fails. Each module is also built on its own
# (GOWORK=off), as image builds do, with their flags. Tests named
# *AllocatesNothing run once more without -race: the race detector
# allocates (sync.Pool drops items at random under it), so they skip
# themselves there. A package may run 30
# minutes: services/standalone takes 7-8 under -race on two cores, and hit
# go test's default of 10 once on a loaded machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# --one MODULE: one module's build and tests (each module is one step of
# the timing table, hack/step.sh).
if [ "${1:-}" = --one ]; then
  cd "$2"
  # as hack/imagebuild builds the images (static, trimmed), so that the
  # packages compiled here are the ones the image builds of the chart
  # checks find in Go's build cache, and a new clone's are too
  GOWORK=off CGO_ENABLED=0 go build -trimpath ./...
  go test -race -count=1 -timeout 30m ./...
  if grep -rqs --include='*_test.go' 'AllocatesNothing(' .; then
    # with the build's flags above, so that it reuses the packages that
    # build compiled instead of compiling the module's whole tree a third
    # time (after the build's and -race's); -tags allocs leaves out the
    # test files that link what only they need (services/edge's OpenAPI
    # validator, compiled once already under -race)
    GOWORK=off CGO_ENABLED=0 go test -trimpath -tags allocs -count=1 -run 'AllocatesNothing$' ./...
  fi
  exit 0
fi

failed=()
for m in "$@"; do
  echo "== $m"
  if ! hack/step.sh "go test $m" hack/test.sh --one "$m"; then
    failed+=("$m")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all modules passed"
