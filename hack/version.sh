#!/usr/bin/env bash
# Prints the build version that make build, make run and the images stamp
# into shared/buildinfo.Version (build.version of /api/health, the
# tokendata_build_info metric). Never the bare commit, which is
# buildinfo.Commit:
#
#   - on a release tag: the tag (v2.0.0), "-dirty" appended when the work
#     tree has changes;
#   - past a tag: git describe (v2.0.0-3-gabc1234[-dirty]);
#   - without tags: the VERSION file's release with "+dev" (2.0.0+dev, or
#     2.0.0+dev.dirty): built from the sources after that release.
set -euo pipefail
cd "$(dirname "$0")/.."
if v=$(git describe --tags --dirty 2>/dev/null); then
  echo "$v"
  exit 0
fi
base=$(tr -d ' \n' < VERSION 2>/dev/null || true)
v="${base:-0.0.0}+dev"
if git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet HEAD -- 2>/dev/null; then
  v="$v.dirty"
fi
echo "$v"
