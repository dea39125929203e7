package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/mirror"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// historyPaths are every history path the edge serves.
func historyPaths() []string {
	var out []string
	for _, hm := range snapshot.HistoryMeasures {
		for _, w := range contract.HistoryWindows {
			out = append(out, view.HistoryPath(hm.Segment, w))
		}
	}
	return out
}

// commit writes doc of domain d updated at `at` with its samples, as a
// collector's successful poll does.
func commit(t testing.TB, st *store.Store, d contract.Domain, doc any, at time.Time, samples []contract.Sample) {
	t.Helper()
	env, err := contract.NewEnvelope(st.Mint(), d, at, edgetest.Source(d, false), doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(context.Background(), env, contract.DefaultTimings[d].TTL, samples...); err != nil {
		t.Fatal(err)
	}
}

// marketAt is the fixtures' market document with price p.
func marketAt(p string) contract.Market {
	m := edgetest.Market()
	m.PriceUSD = decimalPtr(p)
	return m
}

// fillHistory writes a history as the collectors would have by t0:
//
//   - the price's past imported from GeckoTerminal (1-hour candles for the
//     two days before the market collector started, marked bf);
//   - the market sampled every 60 s for the last 3 hours, but for a
//     10-minute outage 90 minutes ago (a gap);
//   - the supply every 300 s for 2 days, a mint of 0.5 tokens a day ago;
//   - the holders every 900 s for 45 days (more points than a body
//     holds: downsampled).
func fillHistory(h *harness) {
	h.t.Helper()
	ctx := context.Background()
	circ := decimal.RequireFromString("999999999.123456")
	mx := decimal.RequireFromString("1000000000")
	start := t0.Add(-3 * time.Hour).Add(30 * time.Second)
	var candles []contract.Point
	for i := 48; i >= 1; i-- {
		at := start.Truncate(time.Hour).Add(-time.Duration(i) * time.Hour)
		v := fmt.Sprintf("0.0000%d", 1100+i)
		candles = append(candles, contract.Point{T: at.UnixMilli(), V: v, O: v, H: fmt.Sprintf("0.0000%d", 1150+i),
			L: fmt.Sprintf("0.0000%d", 1050+i), N: 1, F: at.UnixMilli(), Z: at.Add(59 * time.Minute).UnixMilli()})
	}
	if _, err := h.store.Import(ctx, contract.MeasurePriceUSD, contract.Tier1h, candles, false); err != nil {
		h.t.Fatal(err)
	}
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * time.Minute)
		if at.After(t0.Add(-30 * time.Second)) {
			break
		}
		if at.After(t0.Add(-90*time.Minute)) && at.Before(t0.Add(-80*time.Minute)) {
			continue // the market collector was down
		}
		m := marketAt(fmt.Sprintf("0.0000%d", 1200+(i*7)%50))
		commit(h.t, h.store, contract.DomainMarket, m, at, contract.MarketSamples(m, &circ, &mx))
	}
	for i := 0; ; i++ {
		at := t0.Add(-48 * time.Hour).Add(time.Duration(i) * 5 * time.Minute)
		if at.After(t0.Add(-30 * time.Second)) {
			break
		}
		s := edgetest.Supply()
		if at.After(t0.Add(-24 * time.Hour)) {
			s = edgetest.SupplyAboveMax()
			s.Warnings = s.Warnings[:1]
		}
		commit(h.t, h.store, contract.DomainSupply, s, at, contract.SupplySamples(s))
	}
	for i := 0; ; i++ {
		at := t0.Add(-45 * 24 * time.Hour).Add(time.Duration(i) * 15 * time.Minute)
		if at.After(t0.Add(-30 * time.Second)) {
			break
		}
		hd := edgetest.Holders()
		hd.Holders = 15000 + uint64(i/10)
		commit(h.t, h.store, contract.DomainHolders, hd, at, contract.HoldersSamples(hd))
	}
	if err := edgetest.WriteDoc(ctx, h.store, contract.DomainMetadata, edgetest.Metadata(), t0.Add(-30*time.Second), contract.DefaultTimings[contract.DomainMetadata].TTL); err != nil {
		h.t.Fatal(err)
	}
	for _, s := range edgetest.Statuses(t0.Add(-30 * time.Second)) {
		if err := h.store.WriteStatus(ctx, s); err != nil {
			h.t.Fatal(err)
		}
	}
}

// historyGoldens are the history answers kept as golden files: every
// shape of body (price points from samples, 5-minute and 1-hour buckets
// with a backfill, values, base units with decimals, downsampled, gaps),
// and the errors.
var historyGoldens = map[string][]string{
	"history": {
		view.HistoryPath("price", contract.Window24h), view.HistoryPath("price", contract.Window7d),
		view.HistoryPath("price", contract.WindowAll), view.HistoryPath("market-cap", contract.Window24h),
		view.HistoryPath("supply", contract.Window24h), view.HistoryPath("holders", contract.Window30d),
		"/api/history/price/1d", "/api/history/price-usd/24h",
	},
	"empty":             {view.HistoryPath("price", contract.Window24h)},
	"max-not-disclosed": {view.HistoryPath("fdv", contract.Window7d)},
}

func TestHistoryGolden(t *testing.T) {
	fills := map[string]func(*harness){"history": fillHistory, "empty": scenarios["empty"],
		"max-not-disclosed": scenarios["max-not-disclosed"]}
	for name, paths := range historyGoldens {
		t.Run(name, func(t *testing.T) {
			h := newScenarioHarness(t, name)
			h.srv.bodies.Uncompressed = true // the goldens are the identity answers
			fills[name](h)
			h.refresh()
			for _, p := range paths {
				rec := h.do(http.MethodGet, p)
				checkCommon(t, p, rec)
				checkGolden(t, name+"/history"+strings.ReplaceAll(strings.TrimPrefix(p, "/api/history"), "/", "_"), dump(rec))
			}
		})
	}
}

// TestHistoryBodies checks what every history body of a full history
// promises: bounded, oldest first, exact strings, gaps where the market
// collector was down, never a point inside one.
func TestHistoryBodies(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.bodies.Uncompressed = true // compression: TestHistoryRestartAndFlush
	fillHistory(h)
	h.refresh()
	for _, p := range historyPaths() {
		rec := h.do(http.MethodGet, p)
		checkCommon(t, p, rec)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
		}
		b := decodeHistory(t, rec.Body.Bytes())
		if len(b.Points) > mirror.MaxHistoryPoints || len(b.Points) == 0 {
			t.Errorf("%s: %d points", p, len(b.Points))
		}
		var prev time.Time
		for _, pt := range b.Points {
			at, err := time.Parse(time.RFC3339Nano, pt.Time)
			if err != nil || !at.After(prev) {
				t.Fatalf("%s: point time %q not after %s", p, pt.Time, prev)
			}
			prev = at
			for _, v := range []string{pt.Value, pt.Open, pt.High, pt.Low, pt.Close} {
				if v != "" {
					if c, err := contract.CanonicalValue(v); err != nil || c != v {
						t.Fatalf("%s: value %q is not an exact canonical decimal", p, v)
					}
				}
			}
			for _, g := range b.Gaps {
				if g.From.Before(at) && g.To.After(at) && b.Resolution == "sample" {
					t.Errorf("%s: point at %s inside the gap %s–%s", p, at, g.From, g.To)
				}
			}
		}
		if b.Gaps == nil || b.Source.Upstreams == nil {
			t.Errorf("%s: gaps or upstreams null", p)
		}
		if rec.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s: Vary %q", p, rec.Header().Get("Vary"))
		}
	}
	// The market's outage is a gap of every market window that reaches it.
	for _, p := range []string{view.HistoryPath("price", contract.Window24h), view.HistoryPath("liquidity", contract.Window24h)} {
		b := decodeHistory(t, h.do(http.MethodGet, p).Body.Bytes())
		if len(b.Gaps) != 1 || !b.Gaps[0].From.Equal(t0.Add(-91*time.Minute+30*time.Second)) ||
			!b.Gaps[0].To.Equal(t0.Add(-80*time.Minute+30*time.Second)) || b.Gaps[0].Open {
			t.Errorf("%s: gaps %+v, want the outage 90 min ago", p, b.Gaps)
		}
	}
	// 45 days of holders every 15 minutes: the "all" window merges its
	// 1,080 hourly buckets into 2-hour ones.
	b := decodeHistory(t, h.do(http.MethodGet, view.HistoryPath("holders", contract.WindowAll)).Body.Bytes())
	if !b.Downsampled || b.Resolution != "1h" || b.BucketSeconds == nil || *b.BucketSeconds != 7200 || len(b.Points) != 540 {
		t.Errorf("holders/all: downsampled %v resolution %s bucket %v, %d points", b.Downsampled, b.Resolution, b.BucketSeconds, len(b.Points))
	}
}

type decodedHistory struct {
	Measure       string `json:"measure"`
	Resolution    string `json:"resolution"`
	BucketSeconds *int64 `json:"bucket_seconds"`
	Downsampled   bool   `json:"downsampled"`
	Points        []struct {
		Time, Value, Open, High, Low, Close string
	} `json:"points"`
	Gaps []struct {
		From, To time.Time
		Open     bool
	} `json:"gaps"`
	Truncated bool `json:"truncated"`
	Source    struct {
		Upstreams []string `json:"upstreams"`
		Backfill  *struct{ Name, Until string }
		Simulated bool `json:"simulated"`
	} `json:"source"`
	UpdatedAt *string `json:"updated_at"`
}

func decodeHistory(t *testing.T, body []byte) decodedHistory {
	t.Helper()
	var b decodedHistory
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("history body: %v: %s", err, body)
	}
	return b
}

// TestHistoryNotRead: before the edge has read the history, every history
// path is 503 data_unavailable; an unknown measure or window is 404
// whatever the method, and has no preflight.
func TestHistoryNotRead(t *testing.T) {
	h := newHarness(t, nil)
	rec := h.do(http.MethodGet, view.HistoryPath("holders", contract.Window7d))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"data_unavailable"`) {
		t.Errorf("before a read: %d %s", rec.Code, rec.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions} {
		for _, p := range []string{"/api/history/price/2d", "/api/history/volume_24h_usd/24h", "/api/history/price", "/api/history/price/24h/"} {
			if rec := h.do(m, p); rec.Code != http.StatusNotFound {
				t.Errorf("%s %s: %d", m, p, rec.Code)
			}
		}
	}
	if rec := h.do(http.MethodOptions, view.HistoryPath("price", contract.Window1y)); rec.Code != http.StatusNoContent {
		t.Errorf("preflight: %d", rec.Code)
	}
}

// TestHistoryRereadOnlyOnChange: the edge reads a domain's history again
// when its document changes or its refresh has passed, not on every
// poll; a body changes only then, and revalidates with 304 in between.
func TestHistoryRereadOnlyOnChange(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.bodies.Uncompressed = true
	fillHistory(h)
	h.refresh()
	p := view.HistoryPath("holders", contract.Window24h)
	first := h.do(http.MethodGet, p)
	etag := first.Header().Get("Etag")
	// a new holders sample, committed with its document, but the edge not
	// told: it is not read until the next refresh
	h.clock.Add(10 * time.Second)
	hd := edgetest.Holders()
	hd.Holders = 99999
	commit(t, h.store, contract.DomainHolders, hd, h.clock.Now(), contract.HoldersSamples(hd))
	if rec := h.do(http.MethodGet, p, "If-None-Match", etag); rec.Code != http.StatusNotModified {
		t.Fatalf("before a refresh: %d", rec.Code)
	}
	h.refresh()
	b := decodeHistory(t, h.do(http.MethodGet, p).Body.Bytes())
	if last := b.Points[len(b.Points)-1]; last.Value != "99999" {
		t.Fatalf("after the refresh the last point is %+v", last)
	}
	// an untouched domain keeps its answer across refreshes within its
	// refresh interval: the same ETag
	pp := view.HistoryPath("price", contract.Window24h)
	e1 := h.do(http.MethodGet, pp).Header().Get("Etag")
	h.clock.Add(5 * time.Second)
	h.refresh()
	if e2 := h.do(http.MethodGet, pp).Header().Get("Etag"); e2 != e1 {
		t.Errorf("price/24h changed without a new sample: %s → %s", e1, e2)
	}
	// past the market's refresh the window moves: read again (to moves)
	h.clock.Add(61 * time.Second)
	h.refresh()
	if e3 := h.do(http.MethodGet, pp).Header().Get("Etag"); e3 == e1 {
		t.Errorf("price/24h not read again past the market's refresh")
	}
}

// TestHistoryRestartAndFlush: on a real Redis, a
// market collector down for longer than the gap threshold leaves a gap
// (open while it lasts, closed when it polls again), and after Redis loses
// everything and the edge restarts, the history is empty until the next
// sample: the document written back by a collector brings no point, and
// nothing fills the time before.
func TestHistoryRestartAndFlush(t *testing.T) {
	rs := redistest.Start(t)
	ck := &clock{t: t0}
	newEdge := func() *harness {
		opts, err := store.ParseRedisURL(rs.URL())
		if err != nil {
			t.Fatal(err)
		}
		rst := store.New(store.NewRedis(opts), config.DemoMint, store.WithClock(ck.Now))
		t.Cleanup(func() { _ = rst.Close() })
		return newHarness(t, rst, func(_ *config.Common, _ *Config, d *Deps) { d.Now = ck.Now })
	}
	circ, mx := decimal.RequireFromString("999999999.123456"), decimal.RequireFromString("1000000000")
	poll := func(h *harness, price string) {
		m := marketAt(price)
		commit(t, h.store, contract.DomainMarket, m, ck.Now(), contract.MarketSamples(m, &circ, &mx))
	}
	p := view.HistoryPath("price", contract.Window24h)
	read := func(h *harness) decodedHistory {
		t.Helper()
		h.refresh()
		rec := h.do(http.MethodGet, p)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
		}
		return decodeHistory(t, rec.Body.Bytes())
	}

	a := newEdge()
	for i := range 30 {
		poll(a, fmt.Sprintf("0.0000%d", 1200+i))
		ck.Add(time.Minute)
	}
	if b := read(a); len(b.Points) != 30 || len(b.Gaps) != 0 {
		t.Fatalf("30 polls: %d points, gaps %+v", len(b.Points), b.Gaps)
	}
	for _, enc := range []string{"gzip", "br"} {
		rec := a.do(http.MethodGet, p, "Accept-Encoding", enc)
		if rec.Header().Get("Content-Encoding") != enc || !strings.HasSuffix(rec.Header().Get("Etag"), map[string]string{"gzip": `-gz"`, "br": `-br"`}[enc]) {
			t.Errorf("%s: %s answer: %v", p, enc, rec.Header())
		}
		if rec := a.do(http.MethodHead, p, "Accept-Encoding", enc, "If-None-Match", rec.Header().Get("Etag")); rec.Code != http.StatusNotModified {
			t.Errorf("%s: HEAD revalidation: %d", p, rec.Code)
		}
	}
	lastPoll := ck.Now().Add(-time.Minute)

	// The collector is down for 10 minutes, past the gap threshold (3 min
	// at a 60 s refresh): an open gap, and no point in it.
	ck.Add(10 * time.Minute)
	b := read(a)
	if len(b.Points) != 30 || len(b.Gaps) != 1 || !b.Gaps[0].Open || !b.Gaps[0].From.Equal(lastPoll) || !b.Gaps[0].To.Equal(ck.Now()) {
		t.Fatalf("collector down: %d points, gaps %+v", len(b.Points), b.Gaps)
	}
	// It polls again: the gap closes on its sample.
	poll(a, "0.00001300")
	b = read(a)
	if len(b.Points) != 31 || len(b.Gaps) != 1 || b.Gaps[0].Open || !b.Gaps[0].To.Equal(ck.Now()) {
		t.Fatalf("collector back: %d points, gaps %+v", len(b.Points), b.Gaps)
	}

	// Redis loses everything; a new edge starts; the collector writes its
	// document back, as collector.Runner.Restore does: without a sample.
	rs.Restart()
	ck.Add(30 * time.Second)
	c := newEdge()
	if err := edgetest.WriteDoc(context.Background(), c.store, contract.DomainMarket, marketAt("0.00001300"),
		ck.Now().Add(-30*time.Second), contract.DefaultTimings[contract.DomainMarket].TTL); err != nil {
		t.Fatal(err)
	}
	if b := read(c); len(b.Points) != 0 || len(b.Gaps) != 0 || b.UpdatedAt != nil {
		t.Fatalf("after the flush: %d points, gaps %+v, updated_at %v", len(b.Points), b.Gaps, b.UpdatedAt)
	}
	if rec := c.do(http.MethodGet, view.PathPrice); rec.Code != http.StatusOK {
		t.Fatalf("the written-back document is not served: %d", rec.Code)
	}
	// The edge that kept running re-reads once the market's refresh has
	// passed: the same empty history, never its old points as new ones.
	ck.Add(time.Minute)
	if b := read(a); len(b.Points) != 0 {
		t.Fatalf("the running edge after the flush: %d points", len(b.Points))
	}
	// The next polls start the history again, from their own samples only.
	flushedAt := ck.Now()
	for range 3 {
		poll(c, "0.00001310")
		ck.Add(time.Minute)
	}
	b = read(c)
	if len(b.Points) != 3 || len(b.Gaps) != 0 {
		t.Fatalf("3 polls after the flush: %d points, gaps %+v", len(b.Points), b.Gaps)
	}
	if first, _ := time.Parse(time.RFC3339Nano, b.Points[0].Time); !first.Equal(flushedAt) {
		t.Errorf("first point after the flush at %s, want the first poll's %s", first, flushedAt)
	}
}
