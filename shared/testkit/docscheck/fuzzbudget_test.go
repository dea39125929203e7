package docscheck

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestFuzzBudget: every fuzz target of the modules make test fuzzes has its
// count of inputs in hack/fuzz-budget.tsv (hack/fuzz.sh runs one missing
// for 8 s, whatever the machine's load), and every row of that file is a
// target that exists, with a count of at least 5000.
func TestFuzzBudget(t *testing.T) {
	root := repoRoot(t)
	f, err := os.Open(filepath.Join(root, "hack", "fuzz-budget.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	budget := map[string]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if sc.Text() == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		n, err := strconv.Atoi(cols[len(cols)-1])
		if len(cols) != 3 || err != nil || n < 5000 {
			t.Errorf("hack/fuzz-budget.tsv:%d: want package, target and a count of at least 5000, tab-separated: %q", line, sc.Text())
			continue
		}
		budget[cols[0]+" "+cols[1]] = n
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// the modules of the Makefile's MODULES, as hack/fuzz.sh names a
	// target: module/dir (dir "." for the module's root package)
	modules := regexp.MustCompile(`(?m)^MODULES := (.+)$`).FindSubmatch(readFile(t, filepath.Join(root, "Makefile")))
	if modules == nil {
		t.Fatal("no MODULES := line in the Makefile")
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]+)\(`)
	found := map[string]bool{}
	for _, m := range strings.Fields(string(modules[1])) {
		err := filepath.WalkDir(filepath.Join(root, m), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != filepath.Join(root, m) {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module: fuzzed as its own
				}
			}
			if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return nil
			}
			dir, _ := filepath.Rel(filepath.Join(root, m), filepath.Dir(path))
			for _, name := range fuzzFunc.FindAllSubmatch(readFile(t, path), -1) {
				key := filepath.ToSlash(filepath.Join(m, dir))
				if dir == "." {
					key = m + "/."
				}
				key += " " + string(name[1])
				found[key] = true
				if _, ok := budget[key]; !ok {
					t.Errorf("fuzz target %s has no count of inputs in hack/fuzz-budget.tsv", key)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for key := range budget {
		if !found[key] {
			t.Errorf("hack/fuzz-budget.tsv names %s, which is no fuzz target", key)
		}
	}
	if len(found) == 0 {
		t.Fatal("no fuzz target found: the walk is wrong")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
