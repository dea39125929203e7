package standalone

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/store"
)

// SeedSpan is how far back demo mode's seeded past reaches, at least: it
// starts at the start of the hour SeedSpan before it ends (seedFrom).
const SeedSpan = 30 * 24 * time.Hour

// seedFrom is where the seeded past that ends at now starts: SeedSpan
// before now, back to the start of its hour, the bucket of the coarsest
// tier. The oldest bucket of every tier then holds seeded values from
// its start (within a seed step), and the price's past the market
// collector backfills from GeckoTerminal, which goes only before the
// oldest point of a series (store.Store.Import), ends where it begins.
// Started SeedSpan before now, the seeded past's first hourly bucket
// began with its first value, up to an hour after the bucket's start,
// and the hourly candle before it ended at that start: the price's
// /api/history windows of the hourly tier (1y, all) showed the minutes
// between as a gap.
func seedFrom(now time.Time) time.Time {
	return time.UnixMilli(store.BucketStart(now.Add(-SeedSpan).UnixMilli(), contract.Tier1h.Bucket())).UTC()
}

// seedHistory gives demo mode a history from its first second: SeedSpan
// of every measure (from seedFrom), from the simulator's model
// (simulator.Past) at the collectors' refreshes, folded into every tier
// as polls would have been, and imported marked simulated and imported
// (Point.Sim, Point.BF). An import only goes before what a series holds
// (store.Store.Import), so a demo restarted over a Redis that keeps its
// data adds nothing over its own past. It returns the number of points
// imported.
func seedHistory(ctx context.Context, st *store.Store, sim *simulator.Sim, token config.Token,
	timings map[contract.Domain]contract.Timing, now time.Time) (int, error) {
	past := sim.Past(now, now.Sub(seedFrom(now)), seedStep(timings[contract.DomainMarket].Refresh),
		seedStep(timings[contract.DomainSupply].Refresh), seedStep(timings[contract.DomainHolders].Refresh))

	series := map[contract.Measure][]contract.Point{
		contract.MeasurePriceUSD:     points(past.PriceUSD),
		contract.MeasureLiquidityUSD: points(past.LiquidityUSD),
		contract.MeasureVolume24hUSD: points(past.Volume24hUSD),
		contract.MeasureSupply:       points(past.SupplyRaw),
		contract.MeasureHolders:      points(past.Holders),
	}
	// Market cap and FDV as the market collector samples them: the price
	// times the supply of the time, and times the disclosed maximum.
	var maxWhole *decimal.Decimal
	if raw, err := token.MaxSupplyRaw(0); err == nil {
		if d, err := decimal.NewFromString(raw); err == nil {
			maxWhole = &d
		}
	}
	j := -1
	for _, p := range past.PriceUSD {
		for j+1 < len(past.SupplyRaw) && !past.SupplyRaw[j+1].At.After(p.At) {
			j++
		}
		var circulating *decimal.Decimal
		if j >= 0 {
			if whole, err := amount.Format(past.SupplyRaw[j].Value, past.Decimals); err == nil {
				if d, err := decimal.NewFromString(whole); err == nil {
					circulating = &d
				}
			}
		}
		price, err := decimal.NewFromString(p.Value)
		if err != nil {
			continue
		}
		m := contract.Market{Status: contract.MarketOK, PriceUSD: &price}
		for _, s := range contract.MarketSamples(m, circulating, maxWhole) {
			if s.Measure == contract.MeasureMarketCapUSD || s.Measure == contract.MeasureFDVUSD {
				series[s.Measure] = append(series[s.Measure], contract.Point{T: p.At.UnixMilli(), V: s.Value})
			}
		}
	}

	total := 0
	for _, m := range contract.Measures {
		pts := series[m]
		if len(pts) == 0 {
			continue
		}
		for _, tier := range contract.Tiers {
			n, err := st.Import(ctx, m, tier, store.Buckets(pts, tier, m.OHLC()), true)
			if err != nil {
				return total, fmt.Errorf("seed %s %s: %w", m, tier, err)
			}
			total += n
		}
	}
	return total, nil
}

// maxSeedValues bounds the values of one measure's seeded past.
const maxSeedValues = 50_000

// seedStep is the interval between seeded values of a domain refreshed
// every refresh: the refresh, or SeedSpan / maxSeedValues (about 52 s)
// when the refresh is shorter (one shortened for a test). Either stays
// within store.GapThreshold of the refresh (its slack is at least a
// minute): the seeded past never shows a gap.
func seedStep(refresh time.Duration) time.Duration {
	return max(refresh, SeedSpan/maxSeedValues)
}

func points(vals []simulator.PastValue) []contract.Point {
	out := make([]contract.Point, 0, len(vals))
	for _, v := range vals {
		out = append(out, contract.Point{T: v.At.UnixMilli(), V: v.Value})
	}
	return out
}
