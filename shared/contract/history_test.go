package contract

import (
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

func TestMarketSamples(t *testing.T) {
	d := func(s string) *decimal.Decimal { v := decimal.RequireFromString(s); return &v }
	m := Market{Status: MarketOK, PriceUSD: d("0.005747"), LiquidityUSD: *d("997416.54"),
		VolumeUSD: Windows[decimal.Decimal]{H24: *d("12345.60")}}
	got := MarketSamples(m, d("987654321.123456"), d("1000000000"))
	want := []Sample{{MeasurePriceUSD, "0.005747"}, {MeasureMarketCapUSD, "5676049.383496501632"},
		{MeasureFDVUSD, "5747000"}, {MeasureLiquidityUSD, "997416.54"}, {MeasureVolume24hUSD, "12345.6"}}
	if !slices.Equal(got, want) {
		t.Errorf("MarketSamples = %v\nwant %v", got, want)
	}
	if got := MarketSamples(m, nil, nil); len(got) != 3 {
		t.Errorf("without supplies: %v, want price, liquidity and volume", got)
	}
	m.VolumeUSD.H24 = *d("-1")
	if got := MarketSamples(m, nil, nil); len(got) != 2 {
		t.Errorf("a negative volume is sampled: %v", got)
	}
	if got := MarketSamples(Market{Status: MarketNotIndexed}, d("1"), d("1")); got != nil {
		t.Errorf("not indexed: %v, want no sample", got)
	}
	if got := HoldersSamples(Holders{Holders: 3685}); got[0] != (Sample{MeasureHolders, "3685"}) {
		t.Errorf("HoldersSamples = %v", got)
	}
	for _, s := range append(want, SupplySamples(Supply{TotalRaw: "987654321123456"})...) {
		if err := s.Validate(); err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
}

func TestWindowsAndTiers(t *testing.T) {
	for _, w := range HistoryWindows {
		if !w.Valid() || !w.Tier().Valid() || (w != WindowAll) != (w.Duration() > 0) {
			t.Errorf("window %s: tier %s, duration %s", w, w.Tier(), w.Duration())
		}
	}
	if HistoryKey("M", MeasurePriceUSD, Tier5m) != "tokendata:M:history:price_usd:5m" {
		t.Error(HistoryKey("M", MeasurePriceUSD, Tier5m))
	}
	for _, m := range Measures {
		if !m.Valid() || !m.Domain().Valid() || m.Unit() == "" {
			t.Errorf("measure %s", m)
		}
	}
}
