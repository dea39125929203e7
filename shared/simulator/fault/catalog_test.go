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
	var src []byte
	for _, f := range []string{"fault.go", "aggregator.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
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
		"geckoterminal=skew:5%":                 {"geckoterminal", Fault{Kind: PriceSkew, Skew: "5"}},
		"dexscreener=skew:-40%*2":               {"dexscreener", Fault{Kind: PriceSkew, Skew: "-40", Times: 2}},
		"geckoterminal=skew:0.5":                {"geckoterminal", Fault{Kind: PriceSkew, Skew: "0.5"}},
		"dexscreener=down":                      {"dexscreener", Fault{Kind: Reset}},
	} {
		got, err := ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "=reset", "r=", "r=nope", "r=reset:1", "r=latency:-1s", "r=truncate:x", "r=reset*0", "r=skew", "r=skew:x%", "r=skew:-100%", "r=skew:1e3", "r=skew:1/2", "r=skew:20000%", "r=down:1"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
}

func TestSkewFactor(t *testing.T) {
	for skew, want := range map[string]string{"5": "21/20", "-40": "3/5", "0": "1"} {
		if got := (Fault{Kind: PriceSkew, Skew: skew}).SkewFactor(); got == nil || got.RatString() != want {
			t.Errorf("SkewFactor(%s) = %v, want %s", skew, got, want)
		}
	}
	if (Fault{Kind: Reset, Skew: "5"}).SkewFactor() != nil {
		t.Error("a factor for a fault that is not a skew")
	}
}
