package docscheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTimingTable runs hack/step.sh, which writes make test's timing table
// (the table docs/benchmarks.md keeps), on steps of known shape: a step
// within a step is indented one level, a failing step keeps its exit status
// and says so, a step run beside the others is left out of the total, and
// a go test -v log gives one row a test and one a subtest, no deeper.
func TestTimingTable(t *testing.T) {
	root := repoRoot(t)
	step := filepath.Join(root, "hack", "step.sh")
	timing := filepath.Join(t.TempDir(), "timing.tsv")
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(step, args...)
		cmd.Env = append(append(os.Environ(), "TIMING="+timing, "STEP_DEPTH=", "STEP_GROUP=", "STEP_BESIDE="), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(nil, "outer", step, "inner", "sleep", "1.1"); err != nil {
		t.Fatalf("outer: %v\n%s", err, out)
	}
	_, err := run(nil, "failing", "sh", "-c", "exit 3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("a step failing with 3: got %v, want exit status 3", err)
	}
	if out, err := run([]string{"STEP_BESIDE=1"}, "beside", "sleep", "2.1"); err != nil {
		t.Fatalf("beside: %v\n%s", err, out)
	}
	log := filepath.Join(t.TempDir(), "test.log")
	if err := os.WriteFile(log, []byte(strings.Join([]string{
		"=== RUN   TestA",
		"--- PASS: TestA (61.50s)",
		"    --- PASS: TestA/sub (0.20s)",
		"        --- PASS: TestA/sub/deeper (0.10s)",
		"--- FAIL: TestB (3.00s)",
		"FAIL",
	}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(nil, "tests", step, "--gotest", "pkg", log); err != nil {
		t.Fatalf("--gotest: %v\n%s", err, out)
	}
	report, err := run(nil, "--report")
	if err != nil {
		t.Fatalf("--report: %v\n%s", err, report)
	}
	t.Logf("\n%s", report)
	want := []string{
		`^\| step \| wall \| CPU \| \|$`,
		`^\| outer \| 0:01 \| 0:00 \|  \|$`,
		`^\|   inner \| 0:01 \| 0:00 \|  \|$`,
		`^\| failing \| 0:00 \| 0:00 \| failed \(3\) \|$`,
		`^\| beside \| 0:02 \| 0:00 \| beside the steps below \|$`,
		`^\| tests \| 0:00 \| 0:00 \|  \|$`,
		`^\|   pkg/TestA \| 1:02 \|  \|  \|$`,
		`^\|     pkg/TestA/sub \| 0:00 \|  \|  \|$`,
		`^\|   pkg/TestB \| 0:03 \|  \| fail \|$`,
		// outer, failing and tests: the step beside them is within their time
		`^\| \*\*total\*\* \| \*\*0:01\*\* \| \*\*0:00\*\* \| \|$`,
	}
	var rows []string
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, "|") && !strings.HasPrefix(l, "|---") {
			rows = append(rows, l)
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), report)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(rows[i]) {
			t.Errorf("row %d: %q, want %s", i, rows[i], w)
		}
	}
}
