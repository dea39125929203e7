package chartcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValuesDocIsCurrent: docs/chart-values.md is what make docs writes
// from values.yaml now, with a row for every "# --" comment.
func TestValuesDocIsCurrent(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(chart.Dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ValuesDoc(values)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "chart-values.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(page) != doc {
		t.Error("docs/chart-values.md differs from charts/tokendata/values.yaml: run make docs")
	}
	if want, got := strings.Count(string(values), "# --"), strings.Count(doc, "\n| `"); got != want {
		t.Errorf("%d rows for %d documented values", got, want)
	}
}

// TestValuesDocRows: the table's type, default and description of each
// kind of value.
func TestValuesDocRows(t *testing.T) {
	doc, err := ValuesDoc([]byte(`# Not a value's comment.
# -- A name.
name: ""
section:
  # -- How many.
  count: 3
  # -- On or off.
  on: true
  undocumented: 1
  # -- A probe, with a | in
  # two lines.
  probe: &p {path: /x, port: 80}
  # -- The same probe.
  again: *p
  # -- Big.
  big: [aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, ccccccccccccccccccccccccccccccc, ddddddddddddddddd]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Top level\n\n| key | type | default | description |\n|---|---|---|---|\n| `name` | string | `\"\"` | A name. |\n",
		"| `section.count` | int | `3` | How many. |\n",
		"| `section.on` | bool | `true` | On or off. |\n",
		"| `section.probe` | object | `{path: /x, port: 80}` | A probe, with a \\| in two lines. |\n",
		"| `section.again` | object | `{path: /x, port: 80}` | The same probe. |\n",
		"| `section.big` | list | see values.yaml | Big. |\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %q in\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "undocumented") || strings.Contains(doc, "Not a value") {
		t.Errorf("an undocumented key or a section comment in the table:\n%s", doc)
	}
	if _, err := ValuesDoc([]byte("- a list")); err == nil {
		t.Error("a values file that is not a mapping accepted")
	}
}
