#!/usr/bin/env bash
# The lines each failed test wrote, again, from a `go test -v` log: for
# every failed test with no failed subtest (the test that failed, not the
# parents that failed with it), the messages it logged, in order (each
# message's first line and up to 6 of its continuation lines, the last 40
# such lines of the test). make test prints them at its very end, after
# the timing table, because in a -v log a failed subtest's messages sit
# far above the result lines, under everything the later subtests and the
# parent's diagnostics wrote.
#
#   hack/failed-lines.sh LOG...
set -uo pipefail
for log in "$@"; do
  [ -s "$log" ] || continue
  awk -v file="$log" '
    # the result lines name the tests that failed
    FNR == NR {
      if ($1 == "---" && $2 == "FAIL:") failed[$3] = 1
      next
    }
    # "=== RUN   T", "=== NAME  T", "=== CONT  T": what follows is T'"'"'s
    /^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; cont = 0; next }
    /^ *--- (PASS|FAIL|SKIP): / { cur = ""; next }
    cur != "" && (cur in failed) {
      if ($0 ~ /^ +[^ ]+\.go:[0-9]+: /) { cont = 0 }
      else if (++cont > 6) next
      lines[cur, ++count[cur]] = $0
    }
    END {
      for (t in failed) {
        leaf = 1
        for (u in failed) if (index(u, t "/") == 1) leaf = 0
        if (!leaf) continue
        printf "%s failed (%s), its own lines:\n", t, file
        from = count[t] > 40 ? count[t] - 39 : 1
        if (from > 1) printf "    (%d lines before these)\n", from - 1
        for (i = from; i <= count[t]; i++) print lines[t, i]
        if (count[t] == 0) print "    (it logged nothing of its own)"
      }
    }' "$log" "$log"
done
