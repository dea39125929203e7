#!/usr/bin/env bash
# make ci-fresh: rehearses CI as a fresh machine of this project runs it:
# .ci/run (so make test) in a new clone of HEAD, with every cache a clone
# or this machine keeps empty: Go's module and build caches, npm's cache
# and the tool cache of the pinned builds (hack/toolcache.sh), each a new
# temporary folder. What it cannot empty is what Debian's packages already
# installed here (the install steps then find them present; what they
# take on a new machine is in docs/benchmarks.md).
#
#   hack/ci-fresh.sh          cold: every cache empty (a fresh machine)
#   hack/ci-fresh.sh --warm   this machine's caches as they are (CI's run on
#                             a machine that ran it before), the clone new
#
# Prints .ci/run's output, its timing table, and the wall time; the exit
# status is .ci/run's. The clone and the temporary caches are removed
# afterwards (KEEP=1 keeps them; the path is printed). Commit first: the
# clone is of HEAD, and uncommitted changes are not in it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=cold
case "${1:-}" in
  --warm) mode=warm ;;
  "" | --cold) ;;
  *)
    echo "usage: hack/ci-fresh.sh [--cold|--warm]" >&2
    exit 2
    ;;
esac

if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  echo "ci-fresh: uncommitted changes are not rehearsed (the clone is of HEAD $(git -C "$root" rev-parse --short HEAD))" >&2
fi
work="$(mktemp -d /tmp/tokendata-ci-fresh.XXXXXX)"
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    echo "ci-fresh: kept $work"
    return
  fi
  # the module cache is read-only by design
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$root" "$work/tokendata"
env=(CI=true TIMING_COMMAND="make ci-fresh")
[ "$mode" = warm ] && env=(CI=true TIMING_COMMAND="make ci-fresh WARM=1")
if [ "$mode" = cold ]; then
  mkdir -p "$work/cache"/{gocache,gomodcache,npm,tools}
  env+=(GOCACHE="$work/cache/gocache" GOMODCACHE="$work/cache/gomodcache"
    npm_config_cache="$work/cache/npm" TOKENDATA_TOOL_CACHE="$work/cache/tools")
fi
echo "ci-fresh ($mode): .ci/run in $work/tokendata at $(git -C "$work/tokendata" rev-parse --short HEAD)"
start=$SECONDS
rc=0
(cd "$work/tokendata" && env "${env[@]}" bash .ci/run </dev/null) || rc=$?
echo "ci-fresh ($mode): .ci/run exited $rc after $((SECONDS - start)) s ($(((SECONDS - start) / 60)) min)"
exit "$rc"
