package envdoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/market"
	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/config"
)

// reference is the committed file, from this package's directory.
var reference = filepath.Join("..", "..", "..", "docs", "environment.md")

// TestEnvironmentReference fails when docs/environment.md is not what the
// config structs say today.
func TestEnvironmentReference(t *testing.T) {
	committed, err := os.ReadFile(reference)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	want := Markdown()
	if bytes.Equal(committed, want) {
		return
	}
	got, exp := strings.Split(string(committed), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(got), len(exp)) {
		var g, e string
		if i < len(got) {
			g = got[i]
		}
		if i < len(exp) {
			e = exp[i]
		}
		if g != e {
			t.Fatalf("docs/environment.md is out of date (run make docs); first difference at line %d:\n  file: %s\n  code: %s", i+1, g, e)
		}
	}
}

// TestEveryVariableDocumented: every variable of every service has a
// description, is listed once, and the sections cover every prefix.
func TestEveryVariableDocumented(t *testing.T) {
	seen := map[string]string{}
	for _, s := range Sections() {
		if len(s.Vars) == 0 {
			t.Errorf("%s: no variables", s.Title)
		}
		for _, v := range s.Vars {
			if strings.TrimSpace(v.Doc) == "" {
				t.Errorf("%s (%s): no doc tag on its field", v.Name, s.Title)
			}
			if prev, dup := seen[v.Name]; dup {
				t.Errorf("%s is read by two configurations (%s and %s)", v.Name, prev, s.Title)
			}
			seen[v.Name] = s.Title
		}
	}
	for _, name := range []string{"SUPPLY_COMMITMENT", "MARKET_DEXSCREENER_RPM", "EDGE_MAX_CONNECTIONS",
		"HOLDERS_MAX_MEMORY_BYTES", "TOKEN_MAX_SUPPLY", "COLLECTOR_WATCH_INTERVAL", "METADATA_STALE_AFTER"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("%s missing from the reference", name)
		}
	}
	md := string(Markdown())
	for name := range seen {
		if !strings.Contains(md, "| `"+name+"` |") {
			t.Errorf("%s has no row", name)
		}
	}
}

// TestDefaultsLoad: each service's defaults, written out as the reference
// shows them and set in the environment, load as the defaults.
func TestDefaultsLoad(t *testing.T) {
	for _, s := range Sections() {
		for _, v := range s.Vars {
			if v.Default != "" {
				t.Setenv(v.Name, v.Default)
			}
		}
	}
	if _, err := config.LoadCommon(); err != nil {
		t.Fatalf("common defaults as listed: %v", err)
	}
	for name, load := range map[string]func() error{
		"edge":    func() error { c, err := edge.LoadConfig(); return same(c, edge.DefaultConfig(), err) },
		"supply":  func() error { c, err := supply.LoadConfig(); return same(c, supply.DefaultConfig(), err) },
		"market":  func() error { c, err := market.LoadConfig(); return same(c, market.DefaultConfig(), err) },
		"holders": func() error { c, err := holders.LoadConfig(); return same(c, holders.DefaultConfig(), err) },
	} {
		if err := load(); err != nil {
			t.Errorf("%s defaults as listed: %v", name, err)
		}
	}
}

// same reports err, or a difference between a loaded config and the
// defaults.
func same[T comparable](got, want T, err error) error {
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("loaded %+v, defaults %+v", got, want)
	}
	return nil
}

func TestCellEscapes(t *testing.T) {
	if got := cell("a|b\nc"); got != `a\|b c` {
		t.Errorf("cell = %q", got)
	}
	if bounds(config.Variable{Min: "1", Max: "10"}) != "1 to 10" || bounds(config.Variable{}) != "" {
		t.Error("bounds")
	}
}
