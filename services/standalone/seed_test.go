package standalone

import (
	"context"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/store"
)

// TestSeededPastStartsOnTheHour: whatever the minute demo mode starts
// at, its seeded past starts at the start of an hour, so that the hourly
// candle the market collector backfills before it (store.Store.Import
// puts a point only before the oldest of its series) ends where the
// seeded past begins: the price's hourly tier (/api/history/price/1y and
// /all) shows no gap there. The seeded past used to start SeedSpan
// before the start, minutes into its first hourly bucket: the candle
// before that bucket ended at the bucket's start, and the minutes between
// were a gap (TestDemoHistoryServed saw it when the edge read the history
// after the backfill).
func TestSeededPastStartsOnTheHour(t *testing.T) {
	ctx := context.Background()
	common, err := config.LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := config.ResolveToken(common, true)
	if err != nil {
		t.Fatal(err)
	}
	so := DemoSim
	so.Mint = token.Mint
	sim, err := simulator.Start(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	timings := contract.DefaultTimings
	hour := contract.Tier1h.Bucket()
	// 37 minutes into an hour that has passed (the simulator prices no
	// time after its own now).
	now := time.Now().Truncate(hour).Add(-hour + 37*time.Minute + 12*time.Second)
	st := store.New(store.NewMemory(), token.Mint)
	if _, err := seedHistory(ctx, st, sim, token, timings, now); err != nil {
		t.Fatal(err)
	}
	read := func() []contract.Point {
		s, err := st.HistoryRange(ctx, contract.MeasurePriceUSD, contract.Tier1h, now.Add(-SeedSpan-2*hour), now, 0)
		if err != nil || len(s.Points) == 0 {
			t.Fatalf("seeded at %s: %d hourly price points, %v", now.Format(time.TimeOnly), len(s.Points), err)
		}
		return s.Points
	}
	first := read()[0]
	if first.T > now.Add(-SeedSpan).UnixMilli() || first.F-first.T >= seedStep(timings[contract.DomainMarket].Refresh).Milliseconds() {
		t.Errorf("seeded at %s: the past's first hourly bucket starts at %s, its first value at %s; want a bucket %s or more before, with a value at its start",
			now.Format(time.TimeOnly), first.Time().Format(time.DateTime), time.UnixMilli(first.F).UTC().Format(time.DateTime), SeedSpan)
	}
	// The backfill's candle of the hour before, as the market collector
	// makes it from GeckoTerminal's OHLCV: it covers its interval.
	candle := contract.Point{T: first.T - hour.Milliseconds(), V: first.V, O: first.V, H: first.V, L: first.V,
		N: 1, F: first.T - hour.Milliseconds(), Z: first.T - 1}
	if n, err := st.Import(ctx, contract.MeasurePriceUSD, contract.Tier1h, []contract.Point{candle}, true); n != 1 || err != nil {
		t.Fatalf("the candle before the seeded past: %d imported, %v", n, err)
	}
	if gaps := store.Gaps(read(), timings[contract.DomainMarket].Refresh, time.Time{}); len(gaps) != 0 {
		t.Errorf("seeded at %s: gaps between the backfilled candle and the seeded past: %+v", now.Format(time.TimeOnly), gaps)
	}
}
