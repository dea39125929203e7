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
#
# Stopped (SIGTERM, SIGINT, SIGHUP), it stops .ci/run (its process group)
# and removes the clone only once no process runs in it or from it: make
# test's chart lane takes down a local cluster it left up, which runs
# from the clone (its daemons' pid files are there). A clone still in use
# 10 minutes later is kept, with the processes named.
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
# users: the processes whose working directory or executable is in the
# clone or its caches.
users() {
  local p c e
  for p in /proc/[0-9]*; do
    c="$(readlink "$p/cwd" 2>/dev/null)" || c=
    e="$(readlink "$p/exe" 2>/dev/null)" || e=
    case "$c/ $e" in
      "$work"/* | *" $work"/*) echo "${p#/proc/}" ;;
    esac
  done
}
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    echo "ci-fresh: kept $work"
    return
  fi
  local waited=0 left
  while left="$(users)" && [ -n "$left" ]; do
    if [ "$waited" -ge 600 ]; then
      echo "ci-fresh: kept $work: processes still run in it after 10 minutes:" >&2
      for p in $left; do echo "  $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-160)" >&2; done
      echo "ci-fresh: end them (a local cluster: CLUSTER_DIR=$work/tokendata/.cluster $work/tokendata/hack/cluster/down.sh), then remove $work" >&2
      return
    fi
    [ "$waited" -eq 0 ] && echo "ci-fresh: waiting for the processes still running in $work to end" >&2
    sleep 2
    waited=$((waited + 2))
  done
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
# .ci/run in a process group of its own, which a stop signals as a whole
set -m
(cd "$work/tokendata" && exec env "${env[@]}" bash .ci/run </dev/null) &
run=$!
set +m
stop() {
  echo "ci-fresh: stopped; stopping .ci/run" >&2
  kill -TERM -- "-$run" 2>/dev/null || true
}
trap stop TERM INT HUP
rc=0
while :; do
  wait "$run" && rc=0 || rc=$?
  kill -0 "$run" 2>/dev/null || break
done
echo "ci-fresh ($mode): .ci/run exited $rc after $((SECONDS - start)) s ($(((SECONDS - start) / 60)) min)"
exit "$rc"
