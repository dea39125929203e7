package stamp

import (
	"regexp"
	"testing"
	"time"
)

// The line carries what the documentation check looks for: the command in
// backticks, a date, a commit and the cores.
func TestLine(t *testing.T) {
	got := line("make bench", time.Date(2026, 11, 27, 23, 30, 0, 0, time.FixedZone("x", 3600)), "1af94aa", 2)
	want := "Measured by `make bench` on 2026-11-27, commit 1af94aa, 2 cores."
	if got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	if l := Line("make bench-holders"); !regexp.MustCompile("^Measured by `make bench-holders` on \\d{4}-\\d{2}-\\d{2}, commit \\S+.*, \\d+ cores\\.$").MatchString(l) {
		t.Errorf("Line = %q", l)
	}
}
