#!/usr/bin/env bash
# Writes a measured table into a doc between its markers, headed by the
# date, commit and cores of the run:
#
#   hack/write-doc-table.sh <doc> <name> <make target> <report> <paths>...
#
# The markers are "<!-- <name>:begin (make <target> writes this table) -->"
# and "<!-- <name>:end -->"; the commit is marked "with uncommitted
# changes" when any of <paths> has some.
set -euo pipefail
doc=$1 name=$2 target=$3 report=$4
shift 4
begin="<!-- $name:begin (make $target writes this table) -->"
end="<!-- $name:end -->"
grep -qF "$begin" "$doc" && grep -qF "$end" "$doc" || { echo "$doc lacks the $name markers" >&2; exit 1; }
commit=$(git rev-parse --short HEAD)
if [ -n "$(git status --porcelain -- "$@" 2>/dev/null)" ]; then commit="$commit with uncommitted changes"; fi
header="Measured by \`make $target\` on $(date -u +%Y-%m-%d), commit $commit, $(nproc) cores."
awk -v begin="$begin" -v end="$end" -v report="$report" -v header="$header" '
  $0 == begin { print; print header; print ""; while ((getline line < report) > 0) print line; skip = 1; next }
  $0 == end { skip = 0 }
  !skip { print }
' "$doc" >"$doc.tmp"
mv "$doc.tmp" "$doc"
echo "$doc: the $name table rewritten"
