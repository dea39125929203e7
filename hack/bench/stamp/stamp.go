// Package stamp heads each table a benchmark prints with what
// docs/benchmarks.md asks of it: the command that wrote it, the date, the
// commit and the cores of the run, so that the table and its line are
// pasted together.
package stamp

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Line is the heading line of a table written by command (`make bench`),
// measured now at the checkout's commit on this machine's cores.
func Line(command string) string {
	return line(command, time.Now(), commit(), runtime.NumCPU())
}

func line(command string, at time.Time, commit string, cores int) string {
	return fmt.Sprintf("Measured by `%s` on %s, commit %s, %d cores.", command, at.UTC().Format(time.DateOnly), commit, cores)
}

// commit is the checkout's short commit, said to carry uncommitted changes
// when the work tree has any; "unknown" outside a git checkout.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += " with uncommitted changes"
	}
	return c
}

// Thousands writes a count or a rate as the tables do: 33,086.
func Thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
