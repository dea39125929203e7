# shellcheck shell=bash
# Sourced by the scripts that install Debian packages a fresh machine lacks
# (hack/install-test-deps.sh, hack/install-chart-deps.sh,
# hack/install-cluster-deps.sh): their one apt-get block.
#
#   apt_install [--no-start] PACKAGE...
#
# updates the package lists and installs PACKAGE... without recommends,
# non-interactively, through sudo unless root (CI is root). --no-start keeps
# the packages' maintainer scripts from starting their services (a
# policy-rc.d that refuses, the mechanism Debian's container images use),
# for the scripts whose tests start their own on free ports and want
# nothing else listening; only a policy file it created is removed again.

apt_install() {
  local no_start=
  if [ "${1:-}" = --no-start ]; then
    no_start=1
    shift
  fi
  local sudo=
  if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
  fi
  local policy=/usr/sbin/policy-rc.d created=
  if [ -n "$no_start" ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    created=1
    # shellcheck disable=SC2064 # expanded now: the function's locals are gone at exit
    trap "$sudo rm -f $policy" EXIT
  fi
  local status=0
  # env, not an exported variable: sudo's env_reset would drop it.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" ||
    status=$?
  if [ -n "$created" ]; then
    $sudo rm -f "$policy"
    trap - EXIT
  fi
  return "$status"
}
