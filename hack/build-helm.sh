#!/usr/bin/env bash
# Builds the pinned helm (hack/tools/kube/go.mod, beside the Kubernetes
# commands it shares its libraries with) into .bin/helm, unless it
# is there already at that version. The ldflags are the ones of helm's own
# Makefile, so `helm version` and the default Kubernetes version of
# `helm template`/`helm lint` match the pinned modules (without them helm
# assumes Kubernetes 1.20). A pin built once on this machine is taken from
# its tool cache (hack/toolcache.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/toolcache.sh
. "$root/hack/toolcache.sh"
mod="$root/hack/tools/kube"
out="$root/.bin/helm"

helm_version="$(cd "$mod" && GOWORK=off go list -m -f '{{.Version}}' helm.sh/helm/v3)"
# v0.MINOR.PATCH: the replacement's, which is what builds (a tool of the
# module may require an odd version that the replace block overrides:
# skaffold's go.mod asks for client-go v1.5.2)
k8s_version="$(cd "$mod" && GOWORK=off go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' k8s.io/client-go)"
k8s_minor="$(echo "$k8s_version" | cut -d. -f2)"

if [ -x "$out" ] && "$out" version --short 2>/dev/null | grep -q "^${helm_version}"; then
  exit 0
fi
mkdir -p "$root/.bin"
ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=${helm_version}"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${k8s_minor}"
done
key="$(tool_key "$helm_version $(sha256sum "$mod/go.sum" | cut -c1-16)" "$ldflags")"
tool_lock helm
if tool_cached helm "$key" "$root/.bin" helm; then
  echo "helm $helm_version: taken from this machine's tool cache"
  exit 0
fi
echo "building helm $helm_version (Kubernetes 1.$k8s_minor) into .bin/helm"
(cd "$mod" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out" helm.sh/helm/v3/cmd/helm)
tool_store helm "$key" "$root/.bin" helm
"$out" version --short
