package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestVariablesOfCommon: the reference lists every common variable with
// its type, the default a user gets, its bounds and a description.
func TestVariablesOfCommon(t *testing.T) {
	vars := Variables(DefaultCommon(), "")
	byName := map[string]Variable{}
	for _, v := range vars {
		if _, dup := byName[v.Name]; dup {
			t.Errorf("%s listed twice", v.Name)
		}
		byName[v.Name] = v
		if strings.TrimSpace(v.Doc) == "" {
			t.Errorf("%s has no doc tag", v.Name)
		}
		if strings.Contains(v.Doc, "{domain}") {
			t.Errorf("%s: placeholder left in %q", v.Name, v.Doc)
		}
	}
	if len(vars) != len(envVars(reflect.TypeFor[Common](), "")) {
		t.Errorf("%d variables listed, the struct reads %d", len(vars), len(envVars(reflect.TypeFor[Common](), "")))
	}
	for name, want := range map[string]Variable{
		"SOLANA_RPC_URL":      {Type: "secret", Default: "https://api.mainnet-beta.solana.com"},
		"TOKEN_MAX_SUPPLY":    {Type: "string"},
		"OPS_PPROF":           {Type: "boolean", Default: "false"},
		"DRAIN_DELAY":         {Type: "duration", Default: "5s", Min: "0s"},
		"MARKET_REFRESH":      {Type: "duration", Default: "1m", Min: "1s"},
		"MARKET_TTL":          {Type: "duration", Default: "10m", Min: "1s"},
		"SUPPLY_TTL":          {Type: "duration", Default: "168h", Min: "1s"},
		"METADATA_TTL":        {Type: "duration", Default: "720h", Min: "1s"},
		"HOLDERS_STALE_AFTER": {Type: "duration", Default: "1h", Min: "1s"},
	} {
		got, ok := byName[name]
		if !ok {
			t.Errorf("%s not listed", name)
			continue
		}
		if got.Type != want.Type || got.Default != want.Default || got.Min != want.Min || got.Max != want.Max {
			t.Errorf("%s = %+v, want type %q default %q min %q max %q", name, got, want.Type, want.Default, want.Min, want.Max)
		}
	}
	if d := byName["HOLDERS_TTL"].Doc; !strings.Contains(d, "holders document") {
		t.Errorf("HOLDERS_TTL doc does not name its domain: %q", d)
	}
	// Every default the reference shows is what LoadCommon gives.
	for _, v := range vars {
		if v.Default == "" {
			continue
		}
		t.Setenv(v.Name, v.Default)
	}
	got, err := LoadCommon()
	if err != nil {
		t.Fatalf("the listed defaults, set, are refused: %v", err)
	}
	if got.Timings()["holders"] != DefaultCommon().Timings()["holders"] || got.OpsAddr != DefaultCommon().OpsAddr {
		t.Errorf("the listed defaults load as %+v", got)
	}
}

func TestShortDuration(t *testing.T) {
	for in, want := range map[string]string{"168h0m0s": "168h", "1m0s": "1m", "1h30m0s": "1h30m", "5s": "5s", "100ms": "100ms", "1h0m1s": "1h0m1s"} {
		d, err := time.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %s, want %s", in, got, want)
		}
	}
}
