package dexsim

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func liq(usd float64) *Liquidity { return &Liquidity{USD: usd} }

func TestTruthRules(t *testing.T) {
	tok := Token{Address: testMint, Symbol: "TST"}
	other := Token{Address: "Other111", Symbol: "OTH"}
	base := func(addr, price string, l *Liquidity, official bool) Pair {
		return Pair{Address: addr, Side: Base, Other: USDC, PriceUSD: price, PriceNative: price, Liquidity: l, Official: official}
	}
	tests := []struct {
		name         string
		pairs        []Pair
		wantSelected string
		wantPrice    string
		wantIndexed  bool
	}{
		{"highest liquidity wins", []Pair{base("A", "1", liq(10), false), base("B", "2", liq(20), false)}, "B", "2", true},
		{"tie goes to official", []Pair{base("A", "1", liq(10), false), base("B", "2", liq(10), true)}, "B", "2", true},
		{"tie without official goes to smaller address", []Pair{base("B", "2", liq(10), false), base("A", "1", liq(10), false)}, "A", "1", true},
		{"tie between officials goes to smaller address", []Pair{base("B", "2", liq(10), true), base("A", "1", liq(10), true)}, "A", "1", true},
		{"absent priceUsd is unusable", []Pair{base("A", "1", liq(10), false), base("B", "", liq(99), false)}, "A", "1", true},
		{"zero price is unusable", []Pair{base("A", "1", liq(10), false), base("B", "0", liq(99), false)}, "A", "1", true},
		{"missing liquidity counts as zero", []Pair{base("A", "1", nil, false), base("B", "2", liq(0.01), false)}, "B", "2", true},
		{"only a pair without liquidity", []Pair{base("A", "1", nil, false)}, "A", "1", true},
		{"quote side price is priceUsd / priceNative", []Pair{
			{Address: "Q", Side: Quote, Other: other, PriceUSD: "3", PriceNative: "4", Liquidity: liq(5)}}, "Q", "0.75", true},
		{"quote side with zero priceNative is unusable", []Pair{
			{Address: "Q", Side: Quote, Other: other, PriceUSD: "3", PriceNative: "0", Liquidity: liq(5)}}, "", "", true},
		{"non-terminating quotient", []Pair{
			{Address: "Q", Side: Quote, Other: other, PriceUSD: "1", PriceNative: "3", Liquidity: liq(5)}}, "Q", "0.33333333333333333333", true},
		{"other chain ignored", []Pair{base("A", "1", liq(10), false), {Chain: "ethereum", Address: "E", Side: Base, Other: USDC, PriceUSD: "9", PriceNative: "9", Liquidity: liq(1e9)}}, "A", "1", true},
		{"only other chain: not indexed", []Pair{{Chain: "bsc", Address: "E", Side: Base, Other: USDC, PriceUSD: "9", PriceNative: "9"}}, "", "", false},
		{"no pair: not indexed", nil, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Market{Token: tok, Pairs: tt.pairs}
			got := m.Truth()
			if got.Indexed != tt.wantIndexed || got.HasSelected != (tt.wantSelected != "") {
				t.Fatalf("indexed %v selected %v", got.Indexed, got.HasSelected)
			}
			if got.Selected.Address != tt.wantSelected || got.PriceUSDText != tt.wantPrice {
				t.Errorf("selected %q at %q, want %q at %q", got.Selected.Address, got.PriceUSDText, tt.wantSelected, tt.wantPrice)
			}
			// The wire agrees with the model.
			s := New()
			s.SetMarket(testMint, m)
			_, body := serve(s, pairsPath(testMint))
			w := ruleFromWire(t, body, testMint, m.OfficialPairs())
			if w.selected != got.Selected.Address || w.indexed != got.Indexed {
				t.Errorf("wire rule selects %q (indexed %v)", w.selected, w.indexed)
			}
		})
	}
}

func TestTruthTotals(t *testing.T) {
	m := Market{Token: Token{Address: testMint}, Pairs: []Pair{
		{Address: "A", Side: Base, Other: USDC, PriceUSD: "1", PriceNative: "1", Liquidity: liq(0.1),
			Volume: Volumes{M5: 0.1, H1: 1, H6: 6, H24: 24}, Txns: TxnWindows{H24: Txns{Buys: 3, Sells: 4}}},
		{Address: "B", Side: Base, Other: USDC, PriceUSD: "", PriceNative: "1", Liquidity: liq(0.2), // unusable, still summed
			Volume: Volumes{M5: 0.2, H24: 1}, Txns: TxnWindows{H24: Txns{Buys: 1, Sells: 1}}},
		{Address: "C", Side: Base, Other: USDC, PriceUSD: "1", PriceNative: "1", // no liquidity
			Volume: Volumes{H24: 2}, Txns: TxnWindows{M5: Txns{Buys: 9}}},
		{Chain: "base", Address: "X", Side: Base, Other: USDC, PriceUSD: "1", PriceNative: "1", Liquidity: liq(1000),
			Volume: Volumes{H24: 1000}, Txns: TxnWindows{H24: Txns{Buys: 100}}},
	}}
	got := m.Truth().Totals
	want := Totals{Pairs: 3, LiquidityUSD: 0.3, Volume: Volumes{M5: 0.3, H1: 1, H6: 6, H24: 27},
		Txns: TxnWindows{M5: Txns{Buys: 9}, H24: Txns{Buys: 4, Sells: 5}}}
	if got != want {
		t.Errorf("totals\n got %+v\nwant %+v", got, want)
	}
}

func TestScenarioDeterministic(t *testing.T) {
	a, b := Scenario(testMint, 42), Scenario(testMint, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different markets")
	}
	if reflect.DeepEqual(a, Scenario(testMint, 43)) {
		t.Fatal("different seeds, same market")
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("same seed, different JSON")
	}
}

// TestScenarioGroundTruth checks, over many seeds, that Truth is what the
// contract's rule gives on the served bytes, and that the scenario exercises
// each rule.
func TestScenarioGroundTruth(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		s := New()
		m := s.LoadScenario(testMint, seed)
		truth := s.Truth(testMint)
		_, body := serve(s, pairsPath(testMint))
		w := ruleFromWire(t, body, testMint, m.OfficialPairs())

		if !truth.Indexed || !truth.HasSelected || w.selected != truth.Selected.Address {
			t.Fatalf("seed %d: truth selects %s, wire rule %s", seed, truth.Selected.Address, w.selected)
		}
		if w.priceUSD.Cmp(truth.PriceUSD) != 0 {
			t.Errorf("seed %d: price %s vs wire %s", seed, truth.PriceUSDText, w.priceUSD.FloatString(20))
		}
		if !slices.Equal(sorted(w.kept), sorted(truth.Kept)) || !slices.Equal(sorted(w.usable), sorted(truth.Usable)) {
			t.Errorf("seed %d: kept/usable differ", seed)
		}
		if f64(t, w.liquidity) != truth.Totals.LiquidityUSD || f64(t, w.volumeH24) != truth.Totals.Volume.H24 ||
			w.buysH24 != truth.Totals.Txns.H24.Buys || w.sellsH24 != truth.Totals.Txns.H24.Sells {
			t.Errorf("seed %d: totals differ: %+v", seed, truth.Totals)
		}
		// The scenario's design: the official raydium pair wins a liquidity tie
		// against a smaller address; every usable pair implies the same price;
		// one pair is ignored (other chain), one unusable (no priceUsd).
		if !truth.Selected.Official || truth.Selected.Dex != "raydium" {
			t.Errorf("seed %d: selected %+v", seed, truth.Selected)
		}
		if len(truth.Ignored) != 1 || len(truth.Kept) != 6 || len(truth.Usable) != 5 {
			t.Errorf("seed %d: ignored %d kept %d usable %d", seed, len(truth.Ignored), len(truth.Kept), len(truth.Usable))
		}
		for addr, p := range truth.PairPriceUSD {
			if p != truth.PriceUSDText {
				t.Errorf("seed %d: pair %s implies %s, selected %s", seed, addr, p, truth.PriceUSDText)
			}
		}
		checkGeckoAgrees(t, s, m, truth)
	}
}

// checkGeckoAgrees compares GeckoTerminal's pools with the model and truth.
func checkGeckoAgrees(t *testing.T, s *Server, m Market, truth Truth) {
	t.Helper()
	_, body := serve(s, poolsPath(m.Token.Address))
	var doc gtDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]Pair{}
	for _, p := range m.Pairs {
		byAddr[p.Address] = p
	}
	if len(doc.Data) != len(truth.Kept) {
		t.Errorf("gecko has %d pools, truth keeps %d", len(doc.Data), len(truth.Kept))
	}
	for _, pool := range doc.Data {
		a := pool.Attributes
		p, ok := byAddr[a.Address]
		if !ok {
			t.Errorf("gecko pool %s not in the model", a.Address)
			continue
		}
		if want, usable := truth.PairPriceUSD[a.Address]; usable && deref(a.TokenPriceUSD) != want {
			t.Errorf("pool %s: token_price_usd %s, want %s", a.Address, deref(a.TokenPriceUSD), want)
		}
		if p.Liquidity == nil {
			if a.ReserveInUSD != nil {
				t.Errorf("pool %s: reserve %s without liquidity", a.Address, *a.ReserveInUSD)
			}
		} else if deref(a.ReserveInUSD) != formatFloat(p.Liquidity.USD) {
			t.Errorf("pool %s: reserve %s, liquidity %v", a.Address, deref(a.ReserveInUSD), p.Liquidity.USD)
		}
		if a.VolumeUSD.H24 != formatFloat(p.Volume.H24) || a.Transactions.H24.Buys != p.Txns.H24.Buys {
			t.Errorf("pool %s: h24 differs", a.Address)
		}
		if p.PriceUSD == "" && a.BaseTokenPriceUSD != nil {
			t.Errorf("pool %s: base price without priceUsd", a.Address)
		}
	}
}

func TestReprice(t *testing.T) {
	m := Scenario(testMint, 5)
	if !m.Reprice("0.00004321") {
		t.Fatal("Reprice refused")
	}
	truth := m.Truth()
	if truth.PriceUSDText != "0.00004321" {
		t.Errorf("price %s", truth.PriceUSDText)
	}
	for addr, p := range truth.PairPriceUSD {
		if p != "0.00004321" {
			t.Errorf("pair %s implies %s", addr, p)
		}
	}
	if m.Reprice("-1") || m.Reprice("abc") {
		t.Error("Reprice accepted a bad price")
	}
}

func TestSigText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		sig  int
		want string
	}{
		{"0.000012345678", 4, "0.00001235"},
		{"123456.789", 4, "123457"},
		{"1.5", 4, "1.5"},
		{"0", 4, "0"},
		{"2/3", 5, "0.66667"},
	} {
		r := rat(t, tt.in)
		if got := sigText(r, tt.sig); got != tt.want {
			t.Errorf("sigText(%s, %d) = %s, want %s", tt.in, tt.sig, got, tt.want)
		}
	}
}
