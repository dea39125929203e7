package contract

import (
	"math/big"
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

func TestMarketSamples(t *testing.T) {
	d := func(s string) *decimal.Decimal { v := decimal.RequireFromString(s); return &v }
	m := Market{Status: MarketOK, PriceUSD: d("0.005747"), LiquidityUSD: *d("997416.54"),
		VolumeUSD: Windows[decimal.Decimal]{H24: *d("12345.60")}}
	got := MarketSamples(m, d("987654321.123456"), d("1000000000"))
	want := []Sample{{MeasurePriceUSD, "0.005747"}, {MeasureMarketCapUSD, "5676000"},
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

// FuzzCompareValues: canonical values compare as the numbers they are,
// and canonicalising keeps the number.
func FuzzCompareValues(f *testing.F) {
	for _, s := range [][2]string{{"0.5", "0.51"}, {"10", "9.99"}, {"007.10", "7.1"}, {"0", "0.000"}, {"1e5", "5"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, errA := CanonicalValue(a)
		cb, errB := CanonicalValue(b)
		if errA != nil || errB != nil {
			return
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			t.Fatalf("accepted %q or %q, which are not numbers", a, b)
		}
		if c, _ := new(big.Rat).SetString(ca); c.Cmp(ra) != 0 {
			t.Fatalf("CanonicalValue(%q) = %q, another number", a, ca)
		}
		if again, _ := CanonicalValue(ca); again != ca {
			t.Fatalf("CanonicalValue is not idempotent on %q: %q", ca, again)
		}
		if got, want := CompareValues(ca, cb), ra.Cmp(rb); got != want {
			t.Fatalf("CompareValues(%q, %q) = %d, want %d", ca, cb, got, want)
		}
	})
}
