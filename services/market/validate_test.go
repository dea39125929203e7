package market

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// checkPublished asserts the rules of validate.go on a document: every
// string valid UTF-8 without forbidden runes, text within its cap,
// addresses of solana pairs keys or "", links http(s), figures of kept
// pairs in range.
func checkPublished(t *testing.T, m contract.Market) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if !utf8.ValidString(x) || strings.ContainsRune(x, utf8.RuneError) || strings.IndexFunc(x, forbiddenRune) >= 0 {
				t.Errorf("published string %q has invalid UTF-8 or a forbidden rune", clip(x))
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)

	pairs := m.Pairs
	if m.Selected != nil {
		pairs = append(pairs[:len(pairs):len(pairs)], *m.Selected)
	}
	for _, p := range pairs {
		for _, a := range []string{p.Address, p.Base.Address, p.Quote.Address} {
			if p.Reason != ReasonOtherChain && a != "" && !isKey(a) {
				t.Errorf("published address %q is not a key", clip(a))
			}
		}
		for _, tok := range []contract.TokenRef{p.Base, p.Quote} {
			if len(tok.Name) > maxNameBytes || len(tok.Symbol) > maxSymbolBytes {
				t.Errorf("name or symbol over its cap: %d, %d bytes", len(tok.Name), len(tok.Symbol))
			}
		}
		if got, _ := cleanID(p.DexID, maxDexBytes); got != p.DexID {
			t.Errorf("dex %q is not a plain identifier", clip(p.DexID))
		}
		for _, l := range p.Labels {
			if got, _ := cleanID(l, maxLabelBytes); got != l {
				t.Errorf("label %q is not a plain identifier", clip(l))
			}
		}
		if got, _ := cleanURL(p.URL); got != p.URL {
			t.Errorf("url %q is not a clean link", clip(p.URL))
		}
		if p.Side == "" {
			continue
		}
		if p.LiquidityUSD != nil && p.LiquidityUSD.GreaterThanOrEqual(maxAmountUSD) || p.VolumeUSD24h.GreaterThanOrEqual(maxAmountUSD) {
			t.Errorf("kept pair %s with an amount out of range", p.Address)
		}
		if p.Usable && p.PriceUSD.GreaterThan(maxPriceUSD) {
			t.Errorf("usable pair %s priced %s", p.Address, p.PriceUSD)
		}
	}
}

// pairByAddress finds the listed pair with address a.
func pairByAddress(t *testing.T, m contract.Market, a string) contract.Pair {
	t.Helper()
	for _, p := range m.Pairs {
		if p.Address == a {
			return p
		}
	}
	t.Fatalf("pair %s not listed", a)
	return contract.Pair{}
}

func warning(m contract.Market, code string) (contract.Warning, bool) {
	for _, w := range m.Warnings {
		if w.Code == code {
			return w, true
		}
	}
	return contract.Warning{}, false
}

// TestDataFaults polls each data fault of the simulator through both
// aggregators, over HTTP, beside one honest pair: hostile values are never
// published as sent (the pair is left out with a reason, or its text is
// cleaned with a warning), odd but real values are published.
func TestDataFaults(t *testing.T) {
	honest := pair(pairA, dexsim.Base, dexsim.USDC, "0.001", "0.001", 1000)
	market := dexsim.Market{Token: token, Pairs: []dexsim.Pair{honest}}
	cases := []struct {
		kind  fault.Kind
		check func(t *testing.T, m contract.Market, extras []dexsim.Pair, route string)
	}{
		{fault.HostileHTML, func(t *testing.T, m contract.Market, x []dexsim.Pair, route string) {
			if m.Selected.Address != pairA {
				t.Errorf("selected %s, want the honest pair", clip(m.Selected.Address))
			}
			invalid := 0
			for _, p := range m.Pairs {
				if p.Reason == ReasonInvalidAddress {
					invalid++
					if p.Side != "" || p.Usable {
						t.Errorf("pair with an invalid address kept: %+v", p)
					}
				}
			}
			if invalid != 2 {
				t.Errorf("%d pairs with reason %s, want 2", invalid, ReasonInvalidAddress)
			}
			if p := pairByAddress(t, m, x[1].Address); p.Quote.Address != "" || p.Base.Address != mint {
				t.Errorf("hostile token address published: %+v", p)
			}
			text := pairByAddress(t, m, x[2].Address)
			if !text.Usable || text.DexID != "" || len(text.Labels) != 0 || strings.HasPrefix(text.URL, "javascript") {
				t.Errorf("markup in dex, labels or link published: %+v", text)
			}
			// Markup in a name is text: JSON carries it, renderers escape it.
			if text.Quote.Name != dexsim.HostileName || text.Quote.Symbol != dexsim.HostileSymbol {
				t.Errorf("names %q %q", text.Quote.Name, text.Quote.Symbol)
			}
			if w, ok := warning(m, WarnUpstreamDataCleaned); !ok || !strings.Contains(w.Message, "dex dropped") {
				t.Errorf("warnings %+v", m.Warnings)
			}
			if !m.LiquidityUSD.Equal(dec("1001")) {
				t.Errorf("liquidity total %s counts pairs with invalid addresses", m.LiquidityUSD)
			}
		}},
		{fault.HostileHuge, func(t *testing.T, m contract.Market, x []dexsim.Pair, route string) {
			s := m.Selected
			if s.Address != x[0].Address {
				t.Fatalf("selected %s, want the pair with the huge name (valid, top liquidity)", s.Address)
			}
			if !strings.HasPrefix(s.Quote.Name, "Huge 名") || len(s.Quote.Name) != 62 || !utf8.ValidString(s.Quote.Name) {
				t.Errorf("name not cut at a rune boundary below 64 bytes: %d bytes", len(s.Quote.Name))
			}
			if s.Quote.Symbol != strings.Repeat("S", maxSymbolBytes) || s.DexID != "" || len(s.Labels) != 0 {
				t.Errorf("symbol %s, dex %s, labels %d", clip(s.Quote.Symbol), clip(s.DexID), len(s.Labels))
			}
			if route == dexsim.RouteDexScreener && s.URL != "" {
				t.Errorf("631-byte link published: %d bytes", len(s.URL))
			}
			if w, ok := warning(m, WarnUpstreamDataCleaned); !ok || !strings.Contains(w.Message, "quote.name cut to 64 bytes") {
				t.Errorf("warnings %+v", m.Warnings)
			}
		}},
		{fault.HostileControl, func(t *testing.T, m contract.Market, x []dexsim.Pair, route string) {
			s := m.Selected
			if s.Address != x[0].Address {
				t.Fatalf("selected %s, want the pair with control characters (valid, top liquidity)", s.Address)
			}
			if s.Quote.Name != "" || s.Quote.Symbol != "" || s.DexID != "" || len(s.Labels) != 0 || m.QuoteSymbol != "" {
				t.Errorf("text with control characters published: %+v", s)
			}
			if p := pairByAddress(t, m, x[1].Address); p.Quote.Name != "" || p.Quote.Symbol != "" {
				t.Errorf("invalid UTF-8 or a C1 control published: %q %q", p.Quote.Name, p.Quote.Symbol)
			}
			if w, ok := warning(m, WarnUpstreamDataCleaned); !ok || !strings.Contains(w.Message, "invalid UTF-8") {
				t.Errorf("warnings %+v", m.Warnings)
			}
		}},
		{fault.HostileNumbers, func(t *testing.T, m contract.Market, x []dexsim.Pair, route string) {
			if m.Selected.Address != pairA || !eqDec(m.PriceUSD, "0.001") {
				t.Errorf("selected %s at %s, want the honest pair", m.Selected.Address, m.PriceUSD)
			}
			want := map[string]string{x[0].Address: ReasonPriceOutOfRange, x[1].Address: ReasonAmountOutOfRange,
				x[2].Address: ReasonAmountOutOfRange, x[3].Address: ReasonPriceOutOfRange}
			for a, r := range want {
				if p := pairByAddress(t, m, a); p.Reason != r || p.Usable {
					t.Errorf("pair %s: usable %v reason %q, want %q", a, p.Usable, p.Reason, r)
				}
			}
			// Kept: the honest pair, the 9e39 one and the quote one.
			wantLiq := dec("1004").Add(decimal.NewFromFloat(x[0].Liquidity.USD))
			if !m.LiquidityUSD.Equal(wantLiq) || m.VolumeUSD.H24.GreaterThan(dec("1000")) || m.Txns.H24.Buys != 80+3+3 {
				t.Errorf("totals: liquidity %s (want %s), volume %s, buys %d", m.LiquidityUSD, wantLiq, m.VolumeUSD.H24, m.Txns.H24.Buys)
			}
		}},
		{fault.RealWorldOdd, func(t *testing.T, m contract.Market, x []dexsim.Pair, route string) {
			s := m.Selected
			if s.Address != x[0].Address || !eqDec(m.PriceUSD, dexsim.OddPriceUSD) || m.PriceUSD.String() != dexsim.OddPriceUSD {
				t.Fatalf("selected %s at %s, want %s at %s exactly", s.Address, m.PriceUSD, x[0].Address, dexsim.OddPriceUSD)
			}
			if s.Base.Name != token.Name || s.Base.Symbol != token.Symbol || s.Quote.Name != "USD Coin" {
				t.Errorf("names not trimmed: %+v %+v", s.Base, s.Quote)
			}
			if !strings.HasPrefix(s.URL, "https://") {
				t.Errorf("url %q", s.URL)
			}
			if route == dexsim.RouteDexScreener && (len(s.Labels) != 1 || s.Labels[0] != "DYN2") {
				t.Errorf("labels %q", s.Labels)
			}
			zero, absent := pairByAddress(t, m, x[1].Address), pairByAddress(t, m, x[2].Address)
			if !zero.Usable || !eqDec(zero.LiquidityUSD, "0") || !eqDec(zero.PriceUSD, dexsim.OddTinyPriceUSD) || !absent.Usable || absent.LiquidityUSD != nil {
				t.Errorf("liquidity 0 or absent: %+v, %+v", zero, absent)
			}
			for _, p := range m.Pairs {
				if p.Side == "" {
					t.Errorf("pair %s not kept: %s", p.Address, p.Reason)
				}
			}
			if w, ok := warning(m, WarnUpstreamDataCleaned); ok {
				t.Errorf("honest values reported as cleaned: %s", w.Message)
			}
		}},
	}
	for _, tc := range cases {
		for _, route := range []string{dexsim.RouteDexScreener, dexsim.RouteGeckoTerminal} {
			t.Run(string(tc.kind)+"/"+route, func(t *testing.T) {
				// Rendering and reading a MiB-size name is slow under -race
				// on a busy machine: no fallback on a timeout.
				cfg := testConfig()
				cfg.HTTPTimeout = time.Minute
				h := newHarness(t, setup{cfg: &cfg})
				h.sim.SetMarket(mint, market)
				if route == dexsim.RouteGeckoTerminal {
					h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.HTTP500})
				}
				h.sim.Faults().Inject(route, fault.Fault{Kind: tc.kind})
				m := h.poll()
				want := contract.UpstreamDexScreener
				if route == dexsim.RouteGeckoTerminal {
					want = contract.UpstreamGeckoTerminal
				}
				if src := h.envelope().Source; src.Name != want {
					t.Fatalf("source %+v, want %s", src, want)
				}
				if m.Status != contract.MarketOK || m.Selected == nil {
					t.Fatalf("status %s", m.Status)
				}
				checkPublished(t, m)
				tc.check(t, m, dexsim.DataFaultPairs(tc.kind, market), route)
			})
		}
	}
}

func TestCleanText(t *testing.T) {
	cases := []struct {
		in, want string
		limit    int
		why      string
	}{
		{"Token Data Demo", "Token Data Demo", 64, ""},
		{"  Trailing spaces  \n", "Trailing spaces", 64, ""},
		{"<b>Bold</b>", "<b>Bold</b>", 64, ""},
		{"Evil\u202egnp.exe", "", 64, "dropped: control or bidirectional character"},
		{"a\u2066b", "", 64, "dropped: control or bidirectional character"},
		{"NUL\x00", "", 64, "dropped: control or bidirectional character"},
		{"C1\u009b", "", 64, "dropped: control or bidirectional character"},
		{"tab\tinside", "", 64, "dropped: control or bidirectional character"},
		{"bad\xffbyte", "", 64, "dropped: invalid UTF-8"},
		{"replaced\ufffd", "", 64, "dropped: invalid UTF-8"},
		{"ABCDEFGHIJKLMNOPQ", "ABCDEFGHIJKLMNOP", 16, "cut to 16 bytes"},
		{"ab名名名名名名", "ab名名名名", 16, "cut to 16 bytes"}, // 2 + 3×4 = 14: a fifth rune would end at 17
		{"abcdefghijklmno  xyz", "abcdefghijklmno", 16, "cut to 16 bytes"},
		{"👍🏽 emoji with modifier", "👍🏽 emoji with modifier", 64, ""},
	}
	for _, tc := range cases {
		got, why := cleanText(tc.in, tc.limit)
		if got != tc.want || why != tc.why {
			t.Errorf("cleanText(%q, %d) = %q, %q; want %q, %q", tc.in, tc.limit, got, why, tc.want, tc.why)
		}
	}
}

func TestCleanURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://dexscreener.com/solana/abc", "https://dexscreener.com/solana/abc"},
		{"Https://dexscreener.com/solana/abc", "https://dexscreener.com/solana/abc"},
		{"HTTP://example.com/x", "http://example.com/x"},
		{"https://dd.dexscreener.com/t.png?key=ab12&size=lg", "https://dd.dexscreener.com/t.png?key=ab12&size=lg"},
		{" https://example.com/ ", "https://example.com/"},
		{"", ""},
		{"javascript:alert(1)", ""},
		{"data:text/html,<script>", ""},
		{"//example.com/x", ""},
		{"https:///path", ""},
		{"https://user:pw@example.com/", ""},
		{"https://example.com/a b", ""},
		{"https://example.com/\"><script>", ""},
		{"https://example.com/\u202e", ""},
		{"https://example.com/" + strings.Repeat("x", 500), ""},
		{"ftp://example.com/", ""},
	}
	for _, tc := range cases {
		if got, _ := cleanURL(tc.in); got != tc.want {
			t.Errorf("cleanURL(%q) = %q, want %q", clip(tc.in), got, tc.want)
		}
	}
}

func TestCleanID(t *testing.T) {
	for in, want := range map[string]string{
		"raydium": "raydium", "raydium-clmm": "raydium-clmm", " orca ": "orca", "v2": "v2", "DYN2": "DYN2",
		"<i>x</i>": "", "a:b": "", "ray dium": "", strings.Repeat("d", 33): "", "ray\adium": "", "": "",
	} {
		if got, _ := cleanID(in, maxDexBytes); got != want {
			t.Errorf("cleanID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsKey(t *testing.T) {
	for in, want := range map[string]bool{
		mint:  true,
		pairA: true,
		"So11111111111111111111111111111111111111112":  true,
		"11111111111111111111111111111111":             true,  // the system program: 32 zero bytes
		"MintExample1111111111111111111111111111111":   false, // "l" is not base58
		"SideExampLe111111111111111111111111111111111": false, // 33 bytes
		"0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48":   false,
		dexsim.HostilePairAddress:                      false,
		"":                                             false,
		strings.Repeat("1", 1<<20):                     false,
	} {
		if got := isKey(in); got != want {
			t.Errorf("isKey(%q) = %v", clip(in), got)
		}
	}
}

// TestValidatePairBounds: the bounds of each figure, just inside and just
// outside.
func TestValidatePairBounds(t *testing.T) {
	d := func(s string) *decimal.Decimal { v := dec(s); return &v }
	base := func() wirePair {
		return wirePair{Chain: gtNetwork, Address: pairA, Base: contract.TokenRef{Address: mint}, Quote: contract.TokenRef{Address: pairB},
			PriceUSD: d("1"), PriceNative: d("1")}
	}
	cases := []struct {
		name   string
		edit   func(p *wirePair)
		reject string
		reason string // after buildMarket
	}{
		{"plain", func(*wirePair) {}, "", ""},
		{"price at the ceiling", func(p *wirePair) { p.PriceUSD = d("1e12") }, "", ""},
		{"price above the ceiling", func(p *wirePair) { p.PriceUSD = d("1000000000000.000001") }, "", ReasonPriceOutOfRange},
		{"tiny price", func(p *wirePair) { p.PriceUSD = d("1e-15") }, "", ""},
		{"liquidity below the bound", func(p *wirePair) { p.LiquidityUSD = d("999999999999999.99") }, "", ""},
		{"liquidity at the bound", func(p *wirePair) { p.LiquidityUSD = d("1e15") }, ReasonAmountOutOfRange, ReasonAmountOutOfRange},
		{"volume at the bound", func(p *wirePair) { p.Volume.M5 = dec("1e15") }, ReasonAmountOutOfRange, ReasonAmountOutOfRange},
		{"count at the bound", func(p *wirePair) { p.Txns.H6.Sells = maxCount }, "", ""},
		{"count above the bound", func(p *wirePair) { p.Txns.H6.Sells = maxCount + 1 }, ReasonAmountOutOfRange, ReasonAmountOutOfRange},
		{"quote side above the ceiling", func(p *wirePair) {
			p.Base, p.Quote = p.Quote, p.Base
			p.PriceUSD, p.PriceNative = d("1000"), d("1e-10")
		}, "", ReasonPriceOutOfRange},
		{"priceNative out of range", func(p *wirePair) {
			p.Base, p.Quote = p.Quote, p.Base
			p.PriceNative = d("1e-31")
		}, "", ReasonNoPriceNative},
		{"invalid pair address", func(p *wirePair) { p.Address = "x" }, ReasonInvalidAddress, ReasonInvalidAddress},
		{"invalid quote address", func(p *wirePair) { p.Quote.Address = "So1111" }, ReasonInvalidAddress, ReasonInvalidAddress},
		{"other chain", func(p *wirePair) { p.Chain, p.Address = "ethereum", "0xabc" }, "", ReasonOtherChain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.edit(&p)
			validatePair(&p)
			if p.Reject != tc.reject {
				t.Errorf("reject %q, want %q", p.Reject, tc.reject)
			}
			m, err := buildMarket([]wirePair{p}, buildInput{Mint: mint, MoveShare: dec("0.5")})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Pairs[0].Reason; got != tc.reason {
				t.Errorf("reason %q, want %q", got, tc.reason)
			}
		})
	}

	p := base()
	ch := dec("-1e9")
	ok := dec("999999999")
	p.Change.H1, p.Change.H24 = &ch, &ok
	validatePair(&p)
	if p.Change.H1 != nil || p.Change.H24 == nil || len(p.Notes) != 1 {
		t.Errorf("price change out of range kept, or one in range dropped: %+v %v", p.Change, p.Notes)
	}
}

func TestParseDecimalPrecision(t *testing.T) {
	lit := "0.00000000000000123456789012345678901234567890123456789012345678901234567"
	d, err := parseDecimal("priceUsd", num{lit: lit, set: true}, false)
	if err != nil || d.String() != lit {
		t.Fatalf("68 significant digits: %v %v", d, err)
	}
	// 90 significant digits: rounded to 80, not rejected.
	long := "1." + strings.Repeat("1", 78) + "15" + strings.Repeat("9", 9)
	d, err = parseDecimal("volume", num{lit: long, set: true}, false)
	if err != nil || d.NumDigits() != maxDigits || d.String() != "1."+strings.Repeat("1", 78)+"2" {
		t.Errorf("90 digits: %v %v", d, err)
	}
	if _, err := parseDecimal("volume", num{lit: strings.Repeat("1", maxLiteral+1), set: true}, false); err == nil {
		t.Error("a literal over the length cap was parsed")
	}
}

// FuzzCleanText: whatever the aggregator sends, the cleaned text is valid,
// within its cap and clean again (cleaning twice changes nothing).
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"Token Data Demo", " x ", "Evil\u202egnp.exe", "NUL\x00", "ab名名名名名名", "bad\xff", "Https://a.example/?q=1&r=2",
		"javascript:alert(1)", "https://u:p@a.example/", "raydium-clmm", "👍🏽"} {
		f.Add(s, uint8(16))
	}
	f.Fuzz(func(t *testing.T, s string, limit uint8) {
		n := int(limit%64) + 1
		got, _ := cleanText(s, n)
		if len(got) > n || !utf8.ValidString(got) || strings.IndexFunc(got, forbiddenRune) >= 0 {
			t.Fatalf("cleanText(%q, %d) = %q", s, n, got)
		}
		if again, why := cleanText(got, n); again != got || why != "" {
			t.Fatalf("cleanText not stable on %q: %q %q", got, again, why)
		}
		if id, _ := cleanID(s, n); id != "" && (len(id) > n || !isPlainID(id, n)) {
			t.Fatalf("cleanID(%q) = %q", s, id)
		}
		u, _ := cleanURL(s)
		if again, why := cleanURL(u); again != u || why != "" {
			t.Fatalf("cleanURL not stable on %q: %q %q", u, again, why)
		}
		if u != "" && (len(u) > maxURLBytes || !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://")) {
			t.Fatalf("cleanURL(%q) = %q", s, u)
		}
	})
}
