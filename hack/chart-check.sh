#!/usr/bin/env bash
# The chart's CI checks (make chart-check; make test calls it):
#  - every hack/ and .ci/ script parses (bash -n);
#  - helm lint --strict, with the defaults and every charts/tokendata/ci/*.yaml;
#  - hack/chartcheck (its own Go module, outside go.work): helm template over
#    the same matrix, every object decoded strictly (client-go scheme +
#    structured-merge-diff schema + the Go types of the CRD kinds), the
#    policies, each conditional of the chart, golden renders; and the cache
#    tier's nginx config run for real (Debian's nginx) in front of a running
#    standalone edge, /api/events through it (burns on the simulated ledger
#    to a client, and to a headless Chromium EventSource of another origin); the CDN trial (Debian's varnish with its default VCL
#    in front of a running edge, under load: hit ratio, age bound, codings,
#    errors never cached; docs/cdn.md); the dashboards and alert rules linted, and checked
#    against a real Prometheus (Debian's) scraping running standalones;
#    METRICS.md checked against the metrics the processes export;
#    and a real API server (TestAPIServer: Debian's etcd and the pinned
#    kube-apiserver on loopback): the defaults and every ci/*.yaml applied
#    server-side (dry run) under PodSecurity "restricted" and installed with
#    helm, then one release through its upgrades (chart version bump,
#    Redis persistence on/off, a password with special characters),
#    asserting pod templates change only when they should;
#    and the chart on a real cluster of three nodes (TestNode: make cluster-up NODES=3,
#    kubelet, containerd and runc running the chart's pods, NetworkPolicies
#    enforced): install, every path through the cache tier, helm test, an
#    upgrade, pod deletions and each node drained under clients that must
#    see no failure, a node lost,
#    /api/events, uninstall, skaffold's local profile, cluster-down leaving
#    the host as it was;
#  - hack/imagebuild's tests (the service image is the Dockerfile's; the
#    stand-ins have what the chart relies on; both reproducible);
#  - promtool check rules and promtool test rules on the alert rules file
#    the chart ships (charts/tokendata/files/alerts).
# Installs what it needs when missing (nginx, prometheus with promtool,
# etcd, varnish, chromium; helm, kube-apiserver and kubectl are built from their pinned modules
# into .bin/, once per pin).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

helm="$root/.bin/helm"
# --lint: helm lint --strict with the defaults and every CI values file
# (one step of the timing table)
if [ "${1:-}" = --lint ]; then
  "$helm" lint --strict charts/tokendata
  for f in charts/tokendata/ci/*.yaml charts/tokendata/values-dev.yaml; do
    "$helm" lint --strict --quiet charts/tokendata -f "$f" >/dev/null || {
      "$helm" lint --strict charts/tokendata -f "$f"
      exit 1
    }
  done
  echo "lint: defaults and $(ls charts/tokendata/ci/*.yaml | wc -l) CI values files pass"
  exit 0
fi

for f in hack/*.sh hack/cluster/*.sh .ci/*; do
  bash -n "$f"
done

step="$root/hack/step.sh"
"$step" "install chart deps" hack/install-chart-deps.sh
# the stand-ins' packages (busybox-static, …) for hack/imagebuild's tests,
# and the node's for TestNode
"$step" "install cluster deps" hack/install-cluster-deps.sh
# helm first; the Kubernetes commands, the node's CoreDNS and kube-router
# and skaffold only before hack/chartcheck, which needs them, so that the
# steps between run while make test's build of them beside the module
# tests finishes (each build script waits on that build's lock, then takes
# its result from the tool cache)
"$step" "build helm" hack/build-helm.sh

echo "== helm lint --strict"
"$step" "helm lint" "$0" --lint

echo "== promtool (alert rules and their unit tests)"
"$step" "promtool" bash -c 'cd charts/tokendata/files/alerts && promtool check rules tokendata-rules.yaml && promtool test rules tokendata-rules.test.yaml'

# hack/imagebuild's tests beside the steps that follow (at nice 5: on a
# fresh machine they fill the wait for the tools, on a machine with its
# tools built they run beside TestNode instead of before it); their
# output is printed once they have ended, below.
imagebuild_log="$root/.bin/imagebuild.log"
STEP_BESIDE=1 nice -n 5 "$step" "hack/imagebuild" bash -c 'cd hack/imagebuild && GOWORK=off go vet ./... && GOWORK=off go test -race -count=1 ./...' >"$imagebuild_log" 2>&1 &
imagebuild_pid=$!
# a step below that fails ends this script: the tests beside end first
trap wait EXIT

echo "== go vet hack/chartcheck (before the tools' wait: it compiles every package its tests link)"
# On a fresh machine that compile (client-go, helm's SDK, Prometheus' and
# the operator's libraries) takes minutes of CPU; here it runs while the
# tools build beside, not after them, where the cores would otherwise
# wait on TestNode's node.
"$step" "go vet hack/chartcheck" bash -c 'cd hack/chartcheck && GOWORK=off go vet ./...'
# and its test binary (the module's one package with tests), run twice
# below
"$step" "build hack/chartcheck's tests" bash -c 'cd hack/chartcheck && GOWORK=off go test -c -o "$0" .' "$root/.bin/chartcheck.test"

echo "== the pinned tools (TestNode's and TestAPIServer's)"
"$step" "pinned tools ready (waits for their build beside)" hack/build-tools.sh

echo "== hack/chartcheck"
# Two runs of its test binary side by side: TestNode (the cluster of
# three nodes, most of its time waiting on its nodes and pods, the run's
# longest path) and every other test (the API server, nginx, varnish,
# Prometheus and Chromium on loopback, minutes shorter) at nice 5, so that TestNode's clients, whose failures fail it, keep the
# cores first. Each writes a log of its own while it runs
# (.bin/chartcheck.log.node, .rest); then .bin/chartcheck.log holds both,
# the other tests first. -test.v: each test's time, and each TestNode
# subtest's, goes to the timing table. 45 minutes is a backstop above the
# slowest run docs/benchmarks.md records.
#
# In a mount namespace of its own (the host's mounts as they are, private),
# where /run/netns is not a mount point (unless a cluster brought up by hand
# uses it): TestNode's cluster-up then starts from a fresh host's state,
# whatever earlier runs left on this machine, and its host check proves
# that cluster-down undoes what ip netns does to a fresh host.
#
# TestNode takes down the cluster it brought up, unless it never gets to:
# the test binary killed (make test stopped: a signal to this lane's
# process group) or past its -test.timeout (a panic runs no deferred
# call). This shell then does, after both runs have ended, so that no
# node of this checkout is left running on the machine (its daemons run
# in sessions of their own, which no signal to this lane reaches): it
# lives on through the signal (the trap) and runs make cluster-down when
# the cluster is up and was not before.
log="$root/.bin/chartcheck.log"
rc=0
"$step" "hack/chartcheck" unshare --mount --propagation private -- bash -c '
  set -u
  trap "stopped=1" TERM INT HUP
  log="$0" step="$1" bin="$2"
  root="$PWD" up_before=
  if [ -e /run/netns/tokendata-node ]; then
    up_before=1
  else
    while mountpoint -q /run/netns; do umount -n /run/netns; done
  fi
  cd hack/chartcheck
  export GOWORK=off # as under go test, for the go commands the tests run
  "$bin" -test.v -test.count=1 -test.timeout 45m -test.run "^TestNode\$" >"$log.node" 2>&1 &
  node_pid=$!
  nice -n 5 "$bin" -test.v -test.count=1 -test.timeout 45m -test.skip "^TestNode\$" >"$log.rest" 2>&1
  rest=$?
  # a trapped signal ends a wait early: wait until TestNode has ended
  node=0
  while kill -0 "$node_pid" 2>/dev/null; do
    wait "$node_pid"
    node=$?
  done
  cat "$log.rest" "$log.node" >"$log"
  rm -f "$log.rest" "$log.node"
  cat "$log"
  rc=0
  [ "$rest" -eq 0 ] && [ "$node" -eq 0 ] || rc=1
  if [ -z "$up_before" ] && { [ -e /run/netns/tokendata-node ] || [ -n "$(ls -A "$root/.cluster/pids" 2>/dev/null)" ]; }; then
    echo "hack/chartcheck: TestNode ended (status $node${stopped:+, stopped by a signal}) with the local cluster up; taking it down (make cluster-down)" | tee -a "$log" >&2
    if ! "$root/hack/cluster/down.sh" >>"$log" 2>&1; then
      echo "hack/chartcheck: make cluster-down failed (its output: $log)" >&2
    fi
    rc=1
  fi
  STEP_SUBTESTS="^TestNode/" "$step" --gotest chartcheck "$log"
  exit "$rc"' "$log" "$step" "$root/.bin/chartcheck.test" || rc=$?
# hack/imagebuild's tests, started above
imagebuild_rc=0
wait "$imagebuild_pid" || imagebuild_rc=$?
echo "== hack/imagebuild (images without Docker: the Dockerfile's image, the local cluster's stand-ins; beside the steps above)"
grep -v '^go: downloading' "$imagebuild_log" || true
[ "$imagebuild_rc" -eq 0 ] || rc=1
[ "$rc" -eq 0 ] || exit "$rc"
echo "chart-check: passed"
