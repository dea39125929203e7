package config

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

func TestLoadCommonDefaults(t *testing.T) {
	c, err := LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Demo() || c.HTTPAddr != ":8080" || c.OpsAddr != ":9090" || c.HoldersMethod != "getProgramAccounts" ||
		c.SolanaRPCURL.Reveal() != "https://api.mainnet-beta.solana.com" || c.HoldersRPC() != c.SolanaRPCURL ||
		c.CollectorWatch != 5*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	for d, want := range contract.DefaultTimings {
		if got := c.Timings()[d]; got != want {
			t.Errorf("%s timing = %+v, want %+v", d, got, want)
		}
	}
}

func TestLoadCommonOverrides(t *testing.T) {
	t.Setenv("MARKET_REFRESH", "30s")
	t.Setenv("MARKET_TTL", "5m")
	t.Setenv("HOLDERS_RPC_URL", "https://das.example/?api-key=k")
	t.Setenv("HOLDERS_METHOD", "das")
	c, err := LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	m := c.Timings()[contract.DomainMarket]
	if m.Refresh != 30*time.Second || m.TTL != 5*time.Minute || m.StaleAfter != 180*time.Second {
		t.Errorf("market timing = %+v", m)
	}
	if c.HoldersRPC().Reveal() != "https://das.example/?api-key=k" || c.HoldersMethod != "das" {
		t.Errorf("holders: %+v", c)
	}
}

func TestLoadCommonRejects(t *testing.T) {
	tests := []struct{ name, key, value, want string }{
		{"method", "HOLDERS_METHOD", "scan", "HOLDERS_METHOD"},
		{"rpc url", "SOLANA_RPC_URL", "ftp://x", "SOLANA_RPC_URL"},
		{"ttl below twice the refresh", "MARKET_TTL", "90s", "MARKET_REFRESH/MARKET_STALE_AFTER/MARKET_TTL"},
		{"duration", "SUPPLY_REFRESH", "often", "SUPPLY_REFRESH"},
		{"log level", "LOG_LEVEL", "loud", "LOG_LEVEL"},
		{"addr", "HTTP_ADDR", "8080", "HTTP_ADDR"},
		{"collector watch", "COLLECTOR_WATCH_INTERVAL", "10ms", "COLLECTOR_WATCH_INTERVAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.key, tt.value)
			_, err := LoadCommon()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v does not name %s", err, tt.want)
			}
		})
	}
}

func TestSecretNeverPrints(t *testing.T) {
	t.Setenv("SOLANA_RPC_URL", "https://rpc.example/?api-key=TOPSECRET")
	t.Setenv("REDIS_URL", "redis://:hunter2@cache:6379")
	c, err := LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("start", "config", c)
	js, _ := json.Marshal(c)
	for _, out := range []string{buf.String(), string(js), c.SolanaRPCURL.String()} {
		if strings.Contains(out, "TOPSECRET") || strings.Contains(out, "hunter2") {
			t.Fatalf("secret printed: %s", out)
		}
	}
	if !strings.Contains(buf.String(), "[redacted]") {
		t.Errorf("masked value missing from the log: %s", buf.String())
	}
}

func TestRedact(t *testing.T) {
	s := Secret("https://mainnet.helius-rpc.com/?api-key=abc-123-def")
	for _, msg := range []string{
		`Post "https://mainnet.helius-rpc.com/?api-key=abc-123-def": EOF`,
		`dial tcp: lookup mainnet.helius-rpc.com: no such host`,
		`api-key=abc-123-def rejected`,
	} {
		got := Redact(msg, s)
		if strings.Contains(got, "abc-123-def") {
			t.Errorf("Redact(%q) = %q", msg, got)
		}
	}
	// The host names the provider: an operator reads it to fix a failed
	// connection. A label of it that looks like a key is masked.
	if got := Redact("connection to mainnet.helius-rpc.com failed", s); got != "connection to mainnet.helius-rpc.com failed" {
		t.Errorf("the provider's host was masked: %q", got)
	}
	k := Secret("https://k3yk3yk3y42.solana-mainnet.rpc.example:8443/")
	if got := Redact("connection to k3yk3yk3y42.solana-mainnet.rpc.example:8443 failed", k); got != "connection to [redacted].solana-mainnet.rpc.example:8443 failed" {
		t.Errorf("a key-like host label survived: %q", got)
	}
}

const goodToken = `
mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR
name: Demo Token
symbol: DEMO
decimals: 6
max_supply: "1000000000"
description: A token.
logo: https://example.com/logo.png
public_base_url: https://api.example.com
links:
  - {kind: website, url: "https://example.com"}
official_pairs:
  - {address: 45uGcpfFeZjJQkpjkg2xyuk14BNm3Vvxskyq9qXjHgna, dex: raydium, base: DEMO, quote: SOL}
exchanges:
  - {name: Raydium, type: dex, pair: 45uGcpfFeZjJQkpjkg2xyuk14BNm3Vvxskyq9qXjHgna, base: DEMO, quote: SOL, trade_url: "https://raydium.io/swap", official: true}
`

func TestParseToken(t *testing.T) {
	tok, err := ParseToken(strings.NewReader(goodToken))
	if err != nil {
		t.Fatal(err)
	}
	if tok.MaxSupply != "1000000000" || !tok.MaxSupplyDisclosed() || *tok.Decimals != 6 || !tok.IsOfficialPair("45uGcpfFeZjJQkpjkg2xyuk14BNm3Vvxskyq9qXjHgna") {
		t.Errorf("token = %+v", tok)
	}
	raw, err := tok.MaxSupplyRaw(6)
	if err != nil || raw != "1000000000000000" {
		t.Errorf("MaxSupplyRaw = %q, %v", raw, err)
	}
}

func TestParseTokenRejects(t *testing.T) {
	tests := []struct{ name, edit, want string }{
		{"unknown key (typo)", "symbl: X\n", "symbl"},
		{"bad mint", "mint: notbase58!\n", "mint"},
		{"bad max", "max_supply: 1e9\n", "max_supply"},
		{"fraction max", "max_supply: \"1.5\"\n", "max_supply"},
		{"zero max", "max_supply: 0\n", "max_supply"},
		{"missing max", "", "max_supply: missing"},
		{"bad link", "links: [{kind: web, url: \"javascript:alert(1)\"}]\n", "links[0].url"},
		{"bad exchange type", "exchanges: [{name: X, type: otc}]\n", "exchanges[0].type"},
		{"bad pair", "official_pairs: [{address: abc}]\n", "official_pairs[0].address"},
		{"decimals", "decimals: 30\n", "decimals"},
		{"tolerance not a share", "price_tolerance: \"2%\"\n", "price_tolerance"},
		{"tolerance zero", "price_tolerance: \"0\"\n", "price_tolerance"},
		{"hold bound negative", "price_hold_bound: \"-0.1\"\n", "price_hold_bound"},
		{"hold bound below tolerance", "price_tolerance: \"0.3\"\nprice_hold_bound: \"0.2\"\n", "price_hold_bound: 0.2 must be above price_tolerance 0.3"},
		{"move bound", "price_move_bound: \"many\"\n", "price_move_bound"},
		{"held polls negative", "price_max_held_polls: -1\n", "price_max_held_polls"},
		{"held polls too many", "price_max_held_polls: 101\n", "price_max_held_polls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Later keys replace earlier ones only where yaml allows: use a
			// minimal base so the edit is the only problem.
			doc := "mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR\nname: X\nsymbol: X\n"
			if strings.HasPrefix(tt.edit, "mint:") {
				doc = "name: X\nsymbol: X\n"
			}
			if tt.edit != "" && !strings.HasPrefix(tt.edit, "max_supply:") {
				doc += "max_supply: \"1000000000\"\n"
			}
			_, err := ParseToken(strings.NewReader(doc + tt.edit))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v does not name %s", err, tt.want)
			}
		})
	}
}

func TestResolveToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token.yaml")
	if err := os.WriteFile(path, []byte(goodToken), 0o600); err != nil {
		t.Fatal(err)
	}
	other := "45uGcpfFeZjJQkpjkg2xyuk14BNm3Vvxskyq9qXjHgna"

	tok, demo, err := ResolveToken(Common{TokenConfig: path, TokenMint: other}, false)
	if err != nil || demo || tok.Mint != other || tok.Symbol != "DEMO" {
		t.Errorf("file + override: %+v %v %v", tok, demo, err)
	}
	tok, demo, err = ResolveToken(Common{TokenMint: other, TokenMaxSupply: "21000000"}, false)
	if err != nil || demo || tok.Mint != other || tok.MaxSupply != "21000000" {
		t.Errorf("mint and max supply: %+v %v %v", tok, demo, err)
	}
	tok, demo, err = ResolveToken(Common{}, true)
	if err != nil || !demo || tok.Mint != DemoMint {
		t.Errorf("demo: %+v %v %v", tok, demo, err)
	}
	if _, _, err := ResolveToken(Common{}, false); err == nil || !strings.Contains(err.Error(), "TOKEN_CONFIG") {
		t.Errorf("no token outside standalone: %v", err)
	}
	if _, _, err := ResolveToken(Common{TokenMint: "bad"}, false); err == nil || !strings.Contains(err.Error(), "TOKEN_MINT") {
		t.Errorf("bad mint: %v", err)
	}
	if _, _, err := ResolveToken(Common{TokenConfig: filepath.Join(dir, "missing.yaml")}, false); err == nil || !strings.Contains(err.Error(), "TOKEN_CONFIG") {
		t.Errorf("missing file: %v", err)
	}
	if err := DemoToken().Validate(); err != nil {
		t.Errorf("demo token invalid: %v", err)
	}
}

func TestDefaultIgnoresTheEnvironment(t *testing.T) {
	t.Setenv("HTTP_ADDR", ":1234")
	t.Setenv("LOG_LEVEL", "debug")
	c := Default[Common]()
	if c.HTTPAddr != ":8080" || c.LogLevel != "info" || c.HoldersMethod != "getProgramAccounts" || c.RedisURL != "" {
		t.Errorf("Default[Common]() = %+v", c)
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad envDefault tag did not panic")
		}
	}()
	type bad struct {
		N int `env:"N" envDefault:"many"`
	}
	_ = Default[bad]()
}

// TestRedactEveryForm: a key is masked however an upstream quotes it —
// bare, URL-encoded, hex-dumped or inside a longer URL — for keys in the
// query, in the path and in the user info.
func TestRedactEveryForm(t *testing.T) {
	const (
		queryKey = "9f3c/Kq+zZ=a&b"
		pathKey  = "AbCdEf0123456789xyz"
		password = "hunter2-pw"
	)
	secrets := []Secret{
		Secret("https://mainnet.helius-rpc.com/?api-key=" + url.QueryEscape(queryKey) + "&commitment=1"),
		Secret("https://eth.alchemy.example/v2/" + pathKey),
		Secret("redis://default:" + password + "@cache.internal:6379/0"),
	}
	r := NewRedactor(secrets...)
	for _, key := range []string{queryKey, pathKey, password} {
		for _, msg := range []string{
			"api key " + key + " is not allowed",
			"api key " + url.QueryEscape(key) + " is not allowed",
			"api key " + url.PathEscape(key) + " is not allowed",
			"api key " + strings.ToLower(url.QueryEscape(key)) + " is not allowed",
			"key (hex) " + hex.EncodeToString([]byte(key)) + " / " + strings.ToUpper(hex.EncodeToString([]byte(key))),
			`Post "https://proxy.example/fwd?to=https%3A%2F%2Fnode.example%2Frpc%3Fapi-key%3D` + url.QueryEscape(key) + `": EOF`,
			"refused https://node.example/v1/" + url.PathEscape(key) + "/getTokenSupply?x=1",
			"AUTH failed for " + key + key, // touching copies: one mask, nothing left between
		} {
			got := r.Redact(msg)
			if strings.Contains(got, key) || strings.Contains(strings.ToLower(got), strings.ToLower(url.QueryEscape(key))) ||
				strings.Contains(strings.ToLower(got), hex.EncodeToString([]byte(key))) {
				t.Errorf("Redact(%q) = %q: the key survived", msg, got)
			}
			if !strings.Contains(got, Mask) {
				t.Errorf("Redact(%q) = %q: no mask", msg, got)
			}
		}
	}
	// Short values and ordinary path segments are not secrets: the text
	// around them stays readable.
	for _, msg := range []string{
		"commitment 1 is fine", "v2 of the API", "true", "the default user", "GET /v2/ failed",
	} {
		if got := r.Redact(msg); got != msg {
			t.Errorf("Redact(%q) = %q: ordinary text changed", msg, got)
		}
	}
	if got := r.Redact("héllo \xff world " + pathKey); got != "héllo \xff world "+Mask {
		t.Errorf("non-ASCII text: %q", got)
	}
	var none *Redactor
	if got := none.Redact("api key " + pathKey); got != "api key "+pathKey {
		t.Errorf("nil redactor changed the text: %q", got)
	}
}

func TestTokenLikePathSegments(t *testing.T) {
	for seg, want := range map[string]bool{
		"v2": false, "v1beta": true, "default": false, "rpc": false, "solana-mainnet": false,
		"v1beta3": true, "123456": true, "abcdefghijklmnop": true, "AbCdEf0123456789": true,
	} {
		if got := tokenLike(seg); got != want {
			t.Errorf("tokenLike(%q) = %v, want %v", seg, got, want)
		}
	}
}

func TestSecretsOf(t *testing.T) {
	c := Common{SolanaRPCURL: "https://a.example/?k=1", RedisURL: "redis://:pw@r:6379"}
	got := SecretsOf(&c)
	if len(got) != 2 || got[0] != c.SolanaRPCURL || got[1] != c.RedisURL {
		t.Errorf("SecretsOf = %v", got)
	}
	type nested struct {
		Inner struct{ Key Secret }
		Ptr   *Common
	}
	if got := SecretsOf(nested{Ptr: &c}); len(got) != 2 {
		t.Errorf("nested SecretsOf = %v", got)
	}
}

// TestMaxSupplyNeverGuessed: live mode requires the maximum supply to be
// stated, as a number or as none; nothing fills it in.
func TestMaxSupplyNeverGuessed(t *testing.T) {
	dir := t.TempDir()
	file := func(name, maxLine string) string {
		p := filepath.Join(dir, name)
		body := "mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR\nname: X\nsymbol: X\n" + maxLine
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noMax := file("nomax.yaml", "")
	other := "45uGcpfFeZjJQkpjkg2xyuk14BNm3Vvxskyq9qXjHgna"

	refused := []struct {
		name string
		c    Common
		want []string
	}{
		{"file without max_supply", Common{TokenConfig: noMax},
			[]string{"max_supply: missing", `max_supply: "1000000000"`, "max_supply: none"}},
		{"TOKEN_MINT alone", Common{TokenMint: other},
			[]string{"TOKEN_MAX_SUPPLY", "TOKEN_MAX_SUPPLY=1000000000", "TOKEN_MAX_SUPPLY=none", "TOKEN_CONFIG"}},
		{"file and mint override without max_supply", Common{TokenConfig: noMax, TokenMint: other}, []string{"max_supply: missing"}},
		{"bad TOKEN_MAX_SUPPLY", Common{TokenMint: other, TokenMaxSupply: "1e9"}, []string{"TOKEN_MAX_SUPPLY"}},
		{"zero TOKEN_MAX_SUPPLY", Common{TokenMint: other, TokenMaxSupply: "0"}, []string{"TOKEN_MAX_SUPPLY"}},
		{"TOKEN_MAX_SUPPLY without a token", Common{TokenMaxSupply: "1000"}, []string{"TOKEN_MAX_SUPPLY"}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			tok, _, err := ResolveToken(tt.c, true)
			if err == nil {
				t.Fatalf("accepted: %+v", tok)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}

	accepted := []struct {
		name      string
		c         Common
		max       string
		disclosed bool
	}{
		{"file with none", Common{TokenConfig: file("none.yaml", "max_supply: none\n")}, MaxSupplyNone, false},
		{"file with None", Common{TokenConfig: file("None.yaml", "max_supply: None\n")}, MaxSupplyNone, false},
		{"file with a number", Common{TokenConfig: file("num.yaml", "max_supply: 21000000\n")}, "21000000", true},
		{"file without max_supply, TOKEN_MAX_SUPPLY", Common{TokenConfig: noMax, TokenMaxSupply: "5"}, "5", true},
		{"TOKEN_MINT and TOKEN_MAX_SUPPLY=NONE", Common{TokenMint: other, TokenMaxSupply: "NONE"}, MaxSupplyNone, false},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			tok, demo, err := ResolveToken(tt.c, true)
			if err != nil || demo {
				t.Fatalf("ResolveToken: %v (demo %v)", err, demo)
			}
			if tok.MaxSupply != tt.max || tok.MaxSupplyDisclosed() != tt.disclosed {
				t.Errorf("max_supply %q disclosed %v, want %q %v", tok.MaxSupply, tok.MaxSupplyDisclosed(), tt.max, tt.disclosed)
			}
			if _, err := tok.MaxSupplyRaw(6); tt.disclosed != (err == nil) || (!tt.disclosed && !errors.Is(err, ErrMaxSupplyNotDisclosed)) {
				t.Errorf("MaxSupplyRaw: %v", err)
			}
		})
	}

	// Demo mode states its maximum supply; it is not a default.
	if tok, demo, err := ResolveToken(Common{}, true); err != nil || !demo || tok.MaxSupply != DemoMaxSupply || !tok.MaxSupplyDisclosed() {
		t.Errorf("demo: %+v %v %v", tok, demo, err)
	}
}

func TestPriceBoundsDefaults(t *testing.T) {
	b, err := Token{}.PriceBounds()
	if err != nil {
		t.Fatal(err)
	}
	if b.Tolerance.String() != "0.02" || b.HoldBound.String() != "0.2" || b.MaxHeldPolls != 5 || b.MoveBound.String() != "0.5" {
		t.Errorf("defaults %+v", b)
	}
	zero := 0
	b, err = Token{PriceMoveWarning: "0.3", PriceTolerance: "0.01", PriceHoldBound: "0.4", PriceMaxHeldPolls: &zero}.PriceBounds()
	if err != nil {
		t.Fatal(err)
	}
	if b.Tolerance.String() != "0.01" || b.HoldBound.String() != "0.4" || b.MaxHeldPolls != 0 || b.MoveBound.String() != "0.3" {
		t.Errorf("set %+v", b)
	}
}
