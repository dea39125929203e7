package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFileTypoNamesTheKeyAndItsFix: an unknown key of the token file
// is named with its line and where it is, with the valid key nearest to
// it; never the Go type the file is decoded into.
func TestTokenFileTypoNamesTheKeyAndItsFix(t *testing.T) {
	const base = "mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR\nmax_supply: \"1000000000\"\n"
	tests := []struct {
		name, edit string
		want       []string
	}{
		{"top level", "offical_pairs: []\n", //nolint:misspell // a deliberate typo
			[]string{`line 3: unknown key "offical_pairs" in the token file; did you mean "official_pairs"?`}}, //nolint:misspell // a deliberate typo
		{"missing letter", "symbl: X\n", []string{`line 3: unknown key "symbl" in the token file; did you mean "symbol"?`}},
		{"transposed letters", "links:\n  - {kidn: website, url: \"https://example.com\"}\n",
			[]string{`line 4: unknown key "kidn" in links[0]; did you mean "kind"?`}},
		{"nested, second item", "exchanges:\n  - {name: A, type: dex}\n  - {name: B, type: cex, trade_ulr: \"https://b.example\"}\n",
			[]string{`line 5: unknown key "trade_ulr" in exchanges[1]; did you mean "trade_url"?`}},
		{"case", "Max_Supply: \"5\"\n", []string{`unknown key "Max_Supply" in the token file; did you mean "max_supply"?`}},
		{"several at once", "pricemove_warning: \"0.2\"\npublic_base: \"https://x.example\"\n", []string{
			`line 3: unknown key "pricemove_warning" in the token file; did you mean "price_move_warning"?`,
			`line 4: unknown key "public_base" in the token file`}},
		{"no key near", "website: \"https://x.example\"\n", []string{
			`line 3: unknown key "website" in the token file; the keys there are decimals, description, exchanges, links, logo, max_supply, mint, name, official_pairs, price_hold_bound, price_max_held_polls, price_move_bound, price_move_warning, price_tolerance, public_base_url, signing_key_thumbprint, symbol`}},
		{"under a merge", "defaults: &d {dex: raydium, qoute: SOL}\n", []string{`unknown key "defaults" in the token file`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseToken(strings.NewReader(base + tt.edit))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not say\n%s", err, w)
				}
			}
			if strings.Contains(err.Error(), "config.") || strings.Contains(err.Error(), "not found in type") {
				t.Errorf("error names a Go type: %v", err)
			}
		})
	}
}

// TestTokenFileTypoThroughLoadToken: the path the services take names the
// variable, the file, the key and the fix.
func TestTokenFileTypoThroughLoadToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token.yaml")
	doc := "mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR\nmax_supply: none\nofficial_pairs:\n  - {adress: 45uGcpfFeZjJQkpjkg2xyuk14BNm3Vvxskyq9qXjHgna}\n" //nolint:misspell // a deliberate typo
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadToken(path, "", "")
	want := "TOKEN_CONFIG " + path + `: line 4: unknown key "adress" in official_pairs[0]; did you mean "address"?` //nolint:misspell // a deliberate typo
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
}

// TestKnownKeysStillDecode: merges and aliases of valid keys are accepted.
func TestKnownKeysStillDecode(t *testing.T) {
	doc := `mint: Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR
max_supply: "21000000"
exchanges:
  - &ray {name: Raydium, type: dex, base: X, quote: SOL}
  - <<: *ray
    quote: USDC
`
	tok, err := ParseToken(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Exchanges) != 2 || tok.Exchanges[1].Name != "Raydium" || tok.Exchanges[1].Quote != "USDC" {
		t.Errorf("exchanges = %+v", tok.Exchanges)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"kind", "kind", 0}, {"kidn", "kind", 1}, {"symbl", "symbol", 1},
		{"offical_pairs", "official_pairs", 1}, {"abc", "", 3}, {"logo", "name", 4}, {"ca", "abc", 3}, //nolint:misspell // a deliberate typo
	} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
	if s, ok := nearestKey("website", []string{"logo", "mint", "name"}); ok {
		t.Errorf("suggested %q for a key near nothing", s)
	}
}
