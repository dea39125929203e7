#!/usr/bin/env bash
# Installs what the chart checks need and a fresh machine lacks: Debian's
# nginx, which the cache-tier test runs with the chart's own config.
# Idempotent and quick when everything is present. Debian packages need
# root (CI is root). The package's service is not started: the test starts
# its own nginx on a free loopback port, and nothing else should listen.
set -euo pipefail

nginx_bin() {
  command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true
}

if [ -n "$(nginx_bin)" ]; then
  exit 0
fi
echo "installing chart-check dependencies: nginx"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive

# Keep the maintainer scripts from starting nginx on port 80 (the same
# mechanism Debian's container images use). Only a policy file this script
# created is removed again.
policy=/usr/sbin/policy-rc.d
created_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  created_policy=1
fi
cleanup() {
  if [ -n "$created_policy" ]; then
    $SUDO rm -f "$policy"
  fi
}
trap cleanup EXIT

$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends nginx
echo "nginx: $(nginx_bin)"
