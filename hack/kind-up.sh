#!/usr/bin/env bash
# Creates the local kind cluster (k8s/kind-config.yaml: host ports 80/443 on
# 127.0.0.1) with ingress-nginx, and with MONITORING=1 kube-prometheus-stack.
# Idempotent: an existing cluster is reused, the add-ons upgraded.
#
#   hack/kind-up.sh                  # cluster + ingress
#   MONITORING=1 hack/kind-up.sh     # + Prometheus Operator and Grafana
#   then: skaffold dev               # (or make dev) builds and deploys the chart
#
# Needs docker and kubectl on PATH; kind and helm are built from the pinned
# tool modules (hack/tools/kind, hack/tools/kube) into .bin/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

CLUSTER="${CLUSTER:-tokendata}"
NAMESPACE="${NAMESPACE:-tokendata}"
MONITORING="${MONITORING:-}"
# Add-on chart versions, pinned.
INGRESS_NGINX_VERSION="${INGRESS_NGINX_VERSION:-4.12.1}"
KUBE_PROMETHEUS_STACK_VERSION="${KUBE_PROMETHEUS_STACK_VERSION:-69.8.2}"

for tool in docker kubectl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "kind-up: $tool is required on PATH" >&2; exit 1; }
done

mkdir -p .bin
if [ ! -x .bin/kind ]; then
  echo "kind-up: building the pinned kind into .bin/kind"
  (cd hack/tools/kind && GOWORK=off go build -o "$root/.bin/kind" sigs.k8s.io/kind)
fi
hack/build-helm.sh
KIND="$root/.bin/kind"
HELM="$root/.bin/helm"

if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  echo "kind-up: cluster $CLUSTER exists"
else
  "$KIND" create cluster --name "$CLUSTER" --config k8s/kind-config.yaml --wait 120s
fi
kubectl config use-context "kind-$CLUSTER" >/dev/null

echo "kind-up: ingress-nginx $INGRESS_NGINX_VERSION"
"$HELM" upgrade --install ingress-nginx ingress-nginx \
  --repo https://kubernetes.github.io/ingress-nginx --version "$INGRESS_NGINX_VERSION" \
  --namespace ingress-nginx --create-namespace \
  --values k8s/ingress-nginx-values.yaml --wait --timeout 5m

if [ -n "$MONITORING" ]; then
  echo "kind-up: kube-prometheus-stack $KUBE_PROMETHEUS_STACK_VERSION"
  "$HELM" upgrade --install kube-prometheus-stack kube-prometheus-stack \
    --repo https://prometheus-community.github.io/helm-charts --version "$KUBE_PROMETHEUS_STACK_VERSION" \
    --namespace monitoring --create-namespace \
    --values k8s/monitoring-values.yaml --wait --timeout 10m
fi

kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
cat <<MSG
kind-up: cluster $CLUSTER is ready (context kind-$CLUSTER).
  Deploy and iterate:   skaffold dev            (or: skaffold dev -p monitoring)
  The API:              curl -i http://api.localtest.me/api/health
  Remove it all:        hack/kind-down.sh
MSG
