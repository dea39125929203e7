package docscheck

import (
	"errors"
	"fmt"
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
	// beside the steps that follow, and ending after all of them: it
	// waits for the file the test writes once they are done (so the
	// table's figures hold on a loaded machine too)
	done := filepath.Join(t.TempDir(), "done")
	started := filepath.Join(t.TempDir(), "started")
	beside := exec.Command(step, "beside", "sh", "-c", `: >"$1"; while [ ! -e "$0" ]; do sleep 0.05; done; sleep 0.2`, done, started)
	beside.Env = append(os.Environ(), "TIMING="+timing, "STEP_DEPTH=", "STEP_GROUP=", "STEP_BESIDE=1")
	if err := beside.Start(); err != nil {
		t.Fatal(err)
	}
	// It is the first to start: step.sh takes a step's start before it
	// runs the step's command, and that command has begun once the file
	// is there. (A fixed sleep was not enough on a loaded machine.)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the step beside has not started its command in a minute: %v", err)
		}
	}
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
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := beside.Wait(); err != nil {
		t.Fatalf("beside: %v", err)
	}
	report, err := run(nil, "--report")
	if err != nil {
		t.Fatalf("--report: %v\n%s", err, report)
	}
	t.Logf("\n%s", report)
	// The wall times of the steps that ran are whatever this machine
	// took (at least the sleeps'); the go test rows are the log's.
	want := []string{
		`^\| step \| wall \| CPU \| \|$`,
		`^\| beside \| (\d+:\d\d) \| \d+:\d\d \| beside the module lane \|$`,
		`^\| outer \| (\d+:\d\d) \| \d+:\d\d \|  \|$`,
		`^\|   inner \| (\d+:\d\d) \| \d+:\d\d \|  \|$`,
		`^\| failing \| \d+:\d\d \| \d+:\d\d \| failed \(3\) \|$`,
		`^\| tests \| \d+:\d\d \| \d+:\d\d \|  \|$`,
		`^\|   pkg/TestA \| 1:02 \|  \|  \|$`,
		`^\|     pkg/TestA/sub \| 0:00 \|  \|  \|$`,
		`^\|   pkg/TestB \| 0:03 \|  \| fail \|$`,
		`^\| \*\*total\*\* \| \*\*(\d+:\d\d)\*\* \| \*\*\d+:\d\d\*\* \| \|$`,
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
	wall := map[int]time.Duration{}
	for i, w := range want {
		m := regexp.MustCompile(w).FindStringSubmatch(rows[i])
		if m == nil {
			t.Errorf("row %d: %q, want %s", i, rows[i], w)
			continue
		}
		if len(m) > 1 {
			var min, sec int
			if _, err := fmt.Sscanf(m[1], "%d:%d", &min, &sec); err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			wall[i] = time.Duration(min)*time.Minute + time.Duration(sec)*time.Second
		}
	}
	besideWall, outer, inner, total := wall[1], wall[2], wall[3], wall[9]
	if inner < time.Second || outer < inner {
		t.Errorf("inner %s, outer %s: want inner at least its 1.1 s sleep and outer at least inner", inner, outer)
	}
	// from the start of the step beside the others (the first to start)
	// to its end (the last): its own wall time, not the sum of the
	// top-level steps (at least outer's more)
	if total != besideWall {
		t.Errorf("total %s, want the span of the step beside, %s", total, besideWall)
	}
}
