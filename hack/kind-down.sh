#!/usr/bin/env bash
# Deletes the local kind cluster made by hack/kind-up.sh, and everything in it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
CLUSTER="${CLUSTER:-tokendata}"
KIND="$root/.bin/kind"
if [ ! -x "$KIND" ]; then
  KIND="$(command -v kind || true)"
fi
if [ -z "$KIND" ]; then
  echo "kind-down: kind not found (hack/kind-up.sh builds it into .bin/kind)" >&2
  exit 1
fi
if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  "$KIND" delete cluster --name "$CLUSTER"
else
  echo "kind-down: no cluster $CLUSTER"
fi
