package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runLine is the line a measured table is pasted with, as the generators
// print it: the command in backticks, the date, the commit and the cores
// of the run.
var runLine = regexp.MustCompile("Measured by `((?:make [a-z0-9-]+(?: [A-Z_]+=[^` ]+)*)|(?:go test [^`]+))`.*\\b\\d{4}-\\d{2}-\\d{2}\\b.*\\bcommit [0-9a-f]{7,40}\\b.*\\b\\d+ cores\\b")

// measuredTables names the pages whose tables are measurements, and which
// of their lines hold such tables (nil: all of them).
var measuredTables = map[string]func(lines []string) []bool{
	"docs/benchmarks.md": nil,
	"docs/operations.md": between("<!-- fault-matrix:begin", "<!-- fault-matrix:end"),
}

// between marks the lines from a line starting with begin to one starting
// with end.
func between(begin, end string) func([]string) []bool {
	return func(lines []string) []bool {
		in, out := false, make([]bool, len(lines))
		for i, l := range lines {
			switch {
			case strings.HasPrefix(l, begin):
				in = true
			case strings.HasPrefix(l, end):
				in = false
			}
			out[i] = in
		}
		return out
	}
}

var (
	tableRule = regexp.MustCompile(`^\|\s*:?-{3,}`)
	// a table's header row in a Go string literal: "| a | b |" ended by
	// the literal's \n or its closing quote
	printedHeader = regexp.MustCompile(`(\| [^"\\]* \|)(?:\\n|")`)
	printfVerb    = regexp.MustCompile(`%[-+# 0]*[0-9]*(?:\.[0-9]+)?[a-zA-Z]`)
	makeTarget    = regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):`)
)

// printedHeaders are the header rows the repository's Go code and scripts
// print (a benchmark, a test that writes a report, make test's timing
// table), as patterns: a printf verb stands for whatever the run put there.
func printedHeaders(t *testing.T, root string) []*regexp.Regexp {
	t.Helper()
	var out []*regexp.Regexp
	for _, f := range repoFiles(t, root, ".go", ".sh") {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range printedHeader.FindAllStringSubmatch(string(b), -1) {
			parts := printfVerb.Split(m[1], -1)
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			out = append(out, regexp.MustCompile("^"+strings.Join(parts, ".+")+"$"))
		}
	}
	return out
}

// TestMeasuredTablesSayTheirRun: every table of docs/benchmarks.md and the
// fault matrix's table in docs/operations.md is headed, within its
// section, by the line its command prints (the command, a date, a commit,
// the cores); the command exists (a Makefile target, or a go test of a
// package of the repository), and the table's header row is one the
// repository's code prints, so no table stands there that no command
// wrote.
func TestMeasuredTablesSayTheirRun(t *testing.T) {
	root := repoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	headers := printedHeaders(t, root)
	if len(headers) < 5 {
		t.Fatalf("found %d printed table headers in the Go code: the check would prove nothing", len(headers))
	}
	for page, which := range measuredTables {
		m := readMarkdown(t, root, page)
		measured := make([]bool, len(m.lines))
		if which == nil {
			for i := range measured {
				measured[i] = true
			}
		} else {
			measured = which(m.raw)
		}
		tables := 0
		for i := 1; i < len(m.lines); i++ {
			if !tableRule.MatchString(m.lines[i]) || !strings.HasPrefix(m.lines[i-1], "|") || !measured[i] {
				continue
			}
			tables++
			head := strings.TrimSpace(m.lines[i-1])
			at := fmt.Sprintf("%s:%d", page, i)
			var run []string
			for k := i - 2; k >= 0 && heading.FindStringSubmatch(m.lines[k]) == nil; k-- {
				if run = runLine.FindStringSubmatch(m.lines[k]); run != nil {
					break
				}
			}
			switch {
			case run == nil:
				t.Errorf("%s: the table %q has no line above it, in its section, naming the command that wrote it with the date, commit and cores of the run (\"Measured by `make …` on YYYY-MM-DD, commit …, N cores.\")", at, head)
			case strings.HasPrefix(run[1], "make "):
				if target := strings.Fields(run[1])[1]; !targets[target] {
					t.Errorf("%s: `%s` is no target of the Makefile", at, run[1])
				}
			default:
				fields := strings.Fields(run[1])
				pkg := fields[len(fields)-1]
				if st, err := os.Stat(filepath.Join(root, pkg)); err != nil || !st.IsDir() {
					t.Errorf("%s: `%s` names no package directory of the repository", at, run[1])
				}
			}
			found := false
			for _, h := range headers {
				if h.MatchString(head) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: no code of the repository prints the table header %q: a measured table is pasted as its command prints it", at, head)
			}
		}
		if tables == 0 {
			t.Errorf("%s: no measured table found: the check would prove nothing", page)
		}
		t.Logf("%s: %d measured tables checked", page, tables)
	}
}
