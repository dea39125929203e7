#!/usr/bin/env bash
# skaffold dev against the kind cluster of hack/kind-up.sh (make dev):
# builds the four images, loads them into kind, deploys charts/tokendata with
# values-dev.yaml, and rebuilds on every change. Arguments go to skaffold
# (e.g. hack/dev.sh -p monitoring). With --local first (make dev-local):
# against the local node of make cluster-up instead, without Docker.
#
# skaffold: from PATH, else built (once per pin) from the pinned wrapper
# module hack/tools/kube into .bin/skaffold (hack/build-skaffold.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

skaffold="$(command -v skaffold || true)"
if [ -z "$skaffold" ]; then
  hack/build-skaffold.sh
  skaffold="$root/.bin/skaffold"
fi
hack/build-helm.sh
# skaffold's helm deployer runs helm from PATH: use the pinned one.
export PATH="$root/.bin:$PATH"
if [ "${1:-}" = --local ]; then
  # make dev-local: the local node of make cluster-up (no Docker): the
  # profile `local` builds with hack/imagebuild and pushes to its registry.
  shift
  kubeconfig="$(hack/cluster/up.sh | tail -n 1)"
  export KUBECONFIG="$kubeconfig"
  exec "$skaffold" dev -p local --default-repo 10.231.0.2:5000/tokendata --port-forward=false "$@"
fi
CLUSTER="${CLUSTER:-tokendata}"
exec "$skaffold" dev --kube-context "kind-$CLUSTER" "$@"
