// Package docscheck holds the repository's documentation rules as tests:
// every relative link of every Markdown file resolves to a file of the
// repository (and its #anchor to a heading of that file), every path a
// Markdown file quotes as code exists, and nothing cites a document
// outside the repository (the specification the project was first
// written from, a path that climbs above the repository root), which a user cloning the
// repository would not have.
package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the directory of go.work, above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's directory: the check needs the repository")
		}
		dir = parent
	}
}

// repoFiles lists the repository's files (relative, slash-separated)
// whose names end in one of exts: git's tracked and not-ignored files when
// git knows the directory, else every file outside dot-directories.
func repoFiles(t *testing.T, root string, exts ...string) []string {
	t.Helper()
	match := func(name string) bool {
		for _, e := range exts {
			if strings.HasSuffix(name, e) {
				return true
			}
		}
		return false
	}
	var out []string
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if b, err := cmd.Output(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && match(l) {
				if _, err := os.Stat(filepath.Join(root, l)); err == nil { // not deleted in the work tree
					out = append(out, l)
				}
			}
		}
		return out
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && match(p) {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	htmlHref   = regexp.MustCompile(`(?i)<a\s[^>]*href="([^"]+)"`)
	htmlAnchor = regexp.MustCompile(`(?i)<a\s[^>]*(?:id|name)="([^"]+)"`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// a repository path quoted as code: dirs/…/name.ext, nothing that is a
	// pattern or a placeholder
	quotedPath = regexp.MustCompile("`(\\.{0,2}/?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:md|ya?ml|go|sh|json|tpl|golden|txt))`")
)

// markdown is one Markdown file read for the checks.
type markdown struct {
	path  string   // relative to the root, slash-separated
	lines []string // with fenced code blocks blanked
	raw   []string // as written
}

func readMarkdown(t *testing.T, root, path string) markdown {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	m := markdown{path: path}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		m.raw = append(m.raw, l)
		if fence.MatchString(l) {
			in = !in
			m.lines = append(m.lines, "")
			continue
		}
		if in {
			m.lines = append(m.lines, "")
			continue
		}
		m.lines = append(m.lines, l)
	}
	return m
}

// anchors are the fragment names a file's headings (GitHub's slugs) and
// HTML anchors give.
func (m markdown) anchors() map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	for _, l := range m.lines {
		for _, a := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[a[1]] = true
		}
		h := heading.FindStringSubmatch(l)
		if h == nil {
			continue
		}
		s := slug(h[2])
		if n := count[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		count[s]++
	}
	return out
}

// slug is GitHub's anchor of a heading: the text without markup, lower
// case, every character but letters, digits, '-', '_' and spaces dropped,
// spaces turned into '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllStringFunc(text, func(s string) string { // [text](url) → text
		return s[strings.Index(s, "[")+1 : strings.Index(s, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// links are the link targets of a file, with their line numbers.
func (m markdown) links() (targets []string, lines []int) {
	for i, l := range m.lines {
		l = codeSpan.ReplaceAllString(l, "")
		for _, re := range []*regexp.Regexp{inlineLink, htmlHref} {
			for _, s := range re.FindAllStringSubmatch(l, -1) {
				targets, lines = append(targets, s[1]), append(lines, i+1)
			}
		}
		if s := refDef.FindStringSubmatch(l); s != nil {
			targets, lines = append(targets, s[1]), append(lines, i+1)
		}
	}
	return targets, lines
}

// inside reports whether p (absolute, cleaned) is within root.
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// TestMarkdownLinksResolve: every relative link of every Markdown file
// names a file or directory of the repository, and its #anchor a heading
// of the file it names.
func TestMarkdownLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root, ".md")
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files under %s: the check would prove nothing", len(files), root)
	}
	docs := map[string]markdown{}
	for _, f := range files {
		docs[f] = readMarkdown(t, root, f)
	}
	checked := 0
	for _, f := range files {
		m := docs[f]
		targets, lines := m.links()
		for i, target := range targets {
			if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue // absolute URL: not this check's business
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			var abs string
			switch {
			case path == "":
				abs = filepath.Join(root, f)
			case strings.HasPrefix(path, "/"): // GitHub: from the repository's root
				abs = filepath.Join(root, path)
			default:
				abs = filepath.Join(root, filepath.Dir(f), path)
			}
			at := fmt.Sprintf("%s:%d: link %q", f, lines[i], target)
			if !inside(root, abs) {
				t.Errorf("%s leaves the repository", at)
				continue
			}
			st, err := os.Stat(abs)
			if err != nil {
				t.Errorf("%s: no such file in the repository", at)
				continue
			}
			if anchor == "" || st.IsDir() || !strings.HasSuffix(abs, ".md") {
				continue
			}
			rel, _ := filepath.Rel(root, abs)
			d, ok := docs[filepath.ToSlash(rel)]
			if !ok {
				d = readMarkdown(t, root, filepath.ToSlash(rel))
			}
			if !d.anchors()[anchor] {
				t.Errorf("%s: %s has no heading with the anchor #%s", at, filepath.ToSlash(rel), anchor)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found in any Markdown file: the check would prove nothing")
	}
	t.Logf("%d relative links in %d Markdown files", checked, len(files))
}

// TestQuotedPathsExist: a repository path a Markdown file quotes as code
// (`services/edge/openapi.yaml`) names a file that exists, from the
// repository's root or from the file's directory.
func TestQuotedPathsExist(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, f := range repoFiles(t, root, ".md") {
		for i, l := range readMarkdown(t, root, f).lines {
			for _, s := range quotedPath.FindAllStringSubmatch(l, -1) {
				p := s[1]
				if strings.HasPrefix(p, "/") { // an API path, not a file
					continue
				}
				if writtenByMake(p) {
					continue
				}
				checked++
				fromRoot, fromFile := filepath.Join(root, p), filepath.Join(root, filepath.Dir(f), p)
				_, e1 := os.Stat(fromRoot)
				_, e2 := os.Stat(fromFile)
				if (e1 != nil || !inside(root, fromRoot)) && (e2 != nil || !inside(root, fromFile)) {
					t.Errorf("%s:%d: `%s` is no file of the repository", f, i+1, p)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no quoted path found: the check would prove nothing")
	}
}

// writtenByMake: a path under a directory the Makefile's targets create
// and .gitignore leaves out (make cluster-up writes .cluster/, the tool
// builds .bin/), so no clean checkout holds it.
func writtenByMake(p string) bool {
	for _, dir := range []string{".cluster/", ".bin/"} {
		if strings.HasPrefix(p, dir) {
			return true
		}
	}
	return false
}

// TestNothingCitesOutsideTheRepository: no file cites the specification
// document the project was first written from (it is not in the
// repository), and no Markdown, YAML or template file points above the
// repository's root with a ../ path.
func TestNothingCitesOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	outside := "contract" + ".md" // spelled in two parts, so that this file does not match itself
	escaping := regexp.MustCompile(`(?:^|[\s("'\x60=:])((?:\.\./)+[A-Za-z0-9_.-][A-Za-z0-9_./-]*)`)
	files := repoFiles(t, root, ".md", ".go", ".yaml", ".yml", ".tpl", ".txt", ".sh", ".json", "Makefile", "Dockerfile")
	if len(files) < 50 {
		t.Fatalf("found %d files: the check would prove nothing", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, outside) {
				t.Errorf("%s:%d cites %s, which is not in the repository: cite README.md, docs/ or services/edge/openapi.yaml", f, i+1, outside)
			}
			if strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "go.mod") || strings.HasSuffix(f, "Dockerfile") {
				continue // paths in code are relative to where it runs, not to the file
			}
			for _, s := range escaping.FindAllStringSubmatch(l, -1) {
				if p := filepath.Join(root, filepath.Dir(f), s[1]); !inside(root, p) {
					t.Errorf("%s:%d: %s points above the repository's root", f, i+1, s[1])
				}
			}
		}
	}
}

// TestSlug pins the anchor rule against GitHub's own anchors.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"The two commands":            "the-two-commands",
		"Limits of the public server": "limits-of-the-public-server",
		"Configuration (EDGE_ prefix, besides the README's common variables)": "configuration-edge_-prefix-besides-the-readmes-common-variables",
		"`/api/price`: the price":                           "apiprice-the-price",
		"Metrics (namespace `tokendata`, subsystem `edge`)": "metrics-namespace-tokendata-subsystem-edge",
		"A [link](x.md) in it":                              "a-link-in-it",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
	m := markdown{lines: []string{"# A", "## A", "<a id=\"custom\"></a>", "### B b"}}
	a := m.anchors()
	for _, want := range []string{"a", "a-1", "custom", "b-b"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
}
