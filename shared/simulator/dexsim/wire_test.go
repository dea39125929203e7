package dexsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

var dsRules = shapeRules{
	optional: map[string]bool{
		"[].labels": true, "[].priceUsd": true, "[].liquidity": true, "[].fdv": true,
		"[].marketCap": true, "[].pairCreatedAt": true, "[].info": true, "[].boosts": true,
		"[].priceChange.*": true, "[].info.imageUrl": true,
	},
	nullable: map[string]bool{"[].priceUsd": true, "[].fdv": true, "[].marketCap": true, "[].labels": true},
}

func TestDexScreenerTokenPairsShape(t *testing.T) {
	s, c := startServer(t)
	m := s.LoadScenario(testMint, 7)
	status, body := get(t, c, s.DexScreenerURL()+pairsPath(testMint))
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	got := decode(t, body)
	checkShape(t, "", got, fixture(t, "dexscreener_token_pairs.json"), dsRules)

	arr := got.([]any)
	if len(arr) != len(m.Pairs) {
		t.Fatalf("%d pairs served, model has %d", len(arr), len(m.Pairs))
	}
	var quote, noLiq, noUSD, foreign, partial int
	for _, e := range arr {
		p := e.(map[string]any)
		if p["quoteToken"].(map[string]any)["address"] == testMint {
			quote++
		}
		if _, ok := p["liquidity"]; !ok {
			noLiq++
		}
		if v, ok := p["priceUsd"]; !ok {
			noUSD++
		} else if !plainDecimal.MatchString(v.(string)) {
			t.Errorf("priceUsd %q is not a plain decimal", v)
		}
		if !plainDecimal.MatchString(p["priceNative"].(string)) {
			t.Errorf("priceNative %q is not a plain decimal", p["priceNative"])
		}
		if p["chainId"] != "solana" {
			foreign++
		}
		if len(p["priceChange"].(map[string]any)) < 4 {
			partial++
		}
		if u := p["url"].(string); !strings.HasPrefix(u, "https://dexscreener.com/"+p["chainId"].(string)+"/") {
			t.Errorf("url %q", u)
		}
	}
	for name, n := range map[string]int{"quote-side": quote, "no liquidity": noLiq, "no priceUsd": noUSD, "other chain": foreign, "partial priceChange": partial} {
		if n == 0 {
			t.Errorf("scenario has no %s pair", name)
		}
	}
}

func TestDexScreenerPriceUsdNull(t *testing.T) {
	s := New()
	m := Scenario(testMint, 3)
	for i := range m.Pairs {
		if m.Pairs[i].PriceUSD == "" {
			m.Pairs[i].PriceUSDNull = true
		}
	}
	s.SetMarket(testMint, m)
	_, body := serve(s, pairsPath(testMint))
	if !bytes.Contains(body, []byte(`"priceUsd":null`)) {
		t.Fatalf("no explicit null priceUsd in %s", body)
	}
	checkShape(t, "", decode(t, body), fixture(t, "dexscreener_token_pairs.json"), dsRules)
}

func TestDexScreenerLatestTokensShape(t *testing.T) {
	s := New()
	s.LoadScenario(testMint, 7)
	status, body := serve(s, "/latest/dex/tokens/"+testMint+",Unknown111")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	rules := shapeRules{optional: map[string]bool{}, nullable: map[string]bool{}}
	for k, v := range dsRules.optional {
		rules.optional[".pairs"+k] = v
	}
	for k, v := range dsRules.nullable {
		rules.nullable[".pairs"+k] = v
	}
	checkShape(t, "", decode(t, body), fixture(t, "dexscreener_latest_tokens.json"), rules)

	_, body = serve(s, "/latest/dex/tokens/Unknown111")
	if got := strings.TrimSpace(string(body)); got != `{"schemaVersion":"1.0.0","pairs":null}` {
		t.Errorf("unknown token: %s", got)
	}
	// /tokens/v1 keeps the requested chain only.
	_, body = serve(s, "/tokens/v1/solana/"+testMint)
	var pairs []wirePair
	if err := json.Unmarshal(body, &pairs); err != nil || len(pairs) == 0 {
		t.Fatalf("tokens/v1: %v %s", err, body)
	}
	for _, p := range pairs {
		if p.ChainID != "solana" {
			t.Errorf("tokens/v1/solana served chain %s", p.ChainID)
		}
	}
}

var gtRules = shapeRules{
	optional: map[string]bool{
		".data[].attributes.price_change_percentage.*": true,
	},
	nullable: map[string]bool{
		".data[].attributes.base_token_price_usd": true, ".data[].attributes.base_token_price_native_currency": true,
		".data[].attributes.quote_token_price_usd": true, ".data[].attributes.quote_token_price_native_currency": true,
		".data[].attributes.base_token_price_quote_token": true, ".data[].attributes.quote_token_price_base_token": true,
		".data[].attributes.token_price_usd": true, ".data[].attributes.fdv_usd": true,
		".data[].attributes.market_cap_usd": true, ".data[].attributes.reserve_in_usd": true,
		".data[].attributes.pool_created_at": true,
	},
}

func TestGeckoTerminalPoolsShape(t *testing.T) {
	s, c := startServer(t)
	m := s.LoadScenario(testMint, 7)
	status, body := get(t, c, s.GeckoTerminalURL()+"/networks/solana/tokens/"+testMint+"/pools")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	got := decode(t, body)
	checkShape(t, "", got, fixture(t, "geckoterminal_token_pools.json"), gtRules)

	solana := 0
	for _, p := range m.Pairs {
		if p.ChainID() == ChainSolana {
			solana++
		}
	}
	data := got.(map[string]any)["data"].([]any)
	if len(data) != solana {
		t.Fatalf("%d pools, want the %d solana pairs", len(data), solana)
	}
	for _, e := range data {
		p := e.(map[string]any)
		a := p["attributes"].(map[string]any)
		if p["id"] != "solana_"+a["address"].(string) || p["type"] != "pool" {
			t.Errorf("id %v type %v", p["id"], p["type"])
		}
		for _, k := range []string{"base_token_price_usd", "base_token_price_native_currency", "quote_token_price_usd",
			"quote_token_price_native_currency", "base_token_price_quote_token", "quote_token_price_base_token",
			"token_price_usd", "fdv_usd", "market_cap_usd", "reserve_in_usd"} {
			if v, ok := a[k].(string); ok && !plainDecimal.MatchString(v) {
				t.Errorf("%s = %q, not a plain decimal", k, v)
			}
		}
		for _, w := range a["volume_usd"].(map[string]any) {
			if !plainDecimal.MatchString(w.(string)) {
				t.Errorf("volume %q", w)
			}
		}
		if _, err := time.Parse(time.RFC3339, a["pool_created_at"].(string)); err != nil {
			t.Errorf("pool_created_at: %v", err)
		}
		rel := p["relationships"].(map[string]any)
		for _, k := range []string{"base_token", "quote_token"} {
			d := rel[k].(map[string]any)["data"].(map[string]any)
			if d["type"] != "token" || !strings.HasPrefix(d["id"].(string), "solana_") {
				t.Errorf("%s: %v", k, d)
			}
		}
		if d := rel["dex"].(map[string]any)["data"].(map[string]any); d["type"] != "dex" {
			t.Errorf("dex: %v", d)
		}
	}

	// page 2 is empty; a bad page is a 400 with a JSON:API error.
	if status, body := serve(s, poolsPath(testMint)+"?page=2"); status != 200 || string(body) != `{"data":[]}` {
		t.Errorf("page 2: %d %s", status, body)
	}
	if status, _ := serve(s, poolsPath(testMint)+"?page=x"); status != http.StatusBadRequest {
		t.Errorf("bad page: %d", status)
	}
}

func TestUnknownToken(t *testing.T) {
	s, c := startServer(t)
	s.LoadScenario(testMint, 1)
	notFound := fixture(t, "geckoterminal_not_found.json")

	status, body := get(t, c, s.DexScreenerURL()+pairsPath("Unknown1111"))
	if status != http.StatusOK || string(body) != "[]" {
		t.Errorf("dexscreener unknown token: %d %s", status, body)
	}
	// Another chain: [] as well.
	if _, body := get(t, c, s.DexScreenerURL()+"/token-pairs/v1/ethereum/"+testMint); string(body) != "[]" {
		t.Errorf("other chain: %s", body)
	}
	for _, path := range []string{"/networks/solana/tokens/Unknown1111/pools", "/networks/eth/tokens/" + testMint + "/pools"} {
		status, body := get(t, c, s.GeckoTerminalURL()+path)
		if status != http.StatusNotFound {
			t.Errorf("%s: status %d", path, status)
		}
		checkShape(t, "", decode(t, body), notFound, shapeRules{})
		if strings.TrimSpace(string(body)) != `{"errors":[{"status":"404","title":"Not Found"}]}` {
			t.Errorf("%s: body %s", path, body)
		}
	}
	// A token known with no solana pair: [] and an empty data list.
	s.SetMarket("Empty1111", Market{})
	if _, body := serve(s, pairsPath("Empty1111")); string(body) != "[]" {
		t.Errorf("empty market: %s", body)
	}
	if _, body := serve(s, poolsPath("Empty1111")); string(body) != `{"data":[]}` {
		t.Errorf("empty market gecko: %s", body)
	}
	if status, _ := get(t, c, s.URL()+"/nothing/here"); status != http.StatusNotFound {
		t.Errorf("unknown path: %d", status)
	}
}

// TestBaseAndQuote checks both sides on a hand-built market, on both APIs.
func TestBaseAndQuote(t *testing.T) {
	tok := Token{Address: testMint, Name: "Test", Symbol: "TST"}
	m := Market{Token: tok, SOLPriceUSD: "150", Pairs: []Pair{
		{Address: "BasePair111", Dex: "raydium", Side: Base, Other: WrappedSOL,
			PriceUSD: "0.00001234", PriceNative: "0.00000008226", Liquidity: &Liquidity{USD: 1000}},
		{Address: "QuotePair11", Dex: "meteora", Side: Quote, Other: Token{Address: "Other111", Name: "Other", Symbol: "OTH"},
			PriceUSD: "0.5", PriceNative: "40000", Liquidity: &Liquidity{USD: 2000}},
	}}
	s := New()
	s.SetMarket(testMint, m)

	_, body := serve(s, pairsPath(testMint))
	var pairs []wirePair
	if err := json.Unmarshal(body, &pairs); err != nil {
		t.Fatal(err)
	}
	if pairs[0].BaseToken.Address != testMint || pairs[0].QuoteToken.Address != WrappedSOL.Address {
		t.Errorf("base pair tokens: %+v", pairs[0])
	}
	if pairs[1].BaseToken.Address != "Other111" || pairs[1].QuoteToken.Address != testMint {
		t.Errorf("quote pair tokens: %+v", pairs[1])
	}

	truth := s.Truth(testMint)
	if truth.Selected.Address != "QuotePair11" || truth.PriceUSDText != "0.0000125" {
		t.Errorf("truth: selected %s price %s, want QuotePair11 0.0000125", truth.Selected.Address, truth.PriceUSDText)
	}
	if truth.PairPriceUSD["BasePair111"] != "0.00001234" {
		t.Errorf("base pair price %s", truth.PairPriceUSD["BasePair111"])
	}

	_, body = serve(s, poolsPath(testMint))
	var doc gtDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ token, base, quote, name string }{
		"BasePair111": {"0.00001234", "solana_" + testMint, "solana_" + WrappedSOL.Address, "TST / SOL"},
		"QuotePair11": {"0.0000125", "solana_Other111", "solana_" + testMint, "OTH / TST"},
	}
	for _, p := range doc.Data {
		w := want[p.Attributes.Address]
		if got := deref(p.Attributes.TokenPriceUSD); got != w.token {
			t.Errorf("%s: token_price_usd %s, want %s", p.Attributes.Address, got, w.token)
		}
		if p.Relationships.BaseToken.Data.ID != w.base || p.Relationships.QuoteToken.Data.ID != w.quote || p.Attributes.Name != w.name {
			t.Errorf("%s: %+v %s", p.Attributes.Address, p.Relationships, p.Attributes.Name)
		}
	}
	q := doc.Data[1].Attributes
	if deref(q.QuoteTokenPriceUSD) != "0.0000125" || deref(q.BaseTokenPriceQuoteToken) != "40000" || deref(q.QuoteTokenPriceBaseToken) != "0.000025" {
		t.Errorf("quote pool prices: %s %s %s", deref(q.QuoteTokenPriceUSD), deref(q.BaseTokenPriceQuoteToken), deref(q.QuoteTokenPriceBaseToken))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestPlainNumbers(t *testing.T) {
	m := Market{Token: Token{Address: testMint}, Pairs: []Pair{{
		Address: "Tiny", Side: Base, Other: USDC, PriceUSD: "0.0000000123", PriceNative: "0.0000000123",
		Volume: Volumes{M5: 0.0000001}, Liquidity: &Liquidity{USD: 1e22, Base: 1e-7, Quote: 3},
	}}}
	s := New()
	s.SetMarket(testMint, m)
	for _, path := range []string{pairsPath(testMint), poolsPath(testMint)} {
		_, body := serve(s, path)
		checkShape(t, "", decode(t, body), decode(t, body), shapeRules{}) // flags exponent numbers
		if strings.Contains(string(body), "e-") || strings.Contains(string(body), "e+") {
			t.Errorf("%s: exponent notation in %s", path, body)
		}
	}
}
