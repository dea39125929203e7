package simulator

import (
	"hash/fnv"
	"math"
	"strconv"
	"time"
)

// PastValue is one value of the simulated token's past.
type PastValue struct {
	At time.Time
	// Value is a non-negative decimal in plain notation.
	Value string
}

// Past is a seeded history of the simulated token up to now, for the
// charts of demo mode: what its collectors would have read had they been
// polling all along. It ends on the values the simulator serves now, so
// the first real poll continues it.
type Past struct {
	// PriceUSD, LiquidityUSD and Volume24hUSD are read every marketEvery:
	// the price as the aggregators' OHLCV serves it (dexsim.PriceAt), the
	// liquidity and volume of the aggregators' totals, moving a little.
	PriceUSD, LiquidityUSD, Volume24hUSD []PastValue
	// SupplyRaw is the total supply in base units every supplyEvery: it
	// grew as the simulator mints (Options.SupplyEvery), so it was lower.
	SupplyRaw []PastValue
	// Holders is the holder count every holdersEvery, a little lower in
	// the past.
	Holders []PastValue
	// Decimals are the mint's.
	Decimals uint8
}

// Past returns the token's past over span up to now (oldest first), with
// the given interval between the values of each domain (the collectors'
// refreshes). The same seed gives the same past.
func (s *Sim) Past(now time.Time, span, marketEvery, supplyEvery, holdersEvery time.Duration) Past {
	p := Past{Decimals: s.opts.Decimals}
	from := now.Add(-span)
	mt := s.Market()
	liq0, vol0 := mt.Totals.LiquidityUSD, mt.Totals.Volume.H24
	for _, t := range times(from, now, marketEvery) {
		price, ok := s.Dex.PriceAt(s.opts.Mint, t)
		if !ok {
			continue
		}
		p.PriceUSD = append(p.PriceUSD, PastValue{At: t, Value: price})
		p.LiquidityUSD = append(p.LiquidityUSD, PastValue{At: t,
			Value: cents(liq0 * s.wave(1, t, 11*24*time.Hour, 0.15) / s.wave(1, now, 11*24*time.Hour, 0.15))})
		p.Volume24hUSD = append(p.Volume24hUSD, PastValue{At: t,
			Value: cents(vol0 * s.wave(2, t, 3*24*time.Hour, 0.4) / s.wave(2, now, 3*24*time.Hour, 0.4))})
	}

	// The supply, back from now: one mint undone per SupplyEvery.
	supply := s.RPCSupply()
	ts := times(from, now, supplyEvery)
	p.SupplyRaw = make([]PastValue, len(ts))
	at := now
	for i := len(ts) - 1; i >= 0; i-- {
		if every := s.opts.SupplyEvery; every > 0 {
			steps := int64(at.Sub(ts[i]) / every)
			if steps > 1000 { // many fast steps: their product at once
				supply = uint64(float64(supply) * math.Pow(100_000.0/100_001, float64(steps)))
				steps = 0
			}
			for range steps {
				y := supply - min(supply, 123)
				supply = y - y/100_001 // before one growSupply step
			}
			at = at.Add(-time.Duration(int64(at.Sub(ts[i])/every)) * every)
		}
		p.SupplyRaw[i] = PastValue{At: ts[i], Value: strconv.FormatUint(supply, 10)}
	}

	h0 := float64(s.Holders().Holders)
	hNow := strconv.Itoa(s.Holders().Holders)
	for _, t := range times(from, now, holdersEvery) {
		days := now.Sub(t).Hours() / 24
		h := math.Round(h0*(1-0.004*days) + 3*noise(s.opts.Seed, uint64(t.Unix()/3600)))
		p.Holders = append(p.Holders, PastValue{At: t, Value: strconv.FormatFloat(max(h, 1), 'f', 0, 64)})
	}
	if n := len(p.Holders); n > 0 {
		p.Holders[n-1].Value = hNow // it ends on the count served now
	}
	return p
}

// RPCSupply is the supply the Solana simulator serves now, in base units.
func (s *Sim) RPCSupply() uint64 {
	t, _ := s.RPC.Supply(s.opts.Mint)
	return t
}

// times are from, from+every, ... up to now, now included.
func times(from, now time.Time, every time.Duration) []time.Time {
	if every <= 0 {
		return nil
	}
	var out []time.Time
	for t := now; !t.Before(from); t = t.Add(-every) {
		out = append(out, t)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// wave is 1 plus a cycle of the given period and amplitude and a smaller
// faster one, phased by the seed and k.
func (s *Sim) wave(k uint64, t time.Time, period time.Duration, amp float64) float64 {
	x := float64(t.Unix()) / period.Seconds()
	ph := float64(mix(s.opts.Seed, k)%6283) / 1000
	return 1 + amp*math.Sin(2*math.Pi*x+ph) + amp/4*math.Sin(2*math.Pi*x*7.3+ph/2)
}

func cents(f float64) string { return strconv.FormatFloat(math.Round(max(f, 0)*100)/100, 'f', 2, 64) }

// noise is a value in [-1, 1] fixed by seed and i.
func noise(seed, i uint64) float64 { return float64(mix(seed, i)%2001)/1000 - 1 }

func mix(seed, i uint64) uint64 {
	f := fnv.New64a()
	var b [16]byte
	for k := range 8 {
		b[k], b[8+k] = byte(seed>>(8*k)), byte(i>>(8*k))
	}
	_, _ = f.Write(b[:])
	return f.Sum64()
}
