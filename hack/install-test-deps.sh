#!/usr/bin/env bash
# Installs what the tests need and a fresh machine lacks. Idempotent and
# quick when everything is present. Debian packages need root (CI is root).
set -euo pipefail
# shellcheck source=hack/apt.sh
. "$(dirname "$0")/apt.sh"

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# redis-cli joins the test clusters (redis-cli --cluster create); Sentinel
# runs as redis-server --sentinel, so no redis-sentinel package is needed.
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
# The portal's browser test (services/standalone) drives headless Chromium.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# The outside RFC 9421 verifier (hack/sigcheck) runs on Node, from npm.
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)

if [ ${#need[@]} -gt 0 ]; then
  echo "installing test dependencies: ${need[*]}"
  # Debian starts the packaged service; tests start their own on free ports.
  apt_install "${need[@]}"
fi

# hack/sigcheck's packages, exactly as its package-lock.json pins them;
# installed again only when the lock file changes.
sigcheck="$(cd "$(dirname "$0")" && pwd)/sigcheck"
stamp="$sigcheck/node_modules/.installed-lock.json"
if ! cmp -s "$sigcheck/package-lock.json" "$stamp"; then
  echo "installing hack/sigcheck's npm packages (npm ci)"
  (cd "$sigcheck" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$sigcheck/package-lock.json" "$stamp"
fi
