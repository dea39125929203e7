package main

// What the run prints besides wrk's figures: allocs/op of the edge's
// BenchmarkServe, the verdicts, and the README's number formats.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/tokendata/tokendata/hack/bench/stamp"
)

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// serveAllocs runs the edge's BenchmarkServe (identity) and returns
// allocs/op by path.
func serveAllocs(root string) (map[string]string, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^BenchmarkServe$/^identity", "-benchmem", "-benchtime", "20000x", ".")
	cmd.Dir = filepath.Join(root, "services", "edge")
	cmd.Env = withoutGOWORK(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench Serve in services/edge: %w\n%s", err, out)
	}
	allocs := map[string]string{}
	for _, m := range reAllocs.FindAllStringSubmatch(string(out), -1) {
		allocs[m[1]] = m[2]
	}
	for _, p := range paths {
		if allocs[p] == "" {
			return nil, fmt.Errorf("no allocs/op for %s in:\n%s", p, out)
		}
	}
	return allocs, nil
}

var reAllocs = regexp.MustCompile(`(?m)^BenchmarkServe/identity(/\S+?)(?:-\d+)?\s.*?\s([0-9]+) allocs/op`)

// withoutGOWORK drops GOWORK=off (run.sh builds this module outside the
// workspace; services/edge builds inside it).
func withoutGOWORK(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOWORK=") {
			out = append(out, kv)
		}
	}
	return out
}

// thousands formats requests per second as docs/benchmarks.md does: 33,086.
func thousands(v float64) string { return stamp.Thousands(v) }

// ms formats a latency in milliseconds with one decimal.
func ms(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" }

// clockTicks is USER_HZ, the unit of the CPU times of /proc/<pid>/stat
// (100 on Linux).
const clockTicks = 100

// cpuTicks is the user and system CPU time of pid and of its children
// (nginx's workers), in clock ticks; 0 when /proc cannot tell.
func cpuTicks(pid int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command is in parentheses and may hold spaces: fields count
		// from the last ')'. After it: state ppid ... utime(12) stime(13).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); n != pid && ppid != pid {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + s
	}
	return total
}

// signedRow compares the signed edge e with the unsigned one on path p:
// the console row, the README row, and whether it is within 5 %
// (throughput ≥ 0.95×, CPU per request ≤ 1.05×; p99 is shown, not
// judged: at a fraction of a millisecond one scheduling hiccup moves it
// by more than 5 %).
func signedRow(p string, e, s result) (row, md string, ok bool) {
	rps, p99, cpu := s.rps/e.rps, s.p99/e.p99, s.cpu/e.cpu
	row = fmt.Sprintf("%-18s | %7.0f %6.2f %5.1f | %7.0f %6.2f %5.1f | %5.2f %5.2f %5.2f\n", p, e.rps, e.p99, e.cpu, s.rps, s.p99, s.cpu, rps, p99, cpu)
	md = fmt.Sprintf("| %s | %s / %s / %.0f µs | %s / %s / %.0f µs | %.2f× / %.2f× / %.2f× |\n", p,
		thousands(e.rps), ms(e.p99), e.cpu, thousands(s.rps), ms(s.p99), s.cpu, rps, p99, cpu)
	return row, md, rps >= 0.95 && cpu <= 1.05
}
