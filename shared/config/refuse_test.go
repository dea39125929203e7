package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A value that is set is taken as given: never silently replaced by a
// default, and its error names that variable alone.
func TestLoadCommonRefusesWhatItWouldGuess(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		want   []string // every one in the error
		absent string   // never in the error
	}{
		{"mint set but empty beside a real RPC", map[string]string{"TOKEN_MINT": "", "SOLANA_RPC_URL": "https://rpc.example/?api-key=k"},
			[]string{"TOKEN_MINT is set but empty", "give the mint"}, "api-key"},
		{"token file set but empty", map[string]string{"TOKEN_CONFIG": ""}, []string{"TOKEN_CONFIG is set but empty"}, ""},
		{"RPC URL set but empty", map[string]string{"SOLANA_RPC_URL": ""}, []string{"SOLANA_RPC_URL is set but empty"}, ""},
		{"zero refresh", map[string]string{"MARKET_REFRESH": "0s"}, []string{"MARKET_REFRESH: 0s is below the minimum 1s", "unset"}, "STALE_AFTER"},
		{"zero ttl", map[string]string{"SUPPLY_TTL": "0"}, []string{"SUPPLY_TTL: 0s is below the minimum 1s"}, "REFRESH"},
		{"zero shutdown timeout", map[string]string{"SHUTDOWN_TIMEOUT": "0s"}, []string{"SHUTDOWN_TIMEOUT: 0s"}, "DRAIN_DELAY"},
		{"negative drain", map[string]string{"DRAIN_DELAY": "-1s"}, []string{"DRAIN_DELAY: -1s is below the minimum 0s"}, "SHUTDOWN_TIMEOUT"},
		{"drain max below the delay", map[string]string{"DRAIN_DELAY": "5s", "DRAIN_MAX": "2s"}, []string{"DRAIN_MAX: 2s is below DRAIN_DELAY (5s)"}, "SHUTDOWN_TIMEOUT"},
		{"one bad refresh among good ones", map[string]string{"MARKET_REFRESH": "30s", "SUPPLY_REFRESH": "5m", "HOLDERS_REFRESH": "often"},
			[]string{"HOLDERS_REFRESH: "}, "MARKET_REFRESH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := LoadCommon()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tt.absent != "" && strings.Contains(err.Error(), tt.absent) {
				t.Errorf("error %q names %s, which is not at fault", err, tt.absent)
			}
		})
	}
}

func TestLoadCommonDrainDelayZeroIsMeaningful(t *testing.T) {
	t.Setenv("DRAIN_DELAY", "0s")
	t.Setenv("SUPPLY_REFRESH", "1s")
	c, err := LoadCommon()
	if err != nil || c.DrainDelay != 0 || c.Supply.Refresh != time.Second || c.Market.Refresh != time.Minute {
		t.Errorf("LoadCommon = %+v, %v", c, err)
	}
}

func TestCheckBounds(t *testing.T) {
	type inner struct {
		Every time.Duration `env:"EVERY" min:"1ms" max:"1m"`
	}
	type cfg struct {
		Count int   `env:"COUNT" min:"1" max:"10"`
		Free  int   `env:"FREE"`
		Inner inner `envPrefix:"IN_"`
	}
	good := cfg{Count: 1, Inner: inner{Every: time.Minute}}
	if err := CheckBounds(good, "X_"); err != nil {
		t.Errorf("in bounds: %v", err)
	}
	err := CheckBounds(&cfg{Count: 11, Free: -5}, "X_")
	for _, w := range []string{"X_COUNT: 11 is above the maximum 10", "X_IN_EVERY: 0s is below the minimum 1ms (0 does not mean the default"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "FREE") {
		t.Errorf("a field without bounds was checked: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad bound did not panic")
		}
	}()
	type bad struct {
		N int `env:"N" min:"one"`
	}
	_ = CheckBounds(bad{}, "")
}

func TestTokenFileOverTheLimitIsRefused(t *testing.T) {
	dir := t.TempDir()
	// A valid file, but for a comment that takes it past 1 MiB: cut at the
	// limit it would still parse.
	padded := goodToken + "# " + strings.Repeat("x", MaxTokenFileBytes) + "\n"
	path := filepath.Join(dir, "token.yaml")
	if err := os.WriteFile(path, []byte(padded), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadToken(path, "", "")
	if err == nil || !strings.Contains(err.Error(), "TOKEN_CONFIG") || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("LoadToken of a %d-byte file = %v, want a refusal naming TOKEN_CONFIG and the limit", len(padded), err)
	}
	exact := goodToken + "# " + strings.Repeat("x", MaxTokenFileBytes-len(goodToken)-3) + "\n"
	if err := os.WriteFile(path, []byte(exact), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadToken(path, "", ""); err != nil {
		t.Errorf("a file of exactly %d bytes: %v", len(exact), err)
	}
}
