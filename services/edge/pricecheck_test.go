package edge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestPriceCheckStatus: /api/status is degraded while the market
// document's price cross-check says disagree, held or unconfirmed, with a
// problem naming the verdict, and ok for every other verdict (the
// comparison of the two aggregators' prices and the second witness a jump
// needs: docs/api.md, The price cross-check).
func TestPriceCheckStatus(t *testing.T) {
	for _, tc := range []struct {
		verdict  string
		degraded bool
	}{
		{contract.PriceAgreed, false},
		{contract.PriceSingleSource, false},
		{contract.PriceNotPriced, false},
		{contract.PriceDisagree, true},
		{contract.PriceHeld, true},
		{contract.PriceUnconfirmed, true},
	} {
		t.Run(tc.verdict, func(t *testing.T) {
			h := newHarness(t, nil)
			h.writeAll()
			m := edgetest.Market()
			m.CrossCheck = priceCheck(tc.verdict)
			h.write(contract.DomainMarket, m, 30e9)
			h.refresh()
			st := h.statusBody()
			var named []string
			for _, p := range st.Problems {
				if strings.HasPrefix(p, "market: price cross-check ") {
					named = append(named, p)
				}
			}
			if !tc.degraded {
				if st.Status != view.StatusOK || len(named) != 0 {
					t.Errorf("status %s, problems %q; want ok", st.Status, st.Problems)
				}
				return
			}
			if st.Status != view.StatusDegraded || len(named) != 1 ||
				!strings.HasPrefix(named[0], "market: price cross-check "+tc.verdict+" (") {
				t.Errorf("status %s, problems %q; want degraded naming %s", st.Status, st.Problems, tc.verdict)
			}
		})
	}
}

// TestAggregatorDownStatus: with GeckoTerminal down and DexScreener fine
// (single_source), /api/status stays ok with no problem, and
// checks.market_aggregator, ok (the run published), shows GeckoTerminal
// down with its error kind (docs/decisions.md, Market cross-check: one
// aggregator down). Without a cross-check its aggregators are null.
func TestAggregatorDownStatus(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	if a := h.statusBody().Checks.MarketAggregator.Aggregators; a != nil {
		t.Errorf("aggregators %+v without a cross-check, want null", a)
	}
	m := edgetest.Market()
	m.CrossCheck = priceCheck(contract.PriceSingleSource)
	h.write(contract.DomainMarket, m, 30e9)
	h.refresh()
	st := h.statusBody()
	if st.Status != view.StatusOK || len(st.Problems) != 0 {
		t.Errorf("status %s, problems %q; want ok, none", st.Status, st.Problems)
	}
	agg := st.Checks.MarketAggregator
	if agg.Status != view.StatusOK || len(agg.Aggregators) != 2 {
		t.Fatalf("market_aggregator %+v; want ok with both aggregators", agg)
	}
	ds, gt := agg.Aggregators[0], agg.Aggregators[1]
	if ds.Name != contract.UpstreamDexScreener || ds.State != contract.SourceOK || ds.ErrorKind != nil {
		t.Errorf("aggregators[0] %+v, want dexscreener ok", ds)
	}
	if gt.Name != contract.UpstreamGeckoTerminal || gt.State != contract.SourceDown || gt.ErrorKind == nil || *gt.ErrorKind != contract.ErrKindUnavailable {
		t.Errorf("aggregators[1] %+v, want geckoterminal down, %s", gt, contract.ErrKindUnavailable)
	}
}

// TestPriceCheckWarning: the market bodies (/api/price, /api/market,
// /api/market-data, /api/market-pairs) carry price_sources_disagree
// once while the price is disagreed on or held, or unconfirmed while the
// prices differ beyond the tolerance: the collector's when the document
// has it, else the edge's from the cross-check's reason; never otherwise. /api/price shows the cross-check with both
// aggregators' prices and, while unconfirmed, the pending move.
func TestPriceCheckWarning(t *testing.T) {
	for _, tc := range []struct {
		name      string
		verdict   string
		collector bool // the document carries the collector's warning
		want      int
		disagree  bool // the pending move's poll also disagrees beyond the tolerance
	}{
		{"disagree, collector's warning", contract.PriceDisagree, true, 1, false},
		{"held, no warning stored", contract.PriceHeld, false, 1, false},
		{"unconfirmed", contract.PriceUnconfirmed, false, 0, false},
		{"unconfirmed while disagreeing, no warning stored", contract.PriceUnconfirmed, false, 1, true},
		{"agreed", contract.PriceAgreed, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.writeAll()
			m := edgetest.Market()
			m.CrossCheck = priceCheck(tc.verdict)
			if tc.disagree { // GeckoTerminal answers 0.000022212: 10% from DexScreener's 0.00002468
				v, dev := decimal.RequireFromString("0.000022212"), decimal.RequireFromString("0.1")
				m.CrossCheck.Sources[1] = contract.PriceSource{Name: contract.UpstreamGeckoTerminal, State: contract.SourceOK, PriceUSD: &v, SelectedPair: edgetest.PairSOL}
				m.CrossCheck.Deviation = &dev
				m.CrossCheck.Reason += " The aggregators also disagree: geckoterminal prices pair " + edgetest.PairSOL +
					" at 0.000022212 USD, 10% from dexscreener's 0.00002468 USD, beyond the 2% tolerance."
			}
			if tc.collector {
				m.Warnings = []contract.Warning{{Code: contract.WarnPriceSourcesDisagree, Message: m.CrossCheck.Reason}}
			}
			h.write(contract.DomainMarket, m, 30e9)
			h.refresh()
			for _, p := range []string{view.PathPrice, view.PathMarket, view.PathMarketData, view.PathMarketPairs} {
				var b struct{ Warnings []contract.Warning }
				if err := json.Unmarshal(h.do(http.MethodGet, p).Body.Bytes(), &b); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, w := range b.Warnings {
					if w.Code == contract.WarnPriceSourcesDisagree {
						n++
						if w.Message != m.CrossCheck.Reason {
							t.Errorf("%s: warning %q, want the cross-check's reason", p, w.Message)
						}
					}
				}
				if n != tc.want {
					t.Errorf("%s: %d price_sources_disagree warnings, want %d: %+v", p, n, tc.want, b.Warnings)
				}
			}
			var price map[string]any
			if err := json.Unmarshal(h.do(http.MethodGet, view.PathPrice).Body.Bytes(), &price); err != nil {
				t.Fatal(err)
			}
			if v, _ := lookup(price, "cross_check.verdict"); v != tc.verdict {
				t.Errorf("/api/price cross_check.verdict %v, want %s", v, tc.verdict)
			}
			pending, _ := lookup(price, "cross_check.pending.kind")
			if (tc.verdict == contract.PriceUnconfirmed) != (pending == contract.PendingPriceMove) {
				t.Errorf("/api/price cross_check.pending.kind %v with verdict %s", pending, tc.verdict)
			}
		})
	}
}
