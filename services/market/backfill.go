package market

// The price's past, from GeckoTerminal's OHLCV of the selected pool: a
// new install (or one whose Redis lost everything) shows a price history
// at once, and real tokens get what demo mode's seeded past gives the
// simulated one. It is imported (store.Store.Import), so it only goes
// before what the history holds, marked BF: it never overwrites or merges
// into a sampled point, and running it again adds nothing.
//
// Decisions:
//   - Only the price: the candles' volume is per interval, not the 24 h
//     volume this service samples, and nothing else has a history there.
//   - The 1-hour tier from hourly candles and the 5-minute tier from
//     5-minute ones, 1,000 of each (about 41 and 3.5 days), one request
//     each through the GeckoTerminal rate limit; never the raw tier,
//     which holds this service's own samples only.
//   - In the first poll that selects a pair, before that poll's sample is
//     written: on a new install the candle of the current interval goes
//     in first and the sample merges into it, so no gap separates the
//     past from the first sample. Each request is bounded by
//     MARKET_HTTP_TIMEOUT, as every aggregator request: a slow answer is
//     waited for, not cut at a shorter bound of its own (5 s, which a
//     1,000-candle answer could miss at every try).
//   - Each tier until it is in: a tier that failed (request, answer or
//     store) is tried again, the other is not asked again. A failure is
//     logged with the time of the next try and never fails a poll; the
//     next poll tries again, then waits double from a minute up to an
//     hour (backfillRetry), for as long as the process runs: an outage or
//     a slow GeckoTerminal at start delays the past, it does not lose it
//     until a restart. While GeckoTerminal's Retry-After runs it is not
//     called (the try fails and waits its turn). A tier that lands after
//     the first sample goes before that sample's bucket, as every import:
//     the part of that bucket before the first sample stays a gap.
//   - MARKET_DISABLE_BACKFILL turns it off.

import (
	"cmp"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/contract"
)

// MethodPoolOHLCV names GeckoTerminal's pool OHLCV endpoint in the
// upstream metrics.
const MethodPoolOHLCV = "pool-ohlcv"

// ohlcvLimit is the most candles GeckoTerminal answers in one request.
const ohlcvLimit = 1000

// backfillTiers are the tiers the backfill fills, each from its candles.
var backfillTiers = [...]struct {
	tier      contract.Tier
	timeframe string
	aggregate int
}{{contract.Tier1h, "hour", 1}, {contract.Tier5m, "minute", 5}}

// backfillRetry is the wait after the n-th failed try of the backfill
// before the next: none after the first (the next poll tries again), then
// a minute, doubled after each failure up to an hour.
func backfillRetry(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(time.Minute<<min(n-2, 6), time.Hour)
}

type ohlcvDoc struct {
	Data struct {
		Attributes struct {
			OHLCVList [][]json.Number `json:"ohlcv_list"`
		} `json:"attributes"`
	} `json:"data"`
}

// backfill imports the price's past, when m selects a pool, into each
// tier that does not have it yet, when a try is due.
func (c *Collector) backfill(ctx context.Context, m contract.Market) {
	if c.cfg.DisableBackfill || m.Status != contract.MarketOK || m.Selected == nil {
		return
	}
	c.bfMu.Lock()
	defer c.bfMu.Unlock()
	if c.bfLeft() == 0 || c.now().Before(c.bfNext) {
		return
	}
	c.bfTries++
	pool := m.Selected.Address
	for i, tf := range backfillTiers {
		if c.bfDone[i] {
			continue
		}
		pts, err := c.candles(ctx, pool, tf.timeframe, tf.aggregate, tf.tier.Bucket())
		if err != nil {
			c.log.Warn("price history backfill failed", "tier", tf.tier, "error", err.Error(), "attempt", c.bfTries,
				"next_attempt_in", backfillRetry(c.bfTries).String())
			continue
		}
		n, err := c.store.Import(ctx, contract.MeasurePriceUSD, tf.tier, pts, c.runner.Simulated)
		if err != nil {
			c.log.Warn("price history backfill not stored", "tier", tf.tier, "error", "store unavailable", "attempt", c.bfTries,
				"next_attempt_in", backfillRetry(c.bfTries).String())
			continue
		}
		c.bfDone[i] = true
		c.log.Info("price history backfilled from GeckoTerminal OHLCV", "pool", pool, "tier", tf.tier, "points", n, "attempt", c.bfTries)
	}
	if c.bfLeft() > 0 {
		c.bfNext = c.now().Add(backfillRetry(c.bfTries))
	}
}

// bfLeft counts the tiers the backfill has not filled; c.bfMu is held.
func (c *Collector) bfLeft() int {
	n := 0
	for _, done := range c.bfDone {
		if !done {
			n++
		}
	}
	return n
}

// candles reads one OHLCV series of pool and returns its candles as
// buckets of the tier, oldest first; candles that are not well formed
// (a non-positive price, a high below the low, not aligned) are left out.
func (c *Collector) candles(ctx context.Context, pool, timeframe string, aggregate int, bucket time.Duration) ([]contract.Point, error) {
	u := c.gtBase + "/networks/solana/pools/" + url.PathEscape(pool) + "/ohlcv/" + timeframe + "?" + url.Values{
		"aggregate": {itoa(aggregate)}, "limit": {itoa(ohlcvLimit)}, "currency": {"usd"},
		"token": {c.mint}, "include_empty_intervals": {"true"},
	}.Encode()
	up := contract.UpstreamGeckoTerminal
	if held := c.holds.Check(up); held != nil {
		return nil, held // not called: not an upstream request
	}
	started := time.Now()
	body, err := c.get(ctx, up, u, c.gtLimit)
	c.observe(up, MethodPoolOHLCV, started, err)
	if err != nil {
		return nil, err
	}
	var doc ohlcvDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, invalid(up, "OHLCV answer is not the documented JSON: %v", err)
	}
	now := time.Now().UnixMilli()
	ms := bucket.Milliseconds()
	var out []contract.Point
	for _, row := range doc.Data.Attributes.OHLCVList {
		p, ok := candlePoint(row, ms, now)
		if ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b contract.Point) int { return cmp.Compare(a.T, b.T) })
	return slices.CompactFunc(out, func(a, b contract.Point) bool { return a.T == b.T }), nil
}

// candlePoint turns [timestamp, open, high, low, close, volume] into a
// bucket covering its interval up to now.
func candlePoint(row []json.Number, bucketMs, now int64) (contract.Point, bool) {
	if len(row) < 5 {
		return contract.Point{}, false
	}
	ts, err := row[0].Int64()
	if err != nil {
		return contract.Point{}, false
	}
	t := ts * 1000
	if t%bucketMs != 0 || t > now {
		return contract.Point{}, false
	}
	var v [4]decimal.Decimal
	for i := range v {
		d, err := decimal.NewFromString(row[i+1].String())
		if err != nil || d.Sign() <= 0 {
			return contract.Point{}, false
		}
		v[i] = d
	}
	o, h, l, cl := v[0], v[1], v[2], v[3]
	if h.LessThan(l) || o.LessThan(l) || cl.LessThan(l) || o.GreaterThan(h) || cl.GreaterThan(h) {
		return contract.Point{}, false
	}
	return contract.Point{T: t, V: cl.String(), O: o.String(), H: h.String(), L: l.String(),
		N: 1, F: t, Z: min(t+bucketMs-1, now)}, true
}

func itoa(n int) string { return decimal.NewFromInt(int64(n)).String() }
