package docscheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTimingTable runs hack/step.sh, which writes make test's timing table
// (the table docs/benchmarks.md keeps), on steps of known shape: a step
// within a step is indented one level, a failing step keeps its exit status
// and says so, a step run beside the others counts once in the total (the
// span from the first step's start to the last one's end), and a go test
// -v log gives one row a test and one a subtest, no deeper.
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
	// beside the steps that follow, and longer than all of them
	beside := exec.Command(step, "beside", "sleep", "2.1")
	beside.Env = append(os.Environ(), "TIMING="+timing, "STEP_DEPTH=", "STEP_GROUP=", "STEP_BESIDE=1")
	if err := beside.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // so that it is the first to start
	if out, err := run(nil, "outer", step, "inner", "sleep", "1.1"); err != nil {
		t.Fatalf("outer: %v\n%s", err, out)
	}
	_, err := run(nil, "failing", "sh", "-c", "exit 3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("a step failing with 3: got %v, want exit status 3", err)
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
	if err := beside.Wait(); err != nil {
		t.Fatalf("beside: %v", err)
	}
	report, err := run(nil, "--report")
	if err != nil {
		t.Fatalf("--report: %v\n%s", err, report)
	}
	t.Logf("\n%s", report)
	want := []string{
		`^\| step \| wall \| CPU \| \|$`,
		`^\| beside \| 0:02 \| 0:00 \| beside the module lane \|$`,
		`^\| outer \| 0:01 \| 0:00 \|  \|$`,
		`^\|   inner \| 0:01 \| 0:00 \|  \|$`,
		`^\| failing \| 0:00 \| 0:00 \| failed \(3\) \|$`,
		`^\| tests \| 0:00 \| 0:00 \|  \|$`,
		`^\|   pkg/TestA \| 1:02 \|  \|  \|$`,
		`^\|     pkg/TestA/sub \| 0:00 \|  \|  \|$`,
		`^\|   pkg/TestB \| 0:03 \|  \| fail \|$`,
		// from the start of the step beside the others to its end, which
		// is after theirs: not the sum of the top-level steps (0:03), nor
		// theirs without it (0:01)
		`^\| \*\*total\*\* \| \*\*0:02\*\* \| \*\*0:00\*\* \| \|$`,
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
