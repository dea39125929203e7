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
//   - Once per process, in its first poll that selects a pair, before that
//     poll's sample is written: on a new install the candle of the current
//     interval goes in first and the sample merges into it, so no gap
//     separates the past from the first sample. A failure is logged and
//     tried again at the next two polls; it never fails a poll.
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

// backfillAttempts is how many polls try the backfill before it is given
// up for the process.
const backfillAttempts = 3

// ohlcvLimit is the most candles GeckoTerminal answers in one request.
const ohlcvLimit = 1000

// backfillTimeout bounds each OHLCV request: it delays the first poll.
const backfillTimeout = 5 * time.Second

type ohlcvDoc struct {
	Data struct {
		Attributes struct {
			OHLCVList [][]json.Number `json:"ohlcv_list"`
		} `json:"attributes"`
	} `json:"data"`
}

// backfill imports the price's past once, when m selects a pool.
func (c *Collector) backfill(ctx context.Context, m contract.Market) {
	if c.cfg.DisableBackfill || m.Status != contract.MarketOK || m.Selected == nil {
		return
	}
	c.bfMu.Lock()
	defer c.bfMu.Unlock()
	if c.bfDone || c.bfTries >= backfillAttempts {
		return
	}
	c.bfTries++
	pool := m.Selected.Address
	total, failed := 0, false
	for _, tf := range []struct {
		tier      contract.Tier
		timeframe string
		aggregate int
	}{{contract.Tier1h, "hour", 1}, {contract.Tier5m, "minute", 5}} {
		pts, err := c.candles(ctx, pool, tf.timeframe, tf.aggregate, tf.tier.Bucket())
		if err != nil {
			failed = true
			c.log.Warn("price history backfill failed", "tier", tf.tier, "error", err.Error(), "attempt", c.bfTries)
			continue
		}
		n, err := c.store.Import(ctx, contract.MeasurePriceUSD, tf.tier, pts, c.runner.Simulated)
		if err != nil {
			failed = true
			c.log.Warn("price history backfill not stored", "tier", tf.tier, "error", "store unavailable", "attempt", c.bfTries)
			continue
		}
		total += n
	}
	if !failed {
		c.bfDone = true
		c.log.Info("price history backfilled from GeckoTerminal OHLCV", "pool", pool, "points", total)
	}
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
	started := time.Now()
	rctx, cancel := context.WithTimeout(ctx, min(backfillTimeout, c.cfg.HTTPTimeout))
	defer cancel()
	body, err := c.get(rctx, up, u, c.gtLimit)
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
