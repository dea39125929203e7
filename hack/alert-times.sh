#!/usr/bin/env bash
# make alert-times: runs hack/chartcheck's TestNode alone (the chart on the
# local cluster, the Prometheus Operator's Prometheus evaluating its
# PrometheusRule), whose "alerts fire by their causes" subtest makes each
# alert fire by its cause and resolve, and writes the table it measured
# into docs/operations.md between the alert-times markers, headed by the
# date, commit and cores of the run. `make test` runs the same subtest and
# prints the table (.bin/node-alerts.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
hack/build-tools.sh

report=$(mktemp)
trap 'rm -f "$report"' EXIT
# As hack/chart-check.sh: a mount namespace of its own, where /run/netns is
# not a mount point unless a cluster brought up by hand uses it.
unshare --mount --propagation private -- bash -c '
  set -e
  if [ ! -e /run/netns/tokendata-node ]; then
    while mountpoint -q /run/netns; do umount -n /run/netns; done
  fi
  cd hack/chartcheck
  NODE_ALERTS_REPORT="$0" GOWORK=off go test -count=1 -timeout 45m -run "^TestNode$" .' "$report"
echo
echo "alerts (measured on this run):"
cat "$report"

hack/write-doc-table.sh docs/operations.md alert-times alert-times "$report" charts hack/chartcheck shared services
