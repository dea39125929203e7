package fault

import (
	"os"
	"regexp"
	"testing"
	"time"
)

// TestCatalogHasEveryKind: every Kind constant of this package is
// documented in Catalog (simulate --help prints it).
func TestCatalogHasEveryKind(t *testing.T) {
	src, err := os.ReadFile("fault.go")
	if err != nil {
		t.Fatal(err)
	}
	kinds := regexp.MustCompile(`(?m)^\s+\w+\s+Kind = "(\w+)"`).FindAllSubmatch(src, -1)
	if len(kinds) < 20 {
		t.Fatalf("found %d kinds in fault.go: the pattern is wrong", len(kinds))
	}
	for _, k := range kinds {
		if _, ok := Lookup(Kind(k[1])); !ok {
			t.Errorf("kind %s is not in Catalog", k[1])
		}
	}
	if len(Catalog) != len(kinds) {
		t.Errorf("Catalog has %d entries, fault.go %d kinds", len(Catalog), len(kinds))
	}
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]Spec{
		"getProgramAccounts=rpc_excluded_index": {"getProgramAccounts", Fault{Kind: RPCExcludedIndex}},
		"dexscreener=pairs_empty":               {"dexscreener", Fault{Kind: PairsEmpty}},
		"*=latency:250ms":                       {"*", Fault{Kind: Latency, Delay: 250 * time.Millisecond}},
		"*=latency":                             {"*", Fault{Kind: Latency, Delay: 2 * time.Second}},
		"getTokenSupply=truncate:10*3":          {"getTokenSupply", Fault{Kind: Truncate, AfterBytes: 10, Times: 3}},
		"geckoterminal=http_503*1":              {"geckoterminal", Fault{Kind: HTTP503, Times: 1}},
	} {
		got, err := ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "=reset", "r=", "r=nope", "r=reset:1", "r=latency:-1s", "r=truncate:x", "r=reset*0"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
}
