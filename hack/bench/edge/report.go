package main

// What the run prints besides wrk's figures: allocs/op of the edge's
// BenchmarkServe, the verdicts, and the README's number formats.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// thousands formats requests per second as README does: 33,086.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ms formats a latency in milliseconds with one decimal.
func ms(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" }
