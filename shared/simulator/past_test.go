package simulator

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var plainDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// TestPastEndsOnToday: the seeded past has one value per interval over
// the span, in plain decimals, ends on the values served now (so the
// first poll continues it), and grows towards now where the simulator
// grows (the supply it mints).
func TestPastEndsOnToday(t *testing.T) {
	s, err := Start(context.Background(), Options{Mint: mint, Seed: 1, Accounts: 300, SupplyEvery: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	p := s.Past(now, 30*24*time.Hour, time.Minute, 5*time.Minute, 15*time.Minute)
	for name, tc := range map[string]struct {
		vals []PastValue
		n    int
		last string
	}{
		"price":     {p.PriceUSD, 30*24*60 + 1, s.Market().PriceUSDText},
		"liquidity": {p.LiquidityUSD, 30*24*60 + 1, ""},
		"volume":    {p.Volume24hUSD, 30*24*60 + 1, ""},
		"supply":    {p.SupplyRaw, 30*24*12 + 1, strconv.FormatUint(s.RPCSupply(), 10)},
		"holders":   {p.Holders, 30*24*4 + 1, strconv.Itoa(s.Holders().Holders)},
	} {
		if len(tc.vals) != tc.n {
			t.Errorf("%s: %d values, want %d", name, len(tc.vals), tc.n)
			continue
		}
		for i, v := range tc.vals {
			if !plainDecimal.MatchString(v.Value) || (i > 0 && !v.At.After(tc.vals[i-1].At)) {
				t.Fatalf("%s[%d] = %+v", name, i, v)
			}
		}
		if got := tc.vals[len(tc.vals)-1]; !got.At.Equal(now) || (tc.last != "" && got.Value != tc.last) {
			t.Errorf("%s ends on %+v, want %s at now", name, got, tc.last)
		}
	}
	first, _ := strconv.ParseUint(p.SupplyRaw[0].Value, 10, 64)
	last, _ := strconv.ParseUint(p.SupplyRaw[len(p.SupplyRaw)-1].Value, 10, 64)
	if first >= last || first < last/2 {
		t.Errorf("supply 30 days ago %d, now %d: want lower, by the minting of 30 days", first, last)
	}
	again := s.Past(now, 30*24*time.Hour, time.Minute, 5*time.Minute, 15*time.Minute)
	if again.PriceUSD[100] != p.PriceUSD[100] || again.Holders[7] != p.Holders[7] || again.SupplyRaw[9] != p.SupplyRaw[9] {
		t.Error("the same simulator gives another past")
	}
}
