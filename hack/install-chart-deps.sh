#!/usr/bin/env bash
# Installs what the chart checks need and a fresh machine lacks: Debian's
# nginx, which the cache-tier test runs with the chart's own config,
# Debian's prometheus, whose promtool checks and unit-tests the alert rules
# and whose server the monitoring test runs against a live standalone, and
# Debian's etcd-server, the store of the kube-apiserver the API-server check
# runs (hack/build-kube.sh builds kube-apiserver and kubectl), and Debian's
# varnish, the shared cache not of this project that the CDN check puts in
# front of a running edge with its default VCL, and Debian's chromium, whose
# EventSource reads /api/events from another origin through the cache tier
# (TestEventsInBrowserThroughCacheTier).
# Idempotent and quick when everything is present. Debian packages need
# root (CI is root). The packages' services are not started: the tests
# start their own nginx, prometheus, etcd and varnishd on free loopback
# ports, and nothing else should listen.
set -euo pipefail
# shellcheck source=hack/apt.sh
. "$(dirname "$0")/apt.sh"

nginx_bin() {
  command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true
}
promtool_bin() {
  command -v promtool 2>/dev/null || { [ -x /usr/bin/promtool ] && echo /usr/bin/promtool; } || true
}
etcd_bin() {
  command -v etcd 2>/dev/null || { [ -x /usr/bin/etcd ] && echo /usr/bin/etcd; } || true
}
varnishd_bin() {
  command -v varnishd 2>/dev/null || { [ -x /usr/sbin/varnishd ] && echo /usr/sbin/varnishd; } || true
}
chromium_bin() {
  command -v chromium 2>/dev/null || true
}
prometheus_bin() {
  command -v prometheus 2>/dev/null || { [ -x /usr/bin/prometheus ] && echo /usr/bin/prometheus; } || true
}

missing=()
if [ -z "$(nginx_bin)" ]; then
  missing+=(nginx)
fi
if [ -z "$(promtool_bin)" ] || [ -z "$(prometheus_bin)" ]; then
  missing+=(prometheus)
fi
if [ -z "$(etcd_bin)" ]; then
  missing+=(etcd-server)
fi
if [ -z "$(varnishd_bin)" ]; then
  missing+=(varnish)
fi
if [ -z "$(chromium_bin)" ]; then
  missing+=(chromium)
fi
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
echo "installing chart-check dependencies: ${missing[*]}"
# Keep the maintainer scripts from starting nginx on port 80, prometheus on
# port 9090, etcd on port 2379 or varnishd on port 6081.
apt_install --no-start "${missing[@]}"
for b in nginx promtool prometheus etcd varnishd chromium; do
  case "$b" in
    nginx) p="$(nginx_bin)" ;;
    promtool) p="$(promtool_bin)" ;;
    prometheus) p="$(prometheus_bin)" ;;
    etcd) p="$(etcd_bin)" ;;
    varnishd) p="$(varnishd_bin)" ;;
    chromium) p="$(chromium_bin)" ;;
  esac
  if [ -z "$p" ]; then
    echo "install-chart-deps: $b still missing after apt-get install" >&2
    exit 1
  fi
  echo "$b: $p"
done
