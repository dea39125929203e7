#!/usr/bin/env bash
# skaffold dev against the kind cluster of hack/kind-up.sh (make dev):
# builds the four images, loads them into kind, deploys charts/tokendata with
# values-dev.yaml, and rebuilds on every change. Arguments go to skaffold
# (e.g. hack/dev.sh -p monitoring).
#
# skaffold: from PATH, else .bin/skaffold, else built from the pinned wrapper
# module hack/tools/skaffold (needs a module proxy that serves skaffold).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

skaffold="$(command -v skaffold || true)"
if [ -z "$skaffold" ] && [ -x .bin/skaffold ]; then
  skaffold="$root/.bin/skaffold"
fi
if [ -z "$skaffold" ]; then
  echo "dev: building the pinned skaffold into .bin/skaffold"
  mkdir -p .bin
  (cd hack/tools/skaffold && GOWORK=off go mod tidy &&
    GOWORK=off go build -o "$root/.bin/skaffold" github.com/GoogleContainerTools/skaffold/v2/cmd/skaffold)
  skaffold="$root/.bin/skaffold"
fi
hack/build-helm.sh
# skaffold's helm deployer runs helm from PATH: use the pinned one.
export PATH="$root/.bin:$PATH"
CLUSTER="${CLUSTER:-tokendata}"
exec "$skaffold" dev --kube-context "kind-$CLUSTER" "$@"
