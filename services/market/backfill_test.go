package market

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/store"
)

// backfillHarness bounds a request by a minute, not testConfig's 2 s:
// the simulator's 1,000 candles took over 2 s under -race on a loaded
// machine, and the backfill waits for them as long as MARKET_HTTP_TIMEOUT.
func backfillHarness(t *testing.T, redis bool) *harness {
	cfg := testConfig()
	cfg.DisableBackfill = false
	cfg.HTTPTimeout = time.Minute
	h := newHarness(t, setup{redis: redis, cfg: &cfg, official: dexsim.Scenario(mint, 42).OfficialPairs()})
	h.sim.LoadScenario(mint, 42)
	return h
}

func (h *harness) tier(tier contract.Tier) []contract.Point {
	h.t.Helper()
	r, err := h.store.HistoryRange(context.Background(), contract.MeasurePriceUSD, tier, time.Unix(0, 0), time.Now().Add(time.Hour), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Points
}

// TestBackfillImportsThePricePast: the first poll imports GeckoTerminal's
// hourly and 5-minute candles of the selected pool before its own sample,
// which merges into the candle of its interval: the past and the first
// sample join without a gap, the candles are exactly the upstream's, and
// a collector started again over the same store imports nothing more.
func TestBackfillImportsThePricePast(t *testing.T) {
	ctx := context.Background()
	h := backfillHarness(t, true)
	m := h.poll()
	if n := h.sim.Requests(dexsim.RouteGeckoTerminal); n != 3 {
		t.Errorf("%d GeckoTerminal requests, want the pools of the cross-check and the two OHLCV ones", n)
	}
	truth := h.sim.Truth(mint)
	var hourly struct {
		Data struct {
			Attributes struct {
				OHLCVList [][]json.Number `json:"ohlcv_list"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(simBody(t, h.sim, dexsim.GeckoTerminalPrefix+"/networks/solana/pools/"+truth.Selected.Address+
		"/ohlcv/hour?limit=1000&token="+mint), &hourly); err != nil {
		t.Fatal(err)
	}
	byTime := map[int64][]json.Number{}
	for _, row := range hourly.Data.Attributes.OHLCVList {
		ts, _ := row[0].Int64()
		byTime[ts*1000] = row
	}

	for _, tc := range []struct {
		tier contract.Tier
		min  int
	}{{contract.Tier1h, 999}, {contract.Tier5m, 999}} {
		pts := h.tier(tc.tier)
		if len(pts) < tc.min {
			t.Fatalf("%s: %d points, want at least %d", tc.tier, len(pts), tc.min)
		}
		for _, p := range pts[:len(pts)-1] {
			if !p.BF || p.Sim || p.N != 1 {
				t.Fatalf("%s: imported point %+v, want marked BF only", tc.tier, p)
			}
		}
		last := pts[len(pts)-1]
		if last.V != m.PriceUSD.String() || last.N != 2 || !last.BF {
			t.Errorf("%s: current bucket %+v, want the candle merged with the poll's sample %s", tc.tier, last, m.PriceUSD)
		}
		if gaps := store.Gaps(pts, time.Minute, time.Now()); len(gaps) != 0 {
			t.Errorf("%s: gaps %+v", tc.tier, gaps)
		}
		if tc.tier == contract.Tier1h {
			for _, p := range pts[len(pts)-50 : len(pts)-1] {
				row := byTime[p.T]
				if row == nil || dec(row[1].String()).String() != p.O || dec(row[2].String()).String() != p.H ||
					dec(row[3].String()).String() != p.L || dec(row[4].String()).String() != p.V {
					t.Fatalf("bucket %+v is not the upstream's candle %v", p, row)
				}
			}
		}
	}
	if raw := h.tier(contract.TierRaw); len(raw) != 1 || raw[0].BF {
		t.Errorf("raw tier %+v, want the poll's sample only", raw)
	}

	// A collector started again over the same store: nothing more.
	before := len(h.tier(contract.Tier1h))
	cfg := testConfig()
	cfg.DisableBackfill = false
	reg := prometheus.NewRegistry()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	tok := config.Token{Mint: mint}
	for _, a := range dexsim.Scenario(mint, 42).OfficialPairs() {
		tok.OfficialPairs = append(tok.OfficialPairs, config.OfficialPair{Address: a})
	}
	again, err := New(config.Common{DexScreenerURL: h.sim.DexScreenerURL(), GeckoTerminalURL: h.sim.GeckoTerminalURL()}, tok, cfg,
		collector.Deps{Store: h.store, Metrics: collector.NewMetrics(reg), Registry: reg,
			Log: slog.New(slog.DiscardHandler), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(h.tier(contract.Tier1h)); got != before {
		t.Errorf("a second backfill changed the 1h tier from %d to %d points", before, got)
	}
}

// TestBackfillFailureNeverFailsThePoll: with GeckoTerminal down the poll
// succeeds and imports nothing; the next poll tries again and succeeds.
func TestBackfillFailureNeverFailsThePoll(t *testing.T) {
	h := backfillHarness(t, false)
	h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP503})
	h.poll()
	if n := len(h.tier(contract.Tier1h)); n != 1 {
		t.Fatalf("1h tier holds %d points after a failed backfill, want the poll's only", n)
	}
	h.sim.Faults().ClearAll()
	h.poll()
	if n := len(h.tier(contract.Tier1h)); n < 999 {
		t.Errorf("1h tier holds %d points after the retry", n)
	}
}

// clock is a settable clock for the backfill's retries.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func (h *harness) gtRequests() int64 { return h.sim.Requests(dexsim.RouteGeckoTerminal) }

// TestBackfillRetriedUntilIn: a backfill that keeps failing is not given
// up. The first failure is tried again at the next poll; later ones wait
// a minute, then two (a poll before its time asks GeckoTerminal for its
// pools only); once GeckoTerminal answers, both tiers land.
func TestBackfillRetriedUntilIn(t *testing.T) {
	h := backfillHarness(t, false)
	clk := &clock{t: time.Now()}
	h.c.now = clk.now
	h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP503})
	for i, step := range []struct {
		advance  time.Duration
		requests int64 // GeckoTerminal requests of the poll
	}{
		{0, 3},                // pools, hour, minute: failed
		{0, 3},                // the next poll tries again: failed
		{59 * time.Second, 1}, // a minute to wait
		{time.Second, 3},      // a minute on: failed
		{time.Minute, 1},      // two minutes to wait
		{time.Minute, 3},      // two minutes on: failed
	} {
		clk.add(step.advance)
		before := h.gtRequests()
		h.poll()
		if got := h.gtRequests() - before; got != step.requests {
			t.Fatalf("poll %d: %d GeckoTerminal requests, want %d", i+1, got, step.requests)
		}
	}
	h.sim.Faults().ClearAll()
	clk.add(4 * time.Minute)
	h.poll()
	for _, tier := range []contract.Tier{contract.Tier1h, contract.Tier5m} {
		if n := len(h.tier(tier)); n < 999 {
			t.Errorf("%s tier holds %d points after the seventh poll, want the candles", tier, n)
		}
	}
	clk.add(time.Hour)
	before := h.gtRequests()
	h.poll()
	if got := h.gtRequests() - before; got != 1 {
		t.Errorf("%d GeckoTerminal requests after the backfill is in, want the pools only", got)
	}
}

// TestBackfillRetriesTheMissingTier: when the hourly candles fail and
// the 5-minute ones land, the next poll asks for the hourly ones only.
func TestBackfillRetriesTheMissingTier(t *testing.T) {
	h := backfillHarness(t, false)
	// The poll's pools read and the hourly candles fail; the 5-minute
	// candles are answered.
	h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP503, Times: 2})
	h.poll()
	if n := len(h.tier(contract.Tier1h)); n != 1 {
		t.Fatalf("1h tier holds %d points after its candles failed, want the poll's only", n)
	}
	fiveMin := len(h.tier(contract.Tier5m))
	if fiveMin < 999 {
		t.Fatalf("5m tier holds %d points, want the candles", fiveMin)
	}
	before := h.gtRequests()
	h.poll()
	if got := h.gtRequests() - before; got != 2 {
		t.Errorf("%d GeckoTerminal requests at the second poll, want the pools and the hourly candles", got)
	}
	if n := len(h.tier(contract.Tier1h)); n < 999 {
		t.Errorf("1h tier holds %d points after the retry", n)
	}
	if n := len(h.tier(contract.Tier5m)); n != fiveMin {
		t.Errorf("5m tier went from %d to %d points: imported twice?", fiveMin, n)
	}
}

// TestBackfillWaitsForRetryAfter: while GeckoTerminal's Retry-After
// runs, the backfill does not call it either; it lands once the wait is
// over.
func TestBackfillWaitsForRetryAfter(t *testing.T) {
	h := backfillHarness(t, false)
	h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP429, RetryAfter: time.Second, Times: 1})
	h.poll()
	if got := h.gtRequests(); got != 1 {
		t.Fatalf("%d GeckoTerminal requests after a 429 asking a second's wait, want the pools read only", got)
	}
	if n := len(h.tier(contract.Tier1h)); n != 1 {
		t.Fatalf("1h tier holds %d points, want the poll's only", n)
	}
	time.Sleep(1100 * time.Millisecond)
	h.poll()
	if n := len(h.tier(contract.Tier1h)); n < 999 {
		t.Errorf("1h tier holds %d points after the wait, want the candles", n)
	}
}
