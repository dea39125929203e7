package market

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/buildinfo"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// checkTruth compares a document with the simulator's ground truth.
// pairsOnOtherChains is false for documents from GeckoTerminal, which
// lists solana pools only.
func checkTruth(t *testing.T, m contract.Market, tr dexsim.Truth, pairsOnOtherChains bool) {
	t.Helper()
	if m.Status != contract.MarketOK || !tr.HasSelected {
		t.Fatalf("status %q, truth has selected %v", m.Status, tr.HasSelected)
	}
	if m.Selected == nil || m.Selected.Address != tr.Selected.Address {
		t.Errorf("selected %+v, want %s", m.Selected, tr.Selected.Address)
	}
	if !eqDec(m.PriceUSD, tr.PriceUSDText) {
		t.Errorf("price_usd %v, want %s", m.PriceUSD, tr.PriceUSDText)
	}
	if got := m.LiquidityUSD.InexactFloat64(); got != tr.Totals.LiquidityUSD {
		t.Errorf("liquidity %v, want %v", m.LiquidityUSD, tr.Totals.LiquidityUSD)
	}
	for _, w := range []struct {
		name      string
		got, want float64
		gt        contract.Txns
		wt        dexsim.Txns
	}{
		{"m5", m.VolumeUSD.M5.InexactFloat64(), tr.Totals.Volume.M5, m.Txns.M5, tr.Totals.Txns.M5},
		{"h1", m.VolumeUSD.H1.InexactFloat64(), tr.Totals.Volume.H1, m.Txns.H1, tr.Totals.Txns.H1},
		{"h6", m.VolumeUSD.H6.InexactFloat64(), tr.Totals.Volume.H6, m.Txns.H6, tr.Totals.Txns.H6},
		{"h24", m.VolumeUSD.H24.InexactFloat64(), tr.Totals.Volume.H24, m.Txns.H24, tr.Totals.Txns.H24},
	} {
		if w.got != w.want {
			t.Errorf("volume %s = %v, want %v", w.name, w.got, w.want)
		}
		if w.gt.Buys != int64(w.wt.Buys) || w.gt.Sells != int64(w.wt.Sells) {
			t.Errorf("txns %s = %+v, want %+v", w.name, w.gt, w.wt)
		}
	}
	var kept, usable, ignored []string
	for _, p := range m.Pairs {
		switch {
		case p.Side != "":
			kept = append(kept, p.Address)
		case p.Reason == ReasonOtherChain:
			ignored = append(ignored, p.Address)
		default:
			t.Errorf("pair %s neither kept nor on another chain: %q", p.Address, p.Reason)
		}
		if p.Usable {
			usable = append(usable, p.Address)
			if !eqDec(p.PriceUSD, tr.PairPriceUSD[p.Address]) {
				t.Errorf("pair %s price %v, want %s", p.Address, p.PriceUSD, tr.PairPriceUSD[p.Address])
			}
		} else if p.Reason == "" {
			t.Errorf("pair %s unusable without a reason", p.Address)
		}
	}
	sameSet := func(what string, got, want []string) {
		t.Helper()
		g, w := slices.Clone(got), slices.Clone(want)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("%s pairs %v, want %v", what, g, w)
		}
	}
	sameSet("kept", kept, tr.Kept)
	sameSet("usable", usable, tr.Usable)
	if pairsOnOtherChains {
		sameSet("ignored", ignored, tr.Ignored)
	} else if len(ignored) > 0 {
		t.Errorf("pairs on another chain from a solana-only source: %v", ignored)
	}
}

func TestScenarioMatchesTruth(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m := dexsim.Scenario(mint, seed)
			// The token file declares the scenario's official pairs.
			h := newHarness(t, setup{official: m.OfficialPairs()})
			h.sim.SetMarket(mint, m)
			doc := h.poll()
			checkTruth(t, doc, h.sim.Truth(mint), true)
			if !doc.Selected.Official || len(doc.Warnings) != 0 {
				t.Errorf("official tie winner: selected %+v, warnings %+v", doc.Selected, doc.Warnings)
			}
			for _, op := range doc.Official {
				if !op.Found || op.LiquidityUSD == nil || op.Selected != (op.Address == doc.Selected.Address) {
					t.Errorf("official report %+v", op)
				}
			}
			env := h.envelope()
			if env.Source.Name != contract.UpstreamDexScreener || env.Source.Method != MethodTokenPairs {
				t.Errorf("source %+v", env.Source)
			}
		})
	}
}

func TestGoldenScenario(t *testing.T) {
	h := newHarness(t, setup{redis: true, official: dexsim.Scenario(mint, 42).OfficialPairs()})
	h.sim.LoadScenario(mint, 42)
	h.poll()
	h.goldenEnvelope("scenario42_dexscreener")
}

func TestTokenAsQuote(t *testing.T) {
	h := newHarness(t, setup{})
	side := dexsim.Token{Address: "SideExampLe11111111111111111111111111111111", Name: "Side", Symbol: "SIDE"}
	// SIDE costs 0.0421 USD and 3411.67 TDD: one TDD is 0.0421 / 3411.67
	// USD (not a terminating decimal), published to the 3 significant
	// digits of 0.0421, the least precise input.
	q := pair(pairB, dexsim.Quote, side, "0.0421", "3411.67", 5000)
	// A smaller base pair, to show the quote pair wins on liquidity.
	b := pair(pairA, dexsim.Base, dexsim.WrappedSOL, "0.0000123", "0.00000008", 100)
	h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{b, q}})
	m := h.poll()
	if m.Status != contract.MarketOK || m.Selected.Address != pairB || m.Selected.Side != contract.SideQuote {
		t.Fatalf("selected %+v status %s", m.Selected, m.Status)
	}
	if want := "0.0000123"; !eqDec(m.PriceUSD, want) {
		t.Errorf("price_usd %s, want %s (3 significant digits, those of 0.0421)", m.PriceUSD, want)
	}
	// 1 / 3411.67 to the 6 significant digits of 3411.67.
	if m.QuoteSymbol != "SIDE" || !eqDec(m.PriceQuote, "0.000293112") {
		t.Errorf("price in quote %s %s", m.PriceQuote, m.QuoteSymbol)
	}
	if c := m.PriceChange; c.M5 != nil || c.H1 != nil || c.H6 != nil || c.H24 != nil {
		t.Errorf("price change of the base token reported as the token's: %+v", c)
	}
	// The simulator's exact price, to 3 significant digits, agrees.
	if got, want := *m.PriceUSD, amount.RoundSignificant(dec(h.sim.Truth(mint).PriceUSDText), 3); !got.Equal(want) {
		t.Errorf("price %s rounds to %s, truth %s", m.PriceUSD, got, want)
	}
	h.goldenEnvelope("token_as_quote")
}

// TestPriceBasisKeepsDigits: the document carries the significant digits
// of its price and the figures it came from, so that a trailing zero lost
// by the stored decimal (0.01230 is stored 0.0123, 1.50 is 1.5) costs no
// digit of the market cap, and the product is taken of the exact value.
func TestPriceBasisKeepsDigits(t *testing.T) {
	side := dexsim.Token{Address: "SideExampLe11111111111111111111111111111111", Name: "Side", Symbol: "SIDE"}
	circulating := dec("987654321.123456789")
	cases := []struct {
		name         string
		pair         dexsim.Pair
		digits       int32
		price, mcap  string
		nativeInBase bool
	}{
		{"token is the quote", pair(pairB, dexsim.Quote, side, "1.0001", "81.30", 5000), 4, "0.01230", "12150000", true},
		{"token is the base", pair(pairA, dexsim.Base, dexsim.WrappedSOL, "1.50", "0.0101", 5000), 3, "1.50", "1480000000", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, setup{redis: true})
			h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{tc.pair}})
			h.poll()
			m := h.market() // read back from the store: the JSON round trip
			b := m.PriceBasis
			if b == nil || b.Digits != tc.digits || (b.Native != nil) != tc.nativeInBase {
				t.Fatalf("price_basis %+v, want %d digits (native present: %v)", b, tc.digits, tc.nativeInBase)
			}
			if got := m.PriceString(); got != tc.price {
				t.Errorf("price %s, want %s", got, tc.price)
			}
			if got, _ := m.PriceTimes(circulating); got.String() != tc.mcap {
				t.Errorf("market cap %s, want %s", got, tc.mcap)
			}
		})
	}
}

func TestNotIndexed(t *testing.T) {
	cases := []struct {
		name  string
		setup func(h *harness)
	}{
		{"pairs_empty", func(h *harness) {
			h.sim.LoadScenario(mint, 3)
			h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.PairsEmpty})
		}},
		{"pairs_null", func(h *harness) {
			h.sim.LoadScenario(mint, 3)
			h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.PairsNull})
		}},
		{"unknown_mint", func(*harness) {}},
		{"other_chain_only", func(h *harness) {
			p := pair(pairA, dexsim.Base, dexsim.USDC, "0.5", "0.5", 1000)
			p.Chain = "ethereum"
			h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{p}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, setup{official: []string{pairE}})
			tc.setup(h)
			m := h.poll()
			if m.Status != contract.MarketNotIndexed || m.PriceUSD != nil || m.Selected != nil || !m.LiquidityUSD.IsZero() {
				t.Errorf("not indexed document: %+v", m)
			}
			// Not indexed is DexScreener's fact, published as such even
			// though GeckoTerminal is read on every poll too.
			if m.CrossCheck == nil || m.CrossCheck.Verdict != contract.PriceNotPriced || m.CrossCheck.Primary != "" {
				t.Errorf("cross-check %+v, want not_priced", m.CrossCheck)
			}
			if r := h.run(); !r.OK || r.Upstream != contract.UpstreamDexScreener {
				t.Errorf("run %+v", r)
			}
			if tc.name == "pairs_null" {
				h.goldenEnvelope("not_indexed")
			}
		})
	}
}

func TestMissingPriceAndLiquidity(t *testing.T) {
	h := newHarness(t, setup{})
	noUSD := pair(pairA, dexsim.Base, dexsim.WrappedSOL, "", "0.0000001", 90000) // priceUsd absent
	nullUSD := pair(pairB, dexsim.Base, dexsim.USDC, "", "0.00002", 80000)       // priceUsd null
	nullUSD.PriceUSDNull = true
	noLiq := pair(pairC, dexsim.Base, dexsim.USDT, "0.00002", "0.00002", -1) // no liquidity object
	zero := pair(pairD, dexsim.Base, dexsim.USDC, "0", "0", 70000)
	quoteNoNative := pair(pairE, dexsim.Quote, dexsim.WrappedSOL, "150", "", 60000)
	h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{noUSD, nullUSD, noLiq, zero, quoteNoNative}})
	m := h.poll()
	checkTruth(t, m, h.sim.Truth(mint), true)
	if m.Selected.Address != pairC || m.Selected.LiquidityUSD != nil {
		t.Errorf("the only usable pair (no liquidity, counted as 0) must be selected: %+v", m.Selected)
	}
	reasons := map[string]string{}
	for _, p := range m.Pairs {
		reasons[p.Address] = p.Reason
	}
	want := map[string]string{pairA: ReasonNoPriceUSD, pairB: ReasonNoPriceUSD, pairC: "", pairD: ReasonPriceNotPositive, pairE: ReasonNoPriceNative}
	for a, r := range want {
		if reasons[a] != r {
			t.Errorf("pair %s reason %q, want %q", a, reasons[a], r)
		}
	}
	// Totals count unusable pairs too.
	if !m.LiquidityUSD.Equal(dec("300000")) {
		t.Errorf("liquidity total %s", m.LiquidityUSD)
	}
	h.goldenEnvelope("missing_price_and_liquidity")

	// No usable pair at all.
	h.sim.RemovePair(mint, pairC)
	m = h.poll()
	if m.Status != contract.MarketNoUsablePair || m.PriceUSD != nil || m.Selected != nil || len(m.Pairs) != 4 {
		t.Errorf("no usable pair: %+v", m)
	}
	h.goldenEnvelope("no_usable_pair")
}

func TestTies(t *testing.T) {
	cases := []struct {
		name     string
		official []string
		want     string
		warn     bool
	}{
		{"official wins", []string{pairD}, pairD, false},
		{"smaller address without official", nil, pairB, false},
		{"smaller address among officials", []string{pairD, pairB}, pairB, false},
		{"higher liquidity beats official", []string{pairA}, pairB, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, setup{official: tc.official})
			// pairA has less liquidity; B and D tie; C ties but is unusable.
			a := pair(pairA, dexsim.Base, dexsim.USDC, "0.001", "0.001", 999.99)
			b := pair(pairB, dexsim.Base, dexsim.WrappedSOL, "0.001", "0.0000066", 1000)
			c := pair(pairC, dexsim.Base, dexsim.WrappedSOL, "", "0.0000066", 1000)
			d := pair(pairD, dexsim.Base, dexsim.USDT, "0.00101", "0.00101", 1000)
			h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{d, c, a, b}})
			m := h.poll()
			if m.Selected == nil || m.Selected.Address != tc.want {
				t.Fatalf("selected %+v, want %s", m.Selected, tc.want)
			}
			hasWarn := slices.ContainsFunc(m.Warnings, func(w contract.Warning) bool { return w.Code == WarnSelectedPairNotOfficial })
			if hasWarn != tc.warn {
				t.Errorf("selected_pair_not_official = %v, want %v (%+v)", hasWarn, tc.warn, m.Warnings)
			}
		})
	}
}

func TestOfficialPairMissing(t *testing.T) {
	h := newHarness(t, setup{official: []string{pairE, pairA}})
	a := pair(pairA, dexsim.Base, dexsim.USDC, "0.001", "0.001", 10)
	b := pair(pairB, dexsim.Base, dexsim.WrappedSOL, "0.001", "0.0000066", 1000)
	h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{a, b}})
	m := h.poll()
	codes := []string{}
	for _, w := range m.Warnings {
		codes = append(codes, w.Code)
	}
	if !slices.Equal(codes, []string{WarnOfficialPairMissing, WarnSelectedPairNotOfficial}) || !strings.Contains(m.Warnings[0].Message, pairE) {
		t.Errorf("warnings %+v", m.Warnings)
	}
	want := []contract.OfficialPair{{Address: pairE}, {Address: pairA, Found: true, LiquidityUSD: m.Official[1].LiquidityUSD}}
	if len(m.Official) != 2 || m.Official[0] != want[0] || m.Official[1] != want[1] || !eqDec(m.Official[1].LiquidityUSD, "10") {
		t.Errorf("official %+v", m.Official)
	}
	h.goldenEnvelope("official_pair_missing")
}

// faultCases are DexScreener failures and the error kind each must give.
var faultCases = []struct {
	kind fault.Kind
	want string
}{
	{fault.HTTP500, contract.ErrKindUnavailable},
	{fault.HTTP503, contract.ErrKindUnavailable},
	{fault.HTTP429, contract.ErrKindRateLimited},
	{fault.HTTP403, contract.ErrKindForbidden},
	{fault.Reset, contract.ErrKindUnavailable},
	{fault.Malformed, contract.ErrKindInvalid},
	{fault.Truncate, contract.ErrKindInvalid},
	{fault.Latency, contract.ErrKindUnavailable}, // longer than the request timeout
}

func injectFault(h *harness, route string, k fault.Kind) {
	f := fault.Fault{Kind: k}
	if k == fault.Latency {
		f.Delay = 2 * time.Second
	}
	if k == fault.Truncate {
		f.AfterBytes = 200
	}
	h.sim.Faults().Inject(route, f)
}

func fastTimeout() *Config {
	cfg := testConfig()
	cfg.HTTPTimeout = 300 * time.Millisecond
	return &cfg
}

func TestFallbackOnEveryFault(t *testing.T) {
	for _, fc := range faultCases {
		t.Run(string(fc.kind), func(t *testing.T) {
			m := dexsim.Scenario(mint, 7)
			h := newHarness(t, setup{official: m.OfficialPairs(), cfg: fastTimeout()})
			h.sim.SetMarket(mint, m)
			injectFault(h, dexsim.RouteDexScreener, fc.kind)
			doc := h.poll()
			checkTruth(t, doc, h.sim.Truth(mint), false)
			env := h.envelope()
			if env.Source.Name != contract.UpstreamGeckoTerminal || env.Source.Method != MethodTokenPools {
				t.Errorf("source %+v", env.Source)
			}
			r := h.run()
			if r.Upstream != contract.UpstreamGeckoTerminal || !strings.Contains(r.Note, "fallback") || !strings.Contains(r.Note, fc.want) {
				t.Errorf("run %+v", r)
			}
			if !slices.ContainsFunc(doc.Warnings, func(w contract.Warning) bool { return w.Code == WarnFallbackSource }) {
				t.Errorf("warnings %+v", doc.Warnings)
			}
			if n := h.upstreamRequests(contract.UpstreamDexScreener, MethodTokenPairs, fc.want); n < 1 {
				t.Errorf("dexscreener failures observed: %v", n)
			}
		})
	}
}

func TestGoldenFallback(t *testing.T) {
	h := newHarness(t, setup{official: dexsim.Scenario(mint, 42).OfficialPairs()})
	h.sim.LoadScenario(mint, 42)
	injectFault(h, dexsim.RouteDexScreener, fault.HTTP500)
	h.poll()
	h.goldenEnvelope("scenario42_geckoterminal")
}

func TestBothDownKeepsLastGoodDocument(t *testing.T) {
	for _, fc := range faultCases {
		t.Run(string(fc.kind), func(t *testing.T) {
			h := newHarness(t, setup{redis: fc.kind == fault.HTTP500, cfg: fastTimeout()})
			h.sim.LoadScenario(mint, 11)
			good := h.poll()
			before := h.envelope()

			injectFault(h, dexsim.RouteDexScreener, fc.kind)
			h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP503})
			err := h.c.RunOnce(context.Background())
			var ce *collector.Error
			if !errors.As(err, &ce) || ce.Kind != fc.want {
				t.Fatalf("error %v, want kind %s", err, fc.want)
			}
			if after := h.envelope(); !after.UpdatedAt.Equal(before.UpdatedAt) || h.market().PriceUSD.String() != good.PriceUSD.String() {
				t.Error("a failed poll replaced the good document")
			}
			r := h.run()
			if r.OK || r.ErrorKind != fc.want || r.ConsecutiveFailures != 1 || r.LastSuccessAt == nil || r.Upstream != contract.UpstreamDexScreener {
				t.Errorf("run %+v", r)
			}
			if !strings.Contains(r.Error, "fallback geckoterminal answered HTTP 503") {
				t.Errorf("error message %q does not say the fallback failed", r.Error)
			}
			// The host may be named (which endpoint did not answer), never
			// the URL.
			if strings.Contains(r.Error, "://") || strings.Contains(r.Error, "/token-pairs") {
				t.Errorf("error message quotes a URL: %q", r.Error)
			}
		})
	}
}

func TestFallbackWithoutPools(t *testing.T) {
	for _, k := range []fault.Kind{fault.GeckoNotFound, fault.PairsEmpty} {
		t.Run(string(k), func(t *testing.T) {
			h := newHarness(t, setup{})
			h.sim.LoadScenario(mint, 5)
			h.poll()
			h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.HTTP500})
			h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: k})
			if err := h.c.RunOnce(context.Background()); err == nil {
				t.Fatal("a fallback without pools replaced a good document")
			}
			if m := h.market(); m.Status != contract.MarketOK {
				t.Errorf("document %s", m.Status)
			}
		})
	}
}

func TestFallbackDisabled(t *testing.T) {
	h := newHarness(t, setup{fallbackOff: true})
	h.sim.LoadScenario(mint, 5)
	h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.HTTP500})
	if err := h.c.RunOnce(context.Background()); err == nil {
		t.Fatal("poll succeeded with DexScreener down and no fallback")
	}
	if n := h.sim.Requests(dexsim.RouteGeckoTerminal); n != 0 {
		t.Errorf("fallback asked %d times while disabled", n)
	}
}

func TestRejectsNegativeNumbers(t *testing.T) {
	cases := []struct {
		name  string
		field string
		edit  func(p *dexsim.Pair)
	}{
		{"liquidity", "liquidity", func(p *dexsim.Pair) { p.Liquidity.USD = -5 }},
		{"volume", "volume", func(p *dexsim.Pair) { p.Volume.H24 = -1 }},
		{"price", "price", func(p *dexsim.Pair) { p.PriceUSD = "-0.001" }},
		{"txns", "buys", func(p *dexsim.Pair) { p.Txns.H1.Buys = -3 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, setup{})
			good := pair(pairA, dexsim.Base, dexsim.USDC, "0.001", "0.001", 1000)
			h.sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{good}})
			h.poll()
			bad := pair(pairB, dexsim.Base, dexsim.USDC, "0.001", "0.001", 500)
			tc.edit(&bad)
			h.sim.SetPair(mint, bad)
			err := h.c.RunOnce(context.Background())
			var ce *collector.Error
			if !errors.As(err, &ce) || ce.Kind != contract.ErrKindInvalid || !strings.Contains(ce.Message, tc.field) || !strings.Contains(ce.Message, "negative") {
				t.Fatalf("error %v, want invalid_response naming %s", err, tc.field)
			}
			if m := h.market(); len(m.Pairs) != 1 {
				t.Errorf("the invalid document was written: %d pairs", len(m.Pairs))
			}
		})
	}
}

func TestPriceMoved(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.LoadScenario(mint, 9)
	first := h.poll()
	if len(first.Warnings) != 0 {
		t.Fatalf("first poll warnings %+v", first.Warnings)
	}
	// +1 %: below the default 50 %.
	h.sim.Reprice(mint, first.PriceUSD.Mul(dec("1.01")).String())
	if m := h.poll(); slices.ContainsFunc(m.Warnings, func(w contract.Warning) bool { return w.Code == WarnPriceMoved }) {
		t.Errorf("a 1%% move was flagged: %+v", m.Warnings)
	}
	// ×3 of the last good price: +200 %.
	prev := h.market().PriceUSD
	h.sim.Reprice(mint, prev.Mul(dec("3")).String())
	m := h.poll()
	i := slices.IndexFunc(m.Warnings, func(w contract.Warning) bool { return w.Code == WarnPriceMoved })
	if i < 0 || !strings.Contains(m.Warnings[i].Message, "rose 200%") {
		t.Fatalf("warnings %+v", m.Warnings)
	}
	// The next poll compares with the new price: no warning.
	if m := h.poll(); len(m.Warnings) != 0 {
		t.Errorf("warnings %+v", m.Warnings)
	}

	// A token file with a 0.5 % threshold flags a 1 % fall.
	h2 := newHarness(t, setup{moveWarning: "0.005"})
	h2.sim.LoadScenario(mint, 9)
	p := h2.poll().PriceUSD
	h2.sim.Reprice(mint, p.Mul(dec("0.99")).String())
	m = h2.poll()
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0].Message, "fell 1%") {
		t.Errorf("warnings %+v", m.Warnings)
	}
}

func TestMetrics(t *testing.T) {
	m := dexsim.Scenario(mint, 4)
	h := newHarness(t, setup{official: m.OfficialPairs()})
	h.sim.SetMarket(mint, m)
	h.poll()
	tr := h.sim.Truth(mint)
	if got := testutil.ToFloat64(h.c.selectedLiquidity); got != tr.Selected.Liquidity.USD {
		t.Errorf("selected liquidity gauge %v, want %v", got, tr.Selected.Liquidity.USD)
	}
	for state, want := range map[string]int{"detected": len(tr.Kept) + len(tr.Ignored), "kept": len(tr.Kept), "usable": len(tr.Usable)} {
		if got := testutil.ToFloat64(h.c.pairs.WithLabelValues(state)); got != float64(want) {
			t.Errorf("pairs{state=%s} = %v, want %d", state, got, want)
		}
	}
	if n := h.upstreamRequests(contract.UpstreamDexScreener, MethodTokenPairs, "ok"); n != 1 {
		t.Errorf("upstream requests ok = %v", n)
	}
	if n, err := testutil.GatherAndCount(h.reg, "tokendata_collector_runs_total"); err != nil || n != 1 {
		t.Errorf("collector runs series %d %v", n, err)
	}
}

func TestRunPollsUntilCancelled(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.LoadScenario(mint, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.c.Run(ctx) }()
	deadline := time.After(10 * time.Second)
	for {
		if _, err := h.store.Read(context.Background(), contract.DomainMarket); err == nil {
			break
		}
		select {
		case <-deadline:
			t.Fatal("no document written")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	with := func(mut func(*Config)) Config {
		c := DefaultConfig()
		mut(&c)
		return c
	}
	good := config.Common{DexScreenerURL: "https://api.dexscreener.com", GeckoTerminalURL: "https://api.geckoterminal.com/api/v2"}
	mem := func() collector.Deps {
		return collector.Deps{Store: storeFor(t, mint)}
	}
	cases := []struct {
		name   string
		common func(c *config.Common)
		token  config.Token
		cfg    Config
		deps   func() collector.Deps
		want   string
	}{
		{"refresh below 1s", func(c *config.Common) { c.Market.Refresh = 500 * time.Millisecond }, config.Token{Mint: mint}, DefaultConfig(), mem, "MARKET_REFRESH"},
		{"ttl below twice refresh", func(c *config.Common) { c.Market.TTL = 90 * time.Second }, config.Token{Mint: mint}, DefaultConfig(), mem, "MARKET_TTL"},
		{"bad dexscreener url", func(c *config.Common) { c.DexScreenerURL = "ftp://x" }, config.Token{Mint: mint}, DefaultConfig(), mem, "DEXSCREENER_URL"},
		{"bad geckoterminal url", func(c *config.Common) { c.GeckoTerminalURL = "" }, config.Token{Mint: mint}, DefaultConfig(), mem, "GECKOTERMINAL_URL"},
		{"bad mint", nil, config.Token{Mint: "nope"}, DefaultConfig(), mem, "token mint"},
		{"bad move share", nil, config.Token{Mint: mint, PriceMoveWarning: "-1"}, DefaultConfig(), mem, "price_move_warning"},
		{"hold bound below tolerance", nil, config.Token{Mint: mint, PriceTolerance: "0.3"}, DefaultConfig(), mem, "price_hold_bound"},
		{"negative timeout", nil, config.Token{Mint: mint}, with(func(c *Config) { c.HTTPTimeout = -time.Second }), mem, "MARKET_HTTP_TIMEOUT"},
		{"tiny body cap", nil, config.Token{Mint: mint}, with(func(c *Config) { c.MaxBodyBytes = 10 }), mem, "MARKET_MAX_BODY_BYTES"},
		{"no store", nil, config.Token{Mint: mint}, DefaultConfig(), func() collector.Deps { return collector.Deps{} }, "deps.Store"},
		{"store of another mint", nil, config.Token{Mint: mint}, DefaultConfig(), func() collector.Deps {
			return collector.Deps{Store: storeFor(t, "So11111111111111111111111111111111111111112")}
		}, "deps.Store"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			if tc.common != nil {
				tc.common(&c)
			}
			_, err := New(c, tc.token, tc.cfg, tc.deps())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
	c, err := New(good, config.Token{Mint: mint}, DefaultConfig(), mem())
	if err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	if ua := "tokendata-market/" + buildinfo.Version; c.cfg.UserAgent != ua {
		t.Errorf("User-Agent %q, want %q", c.cfg.UserAgent, ua)
	}
	// A hold longer than the TTL allows is lowered to fit: 10 min / 60 s
	// leaves 8 held polls and the one that publishes.
	c, err = New(good, config.Token{Mint: mint, PriceMaxHeldPolls: new(20)}, DefaultConfig(), mem())
	if err != nil || c.bounds.MaxHeldPolls != 8 {
		t.Errorf("held polls beyond the TTL: %v, effective %d, want 8", err, c.bounds.MaxHeldPolls)
	}
	// The default (unset in the token file) is lowered too: 6 s / 1 s.
	short := good
	short.Market = config.DomainTiming{Refresh: time.Second, StaleAfter: 2 * time.Second, TTL: 6 * time.Second}
	c, err = New(short, config.Token{Mint: mint}, DefaultConfig(), mem())
	if err != nil || c.bounds.MaxHeldPolls != 4 {
		t.Errorf("default held polls at a 6s TTL: %v, effective %d, want 4", err, c.bounds.MaxHeldPolls)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	want := Config{HTTPTimeout: 10 * time.Second, MaxBodyBytes: 4 << 20, DexScreenerRPM: 300, GeckoTerminalRPM: 30,
		RetryAttempts: 3, RetryBase: time.Second}
	if c, err := LoadConfig(); err != nil || c != want || DefaultConfig() != want {
		t.Errorf("LoadConfig() = %+v, %v; DefaultConfig() = %+v; want %+v", c, err, DefaultConfig(), want)
	}
	t.Setenv("MARKET_HTTP_TIMEOUT", "3s")
	t.Setenv("MARKET_USER_AGENT", "probe/1")
	t.Setenv("MARKET_MAX_BODY_BYTES", "65536")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPTimeout != 3*time.Second || cfg.UserAgent != "probe/1" || cfg.MaxBodyBytes != 65536 ||
		cfg.DexScreenerRPM != 300 || cfg.GeckoTerminalRPM != 30 || cfg.RetryAttempts != 3 {
		t.Errorf("config %+v", cfg)
	}
	for name, value := range map[string]string{"MARKET_HTTP_TIMEOUT": "soon", "MARKET_RETRY_ATTEMPTS": "11"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("error %v does not name %s", err, name)
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBodyBytes = 1024
	h := newHarness(t, setup{cfg: &cfg, fallbackOff: true})
	h.sim.LoadScenario(mint, 1) // its answer is several kilobytes
	err := h.c.RunOnce(context.Background())
	var ce *collector.Error
	if !errors.As(err, &ce) || ce.Kind != contract.ErrKindInvalid || !strings.Contains(ce.Message, "MARKET_MAX_BODY_BYTES") {
		t.Errorf("error %v", err)
	}
}

// TestRetryAfterIsRespected: after both aggregators answered 429 with
// Retry-After, neither is called again before its wait is over, by the
// next poll or as the fallback: a poll that finds both waiting fails as
// rate_limited without a request, and the first poll after the wait
// reads DexScreener again. (Retries inside a poll: the collector
// package's tests.)
func TestRetryAfterIsRespected(t *testing.T) {
	const wait = time.Second
	cfg := testConfig()
	cfg.RetryAttempts = 1
	h := newHarness(t, setup{cfg: &cfg})
	h.sim.LoadScenario(mint, 11)
	h.poll()
	ds, gt := h.sim.Requests(dexsim.RouteDexScreener), h.sim.Requests(dexsim.RouteGeckoTerminal)
	calls := func() (int64, int64) {
		return h.sim.Requests(dexsim.RouteDexScreener) - ds, h.sim.Requests(dexsim.RouteGeckoTerminal) - gt
	}

	tooMany := fault.Fault{Kind: fault.HTTP429, RetryAfter: wait}
	h.sim.Faults().Inject(dexsim.RouteDexScreener, tooMany)
	h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, tooMany)
	for i := range 3 {
		err := h.c.RunOnce(context.Background())
		var ce *collector.Error
		if !errors.As(err, &ce) || ce.Kind != contract.ErrKindRateLimited {
			t.Fatalf("poll %d during the 429s: %v, want rate_limited", i, err)
		}
		if i == 2 {
			h.sim.Faults().ClearAll() // the wait still runs
		}
	}
	if d, g := calls(); d != 1 || g != 1 {
		t.Errorf("three polls within the Retry-After of %s: %d DexScreener and %d GeckoTerminal requests, want 1 each", wait, d, g)
	}
	if r := h.run(); r.OK || r.ErrorKind != contract.ErrKindRateLimited || !strings.Contains(r.Error, "asked to wait") {
		t.Errorf("run %+v, want rate_limited while waiting", r)
	}
	if err := h.c.RunOnce(context.Background()); err == nil {
		t.Error("a poll within the Retry-After called an aggregator")
	}

	time.Sleep(wait)
	h.poll()
	if d, g := calls(); d != 2 || g != 2 {
		t.Errorf("the first poll after the wait: %d DexScreener and %d GeckoTerminal requests in all, want 2 and 2 (both read on every poll)", d, g)
	}
}
