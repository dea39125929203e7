#!/usr/bin/env bash
# Builds every pinned tool the chart checks and the local cluster run, each
# once per pin (a new clone takes them from this machine's tool cache,
# hack/toolcache.sh): helm, the six Kubernetes commands, CoreDNS,
# kube-router and the Prometheus Operator, skaffold. make test starts it
# beside the module tests and the chart checks (hack/make-test.sh), which
# wait for each tool where they need it; each build is a step of the
# timing table.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
step="$root/hack/step.sh"
"$step" "build helm" "$root/hack/build-helm.sh"
"$step" "build kube" "$root/hack/build-kube.sh"
"$step" "build coredns, kube-router, prometheus-operator" "$root/hack/build-node-tools.sh"
"$step" "build skaffold" "$root/hack/build-skaffold.sh"
