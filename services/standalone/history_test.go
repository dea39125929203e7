package standalone_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/standalone"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// TestDemoHistoryFromTheFirstSecond: demo mode starts with 30 days of
// every measure, marked simulated and imported, without a gap, ending on
// the values the simulator serves; the first poll continues it without a
// gap, with a point of its own.
func TestDemoHistoryFromTheFirstSecond(t *testing.T) {
	ctx := context.Background()
	r := start(t, standalone.DemoSim)
	st, sim := r.info.Store, r.info.Sim
	timings := contract.DefaultTimings
	for _, tc := range []struct {
		m   contract.Measure
		w   contract.Window
		min int
	}{
		{contract.MeasurePriceUSD, contract.Window24h, 24 * 60},
		{contract.MeasurePriceUSD, contract.Window30d, 30*24*12 - 12},
		{contract.MeasureMarketCapUSD, contract.Window7d, 7*24*12 - 1},
		{contract.MeasureFDVUSD, contract.Window1y, 30 * 24},
		{contract.MeasureLiquidityUSD, contract.Window24h, 24 * 60},
		{contract.MeasureVolume24hUSD, contract.WindowAll, 30 * 24},
		{contract.MeasureSupply, contract.Window24h, 24 * 12},
		{contract.MeasureHolders, contract.Window30d, 30*24*4 - 4},
	} {
		s, err := st.History(ctx, tc.m, tc.w, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Points) < tc.min || s.Invalid != 0 {
			t.Errorf("%s %s: %d points (%d invalid), want at least %d", tc.m, tc.w, len(s.Points), s.Invalid, tc.min)
			continue
		}
		seeded := 0
		for _, p := range s.Points {
			if p.Sim && p.BF {
				seeded++
			}
		}
		if seeded < len(s.Points)-2 {
			t.Errorf("%s %s: %d of %d points marked seeded", tc.m, tc.w, seeded, len(s.Points))
		}
		if gaps := store.Gaps(s.Points, timings[tc.m.Domain()].Refresh, time.Time{}); len(gaps) != 0 {
			t.Errorf("%s %s: gaps in the seeded past: %+v", tc.m, tc.w, gaps)
		}
	}
	h, err := st.History(ctx, contract.MeasureHolders, contract.Window24h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := h.Points[len(h.Points)-1]; last.V != strconv.Itoa(sim.Holders().Holders) {
		t.Errorf("the seeded holders end on %s, the simulator counts %d", last.V, sim.Holders().Holders)
	}

	// The first market poll appends a point of its own, right after the
	// seeded past.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := st.History(ctx, contract.MeasurePriceUSD, contract.Window24h, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := s.Points[len(s.Points)-1]
		if !last.BF {
			// The demo's price moves every 15 s: the point holds the price
			// the simulator had when it was polled (on a loaded machine the
			// price can move before this loop sees the point).
			now := sim.Market().PriceUSDText
			then, _ := sim.Dex.PriceAt(r.info.Mint, time.UnixMilli(last.T))
			if !last.Sim || (last.V != now && last.V != then) {
				t.Errorf("first polled point %+v, the simulator's price is %s, %s at the point's time", last, now, then)
			}
			if gaps := store.Gaps(s.Points, timings[contract.DomainMarket].Refresh, time.Now()); len(gaps) != 0 {
				t.Errorf("gaps after the first poll: %+v", gaps)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no polled price point within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDemoHistoryServed: the edge of demo mode serves the seeded past at
// every history path: bounded, marked simulated, its backfill named, and
// continued by the first poll without a gap. The price's hourly windows
// (1y, all) are read once they also hold the hourly candles the market
// collector's first poll backfills from the simulator's GeckoTerminal,
// before the seeded past, which they meet without a gap. (Read before
// the edge has read that backfill, they would pass with no join in them,
// and a gap where the two meet, up to an hour long, would go unseen.)
func TestDemoHistoryServed(t *testing.T) {
	r := start(t, standalone.DemoSim)
	type body struct {
		Measure     string `json:"measure"`
		Resolution  string `json:"resolution"`
		Downsampled bool   `json:"downsampled"`
		Points      []struct {
			Time string `json:"time"`
		}
		Gaps   []json.RawMessage
		Source struct {
			Backfill  *struct{ Name string }
			Simulated bool
		}
	}
	// Only GeckoTerminal's hourly candles (1,000: about 41 days) reach
	// further back than the seeded past.
	backfilled := func(b body) bool {
		first, err := time.Parse(time.RFC3339Nano, b.Points[0].Time)
		return err == nil && time.Since(first) > standalone.SeedSpan+2*time.Hour
	}
	var price body
	for _, m := range []string{"price", "market-cap", "fdv", "liquidity", "volume", "supply", "holders"} {
		for _, w := range contract.HistoryWindows {
			url := r.info.API + "/api/history/" + m + "/" + string(w)
			var b body
			// the first render of 35 bodies with their brotli variants
			// takes long under the race detector
			deadline := time.Now().Add(150 * time.Second)
			for {
				resp, raw := get(t, url)
				if resp.StatusCode == http.StatusOK {
					if err := json.Unmarshal(raw, &b); err != nil {
						t.Fatal(err)
					}
					if m != "price" || w.Tier() != contract.Tier1h || (len(b.Points) > 0 && backfilled(b)) {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d %s", url, resp.StatusCode, raw)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(b.Points) == 0 || len(b.Points) > 1000 || len(b.Gaps) != 0 || !b.Source.Simulated ||
				b.Source.Backfill == nil || b.Source.Backfill.Name != "simulated" {
				t.Errorf("%s: %d points, gaps %s, source %+v", url, len(b.Points), b.Gaps, b.Source)
			}
			if m == "price" && w == contract.Window30d {
				price = b
			}
		}
	}
	// 30 days of 5-minute buckets are 8,640: merged into hours.
	if !price.Downsampled || price.Resolution != "5m" || len(price.Points) < 700 {
		t.Errorf("price 30d: downsampled %v, resolution %s, %d points", price.Downsampled, price.Resolution, len(price.Points))
	}
}
