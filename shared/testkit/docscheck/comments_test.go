package docscheck

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// issueCite is a comment citing an issue by its number.
var issueCite = regexp.MustCompile(`(?i)\bissues? #?\d+`)

// upstream reports whether a comment line cites an upstream bug by its
// address (go.dev/issue/N, a GitHub issue, any URL): that says why the
// code is as it is, and a reader can follow it.
func upstream(line string) bool {
	return strings.Contains(line, "go.dev/issue") || strings.Contains(line, "github.com/") || strings.Contains(line, "://")
}

// commentLine is one line of a comment: its text and its line number.
type commentLine struct {
	n    int
	text string
}

// citesIssue returns the lines of one comment (consecutive lines, so that
// a citation broken over two lines is found too, joined by one blank)
// where a citation of an issue by number starts, upstream ones left out.
func citesIssue(lines []commentLine) []int {
	var joined strings.Builder
	starts := make([]int, len(lines)) // offset of each line in joined
	for i, l := range lines {
		starts[i] = joined.Len()
		joined.WriteString(strings.TrimSpace(l.text))
		joined.WriteByte(' ')
	}
	lineAt := func(off int) int {
		i := len(starts) - 1
		for i > 0 && starts[i] > off {
			i--
		}
		return i
	}
	var out []int
	for _, m := range issueCite.FindAllStringIndex(joined.String(), -1) {
		first, last := lineAt(m[0]), lineAt(m[1]-1)
		if upstream(lines[first].text) || upstream(lines[last].text) {
			continue
		}
		out = append(out, lines[first].n)
	}
	return out
}

// goComments are the comments of a Go file, one slice per comment group.
func goComments(t *testing.T, name string, src []byte) [][]commentLine {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return nil
	}
	var out [][]commentLine
	for _, g := range f.Comments {
		var group []commentLine
		for _, c := range g.List {
			text := strings.TrimPrefix(c.Text, "//")
			if strings.HasPrefix(c.Text, "/*") {
				text = strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/")
			}
			first := fset.Position(c.Pos()).Line
			for i, l := range strings.Split(text, "\n") {
				group = append(group, commentLine{first + i, l})
			}
		}
		out = append(out, group)
	}
	return out
}

// hashComment is the comment of one line of a shell script, the
// Makefile, a Dockerfile or YAML: what follows the first # that starts
// the line or follows a blank, outside quotes ("" and false when there is
// none). A quote opens only where a word starts, so that an apostrophe
// in plain YAML text (the edge's) opens none.
func hashComment(line string) (string, bool) {
	var quote rune
	prev, escaped := ' ', false
	for i, r := range line {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case (r == '\'' || r == '"') && !unicode.IsLetter(prev) && !unicode.IsDigit(prev):
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return line[i+1:], true
		}
		prev = r
	}
	return "", false
}

// hashComments are the comments of a file commented with #, one slice per
// run of consecutive commented lines.
func hashComments(src []byte) [][]commentLine {
	var out [][]commentLine
	var group []commentLine
	for i, l := range strings.Split(string(src), "\n") {
		if c, ok := hashComment(l); ok {
			group = append(group, commentLine{i + 1, c})
			continue
		}
		if group != nil {
			out, group = append(out, group), nil
		}
	}
	if group != nil {
		out = append(out, group)
	}
	return out
}

// proseOrOutside: a path whose comments this check leaves alone: docs/
// and the CHANGELOG (prose, which may tell history), and what the
// repository does not write itself (test inputs, vendored or installed
// code, built tools).
func proseOrOutside(p string) bool {
	if strings.HasPrefix(p, "docs/") || strings.Contains(strings.ToUpper(path.Base(p)), "CHANGELOG") {
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		switch dir {
		case ".git", "node_modules", "testdata", "vendor", ".bin":
			return true
		}
	}
	return false
}

// TestCommentsCiteNoIssue: comments say what the code does and why, not
// which issue asked for it: an issue number tells a reader nothing
// without the tracker, and what it stood for is said in words or left to
// the doc that states it (docs/api.md, docs/decisions.md). Go comments
// are read with go/parser; in shell scripts, the Makefile, the Dockerfile
// and YAML, what follows an unquoted #. An upstream bug cited by its
// address (go.dev/issue/N, a GitHub URL) stays.
func TestCommentsCiteNoIssue(t *testing.T) {
	root := repoRoot(t)
	var checked int
	for _, f := range repoFiles(t, root, ".go", ".sh", ".yaml", ".yml", "Makefile", "Dockerfile") {
		if proseOrOutside(f) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		checked++
		comments := hashComments
		if strings.HasSuffix(f, ".go") {
			comments = func(src []byte) [][]commentLine { return goComments(t, f, src) }
		}
		for _, c := range comments(src) {
			for _, n := range citesIssue(c) {
				t.Errorf("%s:%d: a comment cites an issue by number: say what and why instead, or name the doc that states the rule", f, n)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the check would prove nothing", checked)
	}
	t.Logf("%d files checked", checked)
}

// TestCommentReading pins how comments are found and read.
func TestCommentReading(t *testing.T) {
	for line, want := range map[string]string{
		"# a comment":                    " a comment",
		"x=1 # set x":                    " set x",
		`echo "a # b" # c`:               " c",
		`echo 'a # b' # c`:               " c",
		`echo a\ \# b`:                   "",
		"n=${#list[@]} # count":          " count",
		"echo $#":                        "",
		"description: the edge's # note": " note",
		`url: "http://x/#frag"`:          "",
	} {
		got, ok := hashComment(line)
		if got != want || ok != (want != "") {
			t.Errorf("hashComment(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
	cite := []commentLine{{1, " the rows of the matrix (issue"}, {2, " 20): each row"}}
	if got := citesIssue(cite); len(got) != 1 || got[0] != 1 {
		t.Errorf("a citation over two lines: got lines %v, want [1]", got)
	}
	for _, l := range []string{" a race in the runtime, go.dev/issue/75804", " upstream issue 1234, https://github.com/x/y/issues/1234", " the token's issuer"} {
		if got := citesIssue([]commentLine{{1, l}}); len(got) != 0 {
			t.Errorf("%q: reported as citing an issue", l)
		}
	}
	if got := citesIssue([]commentLine{{7, " TestX (ISSUE #12.6): what"}}); len(got) != 1 || got[0] != 7 {
		t.Errorf("a citation with #: got lines %v, want [7]", got)
	}
	src := "// Package p.\npackage p\n\n/* one\n   two (issue 3) */\nvar x = 1 // see issues 4 and 5\n"
	var got []int
	for _, c := range goComments(t, "p.go", []byte(src)) {
		got = append(got, citesIssue(c)...)
	}
	if len(got) != 2 || got[0] != 5 || got[1] != 6 {
		t.Errorf("Go comments: got lines %v, want [5 6]", got)
	}
}
