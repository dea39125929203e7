# shellcheck shell=bash
# Sourced by the scripts that build a pinned tool (hack/build-*.sh): the
# binaries built from one pin are kept once per machine, outside the clone,
# and every clone on the machine takes them from there instead of building
# them again. A fresh clone (CI's is one every run) otherwise spent minutes
# per tool relinking what an earlier clone had already built.
#
# The cache is $TOKENDATA_TOOL_CACHE (default ~/.cache/tokendata/tools),
# one folder per tool and key; the key is the tool's pin (version and the
# go.sum of its wrapper module), the build's flags and the Go toolchain that
# built it, so a changed pin, flag or Go release builds again and nothing
# else does. A folder is complete or absent: a build lands in a temporary
# folder renamed into place, under a lock that one build of a tool holds.

TOOL_CACHE="${TOKENDATA_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokendata/tools}"

# tool_key TEXT...: the cache key of a build described by TEXT (the pin and
# flags), with the Go toolchain and platform added.
tool_key() {
  printf '%s\n' "$*" "$(go env GOVERSION GOOS GOARCH)" | sha256sum | cut -c1-24
}

# tool_cached NAME KEY BIN FILE...: 0 when the cache holds every FILE of
# NAME at KEY; then it copies them into BIN (a copy, not a link: a clone
# may rebuild its own .bin/ without touching the machine's cache).
tool_cached() {
  local name="$1" key="$2" bin="$3" dir f
  shift 3
  dir="$TOOL_CACHE/$name/$key"
  for f in "$@"; do
    [ -x "$dir/$f" ] || return 1
  done
  mkdir -p "$bin"
  touch "$dir" 2>/dev/null || true
  for f in "$@"; do
    cp -f "$dir/$f" "$bin/$f.tmp.$$"
    mv -f "$bin/$f.tmp.$$" "$bin/$f"
  done
}

# tool_store NAME KEY BIN FILE...: keeps the FILEs just built into BIN as
# NAME at KEY for every clone of this machine. A cache that cannot be
# written (a read-only home) is only a missed saving, never a failure.
tool_store() {
  local name="$1" key="$2" bin="$3" dir tmp f
  shift 3
  dir="$TOOL_CACHE/$name/$key"
  [ -d "$dir" ] && return 0
  mkdir -p "$TOOL_CACHE/$name" 2>/dev/null || return 0
  tmp="$(mktemp -d "$TOOL_CACHE/$name/.tmp.XXXXXX" 2>/dev/null)" || return 0
  for f in "$@"; do
    cp -f "$bin/$f" "$tmp/$f" || {
      rm -rf "$tmp"
      return 0
    }
  done
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  # Older keys of this tool are of pins no longer used by this clone; other
  # clones may still use them, so only keys unused for 30 days go.
  find "$TOOL_CACHE/$name" -mindepth 1 -maxdepth 1 -type d -mtime +30 -exec rm -rf {} + 2>/dev/null || true
}

# tool_lock NAME: holds the build lock of NAME (fd 8) until the script
# exits, so that two clones building the same tool build it once.
tool_lock() {
  mkdir -p "$TOOL_CACHE" 2>/dev/null || return 0
  exec 8>"$TOOL_CACHE/$1.lock" || return 0
  flock -w 3600 8 || true
}
