package standalone_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fault matrix: each row is one test that injects a fault
// into real parts (redis-server, HTTP on loopback, the simulator's faults,
// the service binaries) and records what it measured. TestMain writes the
// rows, in matrix order, as a Markdown table to the file named by
// FAULT_MATRIX_REPORT (make test prints it; make fault-matrix copies it
// into docs/operations.md).

// matrixRow is one measured row.
type matrixRow struct {
	// Order places the row in the table; Fault names it.
	Order int
	Fault string
	// During is what a client sees while the fault lasts; Status is what
	// /api/status says then.
	During, Status string
	// Recovery is the measured time from the end of the fault to the
	// recovery the row asserts; Bound is the asserted limit, stretched by
	// OffCPU, the time this process was kept from the cores meanwhile
	// (offcpu_test.go).
	Recovery, Bound, OffCPU time.Duration
	// RecoveryNote replaces the recovery figure where the row has none
	// (a property that holds throughout rather than a time to recover).
	RecoveryNote string
}

var matrix struct {
	sync.Mutex
	rows []matrixRow
}

// recordRow adds a measured row once its test has asserted it; rows of a
// failed test are not reported.
func recordRow(t *testing.T, r matrixRow) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		matrix.Lock()
		defer matrix.Unlock()
		matrix.rows = append(matrix.rows, r)
	})
	if r.RecoveryNote != "" {
		t.Logf("fault matrix: %s: %s", r.Fault, r.RecoveryNote)
	} else {
		t.Logf("fault matrix: %s: recovered in %s (bound %s + %s kept from the cores)", r.Fault, r.Recovery.Round(10*time.Millisecond), r.Bound,
			r.OffCPU.Round(10*time.Millisecond))
	}
}

// matrixTable renders the recorded rows as a Markdown table.
func matrixTable() string {
	matrix.Lock()
	defer matrix.Unlock()
	if len(matrix.rows) == 0 {
		return ""
	}
	rows := append([]matrixRow(nil), matrix.rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Order < rows[j].Order })
	var b strings.Builder
	b.WriteString("| fault | what clients see during it | `/api/status` | recovery (measured, asserted bound) |\n")
	b.WriteString("|---|---|---|---|\n")
	for _, r := range rows {
		rec := r.RecoveryNote
		if rec == "" {
			rec = fmt.Sprintf("%s (≤ %s)", roundDuration(r.Recovery), r.Bound)
			if r.OffCPU >= 100*time.Millisecond {
				rec = fmt.Sprintf("%s (≤ %s + %s waiting for a core)", roundDuration(r.Recovery), r.Bound, roundDuration(r.OffCPU))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Fault, r.During, r.Status, rec)
	}
	return b.String()
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(10 * time.Millisecond)
	}
}

// writeMatrix writes the table to FAULT_MATRIX_REPORT, when set.
func writeMatrix() error {
	path := os.Getenv("FAULT_MATRIX_REPORT")
	table := matrixTable()
	if path == "" || table == "" {
		return nil
	}
	return os.WriteFile(path, []byte(table), 0o644)
}

// matrixRows is the number of rows of the matrix; when a run recorded all
// of them, the table of docs/operations.md must list exactly those faults.
const matrixRows = 25

// operationsDoc holds the fault matrix's table, from this package's directory.
const operationsDoc = "../../docs/operations.md"

// checkOperationsDoc compares the faults of the table in docs/operations.md
// with the recorded rows: every recorded fault must be in the table and,
// after a run of the whole matrix, the table must have no other row. The figures are
// not compared: they move from run to run (make fault-matrix rewrites them).
func checkOperationsDoc() error {
	matrix.Lock()
	recorded := map[string]bool{}
	for _, r := range matrix.rows {
		recorded[r.Fault] = true
	}
	matrix.Unlock()
	if len(recorded) == 0 {
		return nil
	}
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		return err
	}
	s := string(b)
	const begin, end = "<!-- fault-matrix:begin", "<!-- fault-matrix:end -->"
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no fault-matrix table between its markers", operationsDoc)
	}
	inDoc := map[string]bool{}
	for _, line := range strings.Split(s[i:j], "\n")[1:] {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 4 || strings.HasPrefix(line, "| fault |") {
			continue
		}
		inDoc[strings.TrimPrefix(cells[0], "| ")] = true
	}
	var problems []string
	for f := range recorded {
		if !inDoc[f] {
			problems = append(problems, fmt.Sprintf("row %q is not in the table", f))
		}
	}
	if len(recorded) == matrixRows {
		for f := range inDoc {
			if !recorded[f] {
				problems = append(problems, fmt.Sprintf("the table's row %q is no row of the matrix", f))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("the fault matrix of %s is out of date (run make fault-matrix): %s", operationsDoc, strings.Join(problems, "; "))
	}
	return nil
}
