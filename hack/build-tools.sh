#!/usr/bin/env bash
# Builds every pinned tool the chart checks and the local cluster run, each
# once per pin (a new clone takes them from this machine's tool cache,
# hack/toolcache.sh): helm, the six Kubernetes commands, CoreDNS and
# kube-router, skaffold. make test starts it at lowest priority beside the
# module tests (hack/make-test.sh), so that a fresh machine's builds use
# the CPU the tests leave idle; each build is a step of the timing table.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
step="$root/hack/step.sh"
"$step" "build helm" "$root/hack/build-helm.sh"
"$step" "build kube" "$root/hack/build-kube.sh"
"$step" "build coredns, kube-router" "$root/hack/build-node-tools.sh"
"$step" "build skaffold" "$root/hack/build-skaffold.sh"
