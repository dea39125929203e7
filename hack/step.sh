#!/usr/bin/env bash
# The timing table of make test: what each step costs, so that every change
# sees what it adds.
#
#   hack/step.sh NAME CMD...        runs CMD as a step named NAME, records
#                                   its wall and CPU time (user + system of
#                                   everything it ran), exits with its status
#   hack/step.sh --gotest PREFIX LOG [DEPTH]
#                                   records each test of a `go test -v` log
#                                   (its top-level tests, and their subtests
#                                   one level down: those whose name matches
#                                   $STEP_SUBTESTS, default all) as rows
#                                   under PREFIX
#   hack/step.sh --report           prints the table, oldest step first
#
# The table is $TIMING (default .bin/timing.tsv): the start of the top-level
# step a row is within (its own, at the top), start, depth, name, wall
# seconds, CPU seconds, status. A step run inside another is one level
# deeper. The total's wall is the span from the first top-level step's
# start to the last one's end, so steps run beside others (STEP_BESIDE=1,
# marked in the table) count once; its CPU adds every top-level step's.
# make test empties it first.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
TIMING="${TIMING:-$root/.bin/timing.tsv}"
depth="${STEP_DEPTH:-0}"

record() { # record GROUP START DEPTH NAME WALL CPU STATUS
  mkdir -p "$(dirname "$TIMING")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$TIMING"
}

case "${1:-}" in
  --gotest)
    prefix="$2" log="$3" d="${4:-$depth}"
    now="$(date +%s.%N)"
    group="${STEP_GROUP:-$now}"
    # "--- PASS: TestX (12.34s)" at the left margin is a test; indented by
    # four spaces, one of its subtests. Their order in the log is kept.
    awk -v prefix="$prefix" -v d="$d" -v now="$now" -v group="$group" -v subtests="${STEP_SUBTESTS:-.}" '
      $1 == "---" && $2 ~ /^(PASS|FAIL|SKIP):$/ && $4 ~ /^\([0-9.]+s\)$/ {
        level = (match($0, /[^ ]/) - 1) / 4
        if (level > 1 || (level == 1 && $3 !~ subtests)) next
        n++
        st = tolower(substr($2, 1, length($2) - 1))
        t = substr($4, 2, length($4) - 3)
        printf "%s\t%.6f\t%d\t%s/%s\t%s\t-\t%s\n", group, now + n / 1000000, d + level, prefix, $3, t, st
      }' "$log" >>"$TIMING"
    exit 0
    ;;
  --report)
    [ -s "$TIMING" ] || {
      echo "no timing recorded ($TIMING)"
      exit 0
    }
    sort -t$'\t' -k1,1g -k2,2g "$TIMING" | cut -f2- | awk -F'\t' '
      function dur(s) { s = int(s + 0.5); return sprintf("%d:%02d", s / 60, s % 60) }
      BEGIN { print "| step | wall | CPU | |"; print "|---|---:|---:|---|" }
      {
        pad = ""
        for (i = 0; i < $2; i++) pad = pad "  "
        cpu = ($5 == "-") ? "" : dur($5)
        st = ($6 == "ok" || $6 == "pass") ? "" : $6
        if ($6 ~ /^beside/) st = "beside the module lane"
        printf "| %s%s | %s | %s | %s |\n", pad, $3, dur($4), cpu, st
        # the total: from the start of the first top-level step to the end
        # of the last (steps beside others run within that span)
        if ($2 == 0) {
          if (first == "" || $1 < first) first = $1
          if ($1 + $4 > last) last = $1 + $4
          tcpu += $5
        }
      }
      END { printf "| **total** | **%s** | **%s** | |\n", dur(last - first), dur(tcpu) }'
    exit 0
    ;;
esac

name="$1"
shift
start="$(date +%s.%N)"
group="$start"
[ "$depth" -gt 0 ] && group="${STEP_GROUP:-$start}"
STEP_GROUP="$group" STEP_BESIDE= STEP_DEPTH=$((depth + 1)) "$@"
rc=$?
end="$(date +%s.%N)"
# times: the shell's own line, then its children's user and system time
# (written to a file: in a pipe or $(…) it would be a subshell's, zero)
tf="$(mktemp)"
times >"$tf"
cpu="$(awk 'NR == 2 {
  split($1, u, /[ms]/); split($2, s, /[ms]/)
  printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tf")"
rm -f "$tf"
status=ok
[ "${STEP_BESIDE:-}" = 1 ] && status=beside
[ "$rc" -eq 0 ] || status="failed ($rc)"
record "$group" "$start" "$depth" "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" "$cpu" "$status"
exit "$rc"
