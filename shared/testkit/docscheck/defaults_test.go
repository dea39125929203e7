package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A default lives in the code (an envDefault tag) or in values.yaml, and
// in the pages generated from them: docs/environment.md and
// docs/chart-values.md. Another page links there; where restating a
// default reads much better, it is written in one of the forms below,
// which TestRestatedDefaultsMatchCode compares with the generated pages:
//
//   - the name, then the value in parentheses: `HOLDERS_RESYNC` (30 h),
//     `EDGE_ACCESS_LOG_RATE` (10), `COLLECTOR_WATCH_INTERVAL` (5 s by
//     default), HOLDERS_TTL (default 168h);
//   - the name, then within a few words "(default …)":
//     `HOLDERS_CROSSCHECK_EVERY`-th poll (default 4), `HOLDERS_LIVE`
//     (default `auto`);
//   - a table with a "default" column, whose row names one variable (or,
//     naming none, one value): docs/chart.md's Limits, api.md's Caching.
//
// The name is a variable (in backticks or bare) or a value's key (in
// backticks); the value a number with its unit (s, min, h, hours, days,
// KiB, MiB…) or, after "default", a code span. A parenthesis that starts
// with anything else ("(set to 6h)", "(e.g. …)") is not a restatement.

// restatedPages are the pages checked: the reference, the services' and
// the chart's READMEs. docs/CHANGELOG.md is history: the defaults of
// releases past stay as they were.
func restatedPages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, f := range repoFiles(t, root, ".md") {
		dir, name := filepath.Split(f)
		switch {
		case f == "docs/CHANGELOG.md":
		case dir == "docs/", f == "README.md", f == "services/edge/API.md", f == "charts/tokendata/README.md":
			out = append(out, f)
		case strings.HasPrefix(f, "services/") && name == "README.md" && strings.Count(f, "/") == 2:
			out = append(out, f)
		}
	}
	return out
}

// setting is one default of the generated pages.
type setting struct {
	kind  string // duration, integer, boolean, string, secret; a value's: string, int, bool…
	value string // as the page writes it, backticks and a string's quotes removed; "" for none
	page  string // where it is defined
}

var (
	envRow    = regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]+)` \\| ([a-z]+) \\| (`[^`]*`|none) \\|")
	valuesRow = regexp.MustCompile("^\\| `([A-Za-z0-9_.]+)` \\| ([a-z]+) \\| `([^`]*)` \\|")
)

// generatedDefaults reads every variable's default from
// docs/environment.md and every value's from docs/chart-values.md.
func generatedDefaults(t *testing.T, root string) (env, values map[string]setting) {
	t.Helper()
	env, values = map[string]setting{}, map[string]setting{}
	for _, l := range readMarkdown(t, root, "docs/environment.md").lines {
		if m := envRow.FindStringSubmatch(l); m != nil {
			v := strings.Trim(m[3], "`")
			if m[3] == "none" {
				v = ""
			}
			env[m[1]] = setting{kind: m[2], value: v, page: "docs/environment.md"}
		}
	}
	for _, l := range readMarkdown(t, root, "docs/chart-values.md").lines {
		if m := valuesRow.FindStringSubmatch(l); m != nil {
			values[m[1]] = setting{kind: m[2], value: strings.Trim(m[3], `"`), page: "docs/chart-values.md"}
		}
	}
	if len(env) < 100 || len(values) < 100 {
		t.Fatalf("read %d variables from docs/environment.md and %d values from docs/chart-values.md: the tables' format changed, the check would prove nothing", len(env), len(values))
	}
	return env, values
}

const (
	// a number and its unit, the unit a whole word
	valueRe = `(\d+(?:,\d{3})*(?:\.\d+)?)(?:\s?(ms|µs|seconds?|secs?|s|minutes?|mins?|min|m|hours?|h|days?|d|KiB|MiB|GiB|bytes?)\b)?`
	envName = "[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
)

var (
	// `NAME` (value… or NAME (value…, the name in backticks or a bare
	// variable; "default" may stand before the value
	restatedNow = regexp.MustCompile("(?:`([A-Za-z][A-Za-z0-9_.]*)`|\\b(" + envName + ")\\b)\\**\\s*\\(\\s*(?:default:?\\s+)?" + valueRe)
	// `NAME` … (default value…, within a few words
	restatedNear  = regexp.MustCompile("(?:`([A-Za-z][A-Za-z0-9_.]*)`|\\b(" + envName + ")\\b)[^()`.;|]{0,40}?\\(\\s*default:?\\s+(?:`([^`]+)`|" + valueRe + ")")
	tableCodeSpan = regexp.MustCompile("`([^`]+)`")
	leadingValue  = regexp.MustCompile(`^\s*(?:` + "`([^`]+)`" + `|` + valueRe + `)`)
)

// durationUnit turns a page's unit into Go's.
var durationUnit = map[string]string{
	"ms": "ms", "µs": "µs", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
	"h": "h", "hour": "h", "hours": "h",
}

var byteUnit = map[string]int64{"byte": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

// restated is one default a page restates.
type restated struct {
	name   string
	number string // the number and its unit, when written so
	unit   string
	code   string // the code span, when written so
}

// matches says whether r states s's default, and if not what s's is.
func (r restated) matches(s setting) (bool, error) {
	want := s.value
	kind := s.kind
	if strings.HasSuffix(r.name, "Seconds") && kind == "int" { // a value in seconds
		want, kind = want+"s", "duration"
		if r.unit == "" {
			r.unit = "s"
		}
	}
	if r.code != "" {
		if d1, err1 := time.ParseDuration(r.code); err1 == nil {
			if d2, err2 := time.ParseDuration(want); err2 == nil {
				return d1 == d2, nil
			}
		}
		return r.code == want, nil
	}
	n := strings.ReplaceAll(r.number, ",", "")
	if d2, err := time.ParseDuration(want); err == nil && (kind == "duration" || kind == "string") {
		if r.unit == "d" || strings.HasPrefix(r.unit, "day") {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return false, err
			}
			return time.Duration(f*24*float64(time.Hour)) == d2, nil
		}
		u, ok := durationUnit[r.unit]
		if r.unit == "" && n == "0" {
			u, ok = "s", true
		}
		if !ok {
			return false, fmt.Errorf("a duration written without a time unit")
		}
		d1, err := time.ParseDuration(n + u)
		if err != nil {
			return false, err
		}
		return d1 == d2, nil
	}
	if kind == "integer" || kind == "int" {
		mult := int64(1)
		if r.unit != "" {
			m, ok := byteUnit[r.unit]
			if !ok {
				return false, fmt.Errorf("an integer written with the unit %q", r.unit)
			}
			mult = m
		}
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return false, err
		}
		// a default that is no integer differs from any integer restated
		w, werr := strconv.ParseInt(want, 10, 64)
		return werr == nil && int64(f*float64(mult)) == w, nil
	}
	return n == want && r.unit == "", nil
}

func (r restated) String() string {
	if r.code != "" {
		return "`" + r.code + "`"
	}
	return strings.TrimSpace(r.number + " " + r.unit)
}

// proseRestatements finds the restated defaults of a page's text (fenced
// code left out), with their line numbers.
func proseRestatements(m markdown) (out []restated, lines []int) {
	text := strings.Join(m.lines, "\n")
	lineOf := func(i int) int { return strings.Count(text[:i], "\n") + 1 }
	seen := map[int]bool{}
	for _, loc := range restatedNow.FindAllStringSubmatchIndex(text, -1) {
		name := sub(text, loc, 1) + sub(text, loc, 2)
		seen[loc[0]] = true
		out, lines = append(out, restated{name: name, number: sub(text, loc, 3), unit: sub(text, loc, 4)}), append(lines, lineOf(loc[0]))
	}
	for _, loc := range restatedNear.FindAllStringSubmatchIndex(text, -1) {
		if seen[loc[0]] {
			continue
		}
		name := sub(text, loc, 1) + sub(text, loc, 2)
		out, lines = append(out, restated{name: name, code: sub(text, loc, 3), number: sub(text, loc, 4), unit: sub(text, loc, 5)}), append(lines, lineOf(loc[0]))
	}
	return out, lines
}

func sub(s string, loc []int, i int) string {
	if loc[2*i] < 0 {
		return ""
	}
	return s[loc[2*i]:loc[2*i+1]]
}

// cells splits a table row.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	out := strings.Split(row, "|")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// tableRestatements finds the rows of tables with a "default" column that
// name one variable, or else one value, and the default they give; known
// says which a name is ("variable", "value" or "").
func tableRestatements(m markdown, known func(string) string) (out []restated, lines []int) {
	for i := 1; i < len(m.lines); i++ {
		if !tableRule.MatchString(strings.TrimSpace(m.lines[i])) || !strings.HasPrefix(strings.TrimSpace(m.lines[i-1]), "|") {
			continue
		}
		col := -1
		for k, c := range cells(m.lines[i-1]) {
			if strings.EqualFold(c, "default") {
				col = k
			}
		}
		if col < 0 {
			continue
		}
		for j := i + 1; j < len(m.lines) && strings.HasPrefix(strings.TrimSpace(m.lines[j]), "|"); j++ {
			row := cells(m.lines[j])
			if col >= len(row) {
				continue
			}
			var vars, keys []string // a variable wins over the value that carries it (`holders.extraEnv`: `HOLDERS_MAX_ACCOUNTS`)
			for k, c := range row {
				if k == col {
					continue
				}
				for _, s := range tableCodeSpan.FindAllStringSubmatch(c, -1) {
					switch known(s[1]) {
					case "variable":
						vars = append(vars, s[1])
					case "value":
						keys = append(keys, s[1])
					}
				}
			}
			names := vars
			if len(vars) == 0 {
				names = keys
			}
			v := leadingValue.FindStringSubmatch(row[col])
			if len(names) != 1 || v == nil {
				continue
			}
			out, lines = append(out, restated{name: names[0], code: v[1], number: v[2], unit: v[3]}), append(lines, j+1)
		}
	}
	return out, lines
}

// TestRestatedDefaultsMatchCode: every default a page restates (in the
// forms above) is the one of docs/environment.md (the envDefault tags) or
// docs/chart-values.md (values.yaml).
func TestRestatedDefaultsMatchCode(t *testing.T) {
	root := repoRoot(t)
	env, values := generatedDefaults(t, root)
	lookup := func(name string) (setting, bool) {
		if s, ok := env[name]; ok {
			return s, true
		}
		s, ok := values[name]
		return s, ok
	}
	known := func(name string) string {
		if _, ok := env[name]; ok {
			return "variable"
		}
		if _, ok := values[name]; ok {
			return "value"
		}
		return ""
	}
	checked := 0
	for _, f := range restatedPages(t, root) {
		m := readMarkdown(t, root, f)
		prose, pl := proseRestatements(m)
		var table []restated
		var tl []int
		if f != "docs/environment.md" && f != "docs/chart-values.md" { // the sources themselves
			table, tl = tableRestatements(m, known)
		}
		for i, r := range append(prose, table...) {
			line := append(pl, tl...)[i]
			s, ok := lookup(r.name)
			if !ok {
				continue // not a variable nor a value: GOGC, a token file's key…
			}
			checked++
			ok, err := r.matches(s)
			switch {
			case err != nil:
				t.Errorf("%s:%d: %s restated as %s: %v; its default is %s in %s", f, line, r.name, r, err, show(s.value), s.page)
			case !ok:
				t.Errorf("%s:%d: %s restated as %s, but its default is %s (%s): write the default, or link to %s", f, line, r.name, r, show(s.value), s.page, s.page)
			}
		}
	}
	if checked < 10 {
		t.Errorf("%d restated defaults found: the forms changed, the check would prove nothing", checked)
	}
	t.Logf("%d restated defaults checked", checked)
}

func show(v string) string {
	if v == "" {
		return "none"
	}
	return "`" + v + "`"
}

// chartOwnDefaults are the values the chart sets to a variable on purpose
// unlike the service's default, with the reason.
var chartOwnDefaults = map[string]string{
	"lifecycle.drainMax": "a stopping pod keeps serving while its Service still sends to it (docs/chart.md)",
}

var (
	// - name: DRAIN_DELAY / value: {{ .Values.lifecycle.drainDelay | quote }}
	chartEnvQuoted = regexp.MustCompile(`- name: ([A-Z][A-Z0-9_]+)\s+value: \{\{ \.Values\.([A-Za-z0-9_.]+) \| quote \}\}`)
	// value: {{ printf ":%d" (int .Values.ports.ops) | quote }}, or the
	// printf of workloads.yaml: an address made of a port value
	chartEnvPort = regexp.MustCompile(`([A-Z][A-Z0-9_]+_ADDR)(?:\\n\s+value: %q" \(printf|\s+value: \{\{ printf) ":%d" \(int \$?(?:root)?\.Values\.([A-Za-z0-9_.]+)\)`)
)

// TestChartValuesAreTheServicesDefaults: a value of values.yaml the
// templates hand to a service's variable as it is (LOG_LEVEL from
// logLevel, DRAIN_DELAY from lifecycle.drainDelay, OPS_ADDR from
// ports.ops…) is that variable's default, spelt the same, unless
// chartOwnDefaults says why the chart differs: it restates the default,
// so it must not drift from it.
func TestChartValuesAreTheServicesDefaults(t *testing.T) {
	root := repoRoot(t)
	env, values := generatedDefaults(t, root)
	templates, err := filepath.Glob(filepath.Join(root, "charts", "tokendata", "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range templates {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		type pair struct{ variable, key, prefix string }
		var pairs []pair
		for _, m := range chartEnvQuoted.FindAllStringSubmatch(string(b), -1) {
			pairs = append(pairs, pair{m[1], m[2], ""})
		}
		for _, m := range chartEnvPort.FindAllStringSubmatch(string(b), -1) {
			pairs = append(pairs, pair{m[1], m[2], ":"})
		}
		for _, p2 := range pairs {
			e, ok := env[p2.variable]
			v, ok2 := values[p2.key]
			if !ok || !ok2 || v.value == "" { // an empty value leaves the variable unset
				continue
			}
			checked++
			if why, own := chartOwnDefaults[p2.key]; own {
				if p2.prefix+v.value == e.value {
					t.Errorf("%s is %s, %s's default: remove it from chartOwnDefaults (%s)", p2.key, show(v.value), p2.variable, why)
				}
				continue
			}
			if got := p2.prefix + v.value; got != e.value {
				t.Errorf("values.yaml's %s gives %s %s, but its default is %s (docs/environment.md): spell it as the service does, or say in chartOwnDefaults why the chart differs", p2.key, p2.variable, show(got), show(e.value))
			}
		}
	}
	if checked < 4 {
		t.Errorf("%d values handed to a variable found in the templates: the templates' form changed, the check would prove nothing", checked)
	}
	t.Logf("%d chart values compared with the services' defaults", checked)
}
