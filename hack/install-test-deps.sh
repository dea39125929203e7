#!/usr/bin/env bash
# Installs what the tests need and a fresh machine lacks. Idempotent and
# quick when everything is present. Debian packages need root (CI is root).
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# redis-cli joins the test clusters (redis-cli --cluster create); Sentinel
# runs as redis-server --sentinel, so no redis-sentinel package is needed.
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
# The portal's browser test (services/standalone) drives headless Chromium.
command -v chromium >/dev/null 2>&1 || need+=(chromium)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "installing test dependencies: ${need[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
# Debian starts the packaged service; tests start their own on free ports.
