package edge

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestErrorsAndPreflightGolden(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	for name, c := range map[string]struct{ method, path string }{
		"not-found":        {http.MethodGet, "/api/nope"},
		"not-found-slash":  {http.MethodGet, "/api/price/"},
		"not-found-page":   {http.MethodGet, "/favicon.ico"}, // / is the portal (TestPortalOff)
		"method-not-allow": {http.MethodPost, view.PathPrice},
		"method-delete":    {http.MethodDelete, view.PathTotalSupply},
		"preflight":        {http.MethodOptions, view.PathPrice},
	} {
		rec := h.do(c.method, c.path, "Origin", "https://example.org", "Access-Control-Request-Method", "GET")
		checkCommon(t, c.path, rec)
		checkGolden(t, "errors/"+name, dump(rec))
	}
	if rec := h.do(http.MethodPost, view.PathPrice); rec.Header().Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("405 Allow = %q", rec.Header().Get("Allow"))
	}
}

func TestConditionalAndHead(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	for _, p := range []string{view.PathTotalSupply, view.PathPrice, view.PathMarketData, view.PathExchanges} {
		first := h.do(http.MethodGet, p)
		etag := first.Header().Get("Etag")
		for _, inm := range []string{etag, "W/" + etag, `"nope", ` + etag, "*", `"a","b",` + etag} {
			rec := h.do(http.MethodGet, p, "If-None-Match", inm)
			if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
				t.Errorf("%s If-None-Match %s: %d, %d bytes", p, inm, rec.Code, rec.Body.Len())
			}
			if rec.Header().Get("Etag") != etag || rec.Header().Get("Access-Control-Allow-Origin") != "*" ||
				rec.Header().Get("Cache-Control") == "" {
				t.Errorf("%s 304 headers: %v", p, rec.Header())
			}
		}
		for _, inm := range []string{`"nope"`, `W/"nope"`, `garbage`, `"unterminated`} {
			if rec := h.do(http.MethodGet, p, "If-None-Match", inm); rec.Code != http.StatusOK {
				t.Errorf("%s If-None-Match %s: %d, want 200", p, inm, rec.Code)
			}
		}
		// If-Modified-Since only counts without If-None-Match
		if lm := first.Header().Get("Last-Modified"); lm != "" {
			if rec := h.do(http.MethodGet, p, "If-Modified-Since", lm); rec.Code != http.StatusNotModified {
				t.Errorf("%s If-Modified-Since: %d", p, rec.Code)
			}
			if rec := h.do(http.MethodGet, p, "If-Modified-Since", lm, "If-None-Match", `"other"`); rec.Code != http.StatusOK {
				t.Errorf("%s If-None-Match must win over If-Modified-Since: %d", p, rec.Code)
			}
		}
		head := h.do(http.MethodHead, p)
		if head.Code != http.StatusOK || head.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d with %d bytes", p, head.Code, head.Body.Len())
		}
		for _, k := range []string{"Etag", "Content-Length", "Content-Type", "Cache-Control", "X-Data-Stale"} {
			if head.Header().Get(k) != first.Header().Get(k) {
				t.Errorf("HEAD %s: %s %q, GET has %q", p, k, head.Header().Get(k), first.Header().Get(k))
			}
		}
		// query strings are ignored
		if q := h.do(http.MethodGet, p+"?cache=bust&x=1"); q.Body.String() != first.Body.String() {
			t.Errorf("%s: query string changed the body", p)
		}
	}
}

// TestStaleCrossing: a fresh document turns stale when the clock passes
// its stale-after, with no new data: the view is re-rendered.
func TestStaleCrossing(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	fresh := h.do(http.MethodGet, view.PathPrice)
	if fresh.Header().Get("X-Data-Stale") != "false" || !strings.Contains(fresh.Body.String(), `"stale":false`) {
		t.Fatalf("fresh: %v %s", fresh.Header(), fresh.Body)
	}
	next := h.srv.mirror.View().NextChange
	if want := t0.Add(-30 * time.Second).Add(180 * time.Second); next.Sub(want) > time.Second || next.Before(want) {
		t.Fatalf("next change %s, want just after %s", next, want)
	}
	h.clock.Add(151 * time.Second) // market is now 181 s old
	h.srv.rerender()
	stale := h.do(http.MethodGet, view.PathPrice)
	if stale.Header().Get("X-Data-Stale") != "true" || !strings.Contains(stale.Body.String(), `"stale":true`) {
		t.Fatalf("stale: %v %s", stale.Header(), stale.Body)
	}
	if stale.Header().Get("Etag") == fresh.Header().Get("Etag") {
		t.Error("the ETag did not change with the body")
	}
	// supply is still fresh; the composite is stale
	if rec := h.do(http.MethodGet, view.PathTotalSupply); rec.Header().Get("X-Data-Stale") != "false" {
		t.Error("supply turned stale with the market")
	}
	if rec := h.do(http.MethodGet, view.PathMarket); rec.Header().Get("X-Data-Stale") != "true" {
		t.Error("the composite is not stale while its market part is")
	}
	st := h.srv.statusReportNow()
	if st.Status != view.StatusDegraded || st.Checks.Domains["market"].Status != view.StatusStale {
		t.Errorf("status: %+v", st)
	}
}

// TestExpired: past its TTL a document is gone and the endpoint answers
// 503 data_unavailable with Retry-After.
func TestExpired(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	// market with a TTL of 300 ms (the memory store runs on the harness's
	// clock, as the edge does)
	env, err := contract.NewEnvelope(h.store.Mint(), contract.DomainMarket, h.clock.Now(), edgetest.Source(contract.DomainMarket, false), edgetest.Market())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Write(context.Background(), env, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	if rec := h.do(http.MethodGet, view.PathPrice); rec.Code != http.StatusOK {
		t.Fatalf("before expiry: %d %s", rec.Code, rec.Body)
	}
	h.clock.Add(300 * time.Millisecond)
	h.refresh()
	rec := h.do(http.MethodGet, view.PathPrice)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "30" ||
		!strings.Contains(rec.Body.String(), `"code":"data_unavailable"`) || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("after expiry: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if rec := h.do(http.MethodGet, view.PathMarket); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"missing":["market"]`) {
		t.Fatalf("composite after expiry: %d %s", rec.Code, rec.Body)
	}
}

// TestBadDocumentKeepsGoodData: a value that cannot be used never replaces
// a good document; /api/status reports it.
func TestBadDocumentKeepsGoodData(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	before := h.do(http.MethodGet, view.PathSupply).Body.String()
	key := contract.DocumentKey(h.store.Mint(), contract.DomainSupply)
	for _, bad := range []string{
		`{"schema_version":99,"domain":"supply","mint":"` + h.store.Mint() + `","updated_at":"2030-01-01T00:00:00Z","source":{"name":"x"},"data":{}}`,
		`{"schema_version":1,"domain":"supply","mint":"` + h.store.Mint() + `","updated_at":"2030-01-01T00:00:00Z","source":{"name":"x"},"data":{"decimals":6,"total_raw":"-5","circulating_raw":"1"}}`,
		`not json`,
	} {
		if err := h.store.Backend().Set(context.Background(), key, []byte(bad), time.Hour); err != nil {
			t.Fatal(err)
		}
		h.refresh()
		if got := h.do(http.MethodGet, view.PathSupply).Body.String(); got != before {
			t.Fatalf("bad value %q replaced good data: %s", bad, got)
		}
		if r := h.srv.statusReportNow().Checks.Domains["supply"].Rejected; r == nil {
			t.Errorf("status does not report the refused value %q", bad)
		}
	}
}

// TestUnknownPathBurst: 10,000 distinct unknown paths add no metric series
// and no lasting memory.
func TestUnknownPathBurst(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	series := func() int {
		mfs, err := h.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			n += len(mf.GetMetric())
		}
		return n
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for i := 0; i < 10; i++ { // warm up the unmatched series and the engine's pools
		h.do(http.MethodGet, "/warm/"+string(rune('a'+i)))
		h.do(http.MethodPost, "/warm/"+string(rune('a'+i)))
	}
	s0, m0 := series(), heap()
	for i := 0; i < 10000; i++ {
		p := "/api/" + strings.Repeat("x", i%50) + "/" + itoa36(i)
		if rec := h.do(http.MethodGet, p); rec.Code != http.StatusNotFound {
			t.Fatalf("%s: %d", p, rec.Code)
		}
	}
	s1, m1 := series(), heap()
	if s1 != s0 {
		t.Errorf("metric series grew from %d to %d", s0, s1)
	}
	if m1 > m0+4<<20 {
		t.Errorf("heap grew from %d to %d bytes after 10,000 unknown paths", m0, m1)
	}
}

func itoa36(i int) string { return strings.ToUpper(strconvFormat(i)) }

func strconvFormat(i int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{digits[i%36]}, b...)
		i /= 36
	}
	return string(b)
}

// TestConfigDefaults: the defaults are exactly the contract's strings.
func TestConfigDefaults(t *testing.T) {
	c := DefaultConfig()
	want := map[string]string{
		"market":  "public, max-age=15, s-maxage=30, stale-while-revalidate=30, stale-if-error=300",
		"supply":  "public, max-age=60, s-maxage=300, stale-while-revalidate=300, stale-if-error=86400",
		"holders": "public, max-age=300, s-maxage=900, stale-while-revalidate=900, stale-if-error=86400",
		"static":  "public, max-age=300, s-maxage=3600, stale-while-revalidate=3600, stale-if-error=86400",
	}
	got := map[string]string{"market": c.CacheControlMarket, "supply": c.CacheControlSupply,
		"holders": c.CacheControlHolders, "static": c.CacheControlStatic}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if c.SnapshotPoll != 2*time.Second || c.Validate() != nil {
		t.Errorf("defaults: %+v %v", c, c.Validate())
	}
	bad := c
	bad.SnapshotPoll, bad.RetryAfter, bad.AccessLogSample = time.Millisecond, 0, -1
	err := bad.Validate()
	for _, name := range []string{"EDGE_SNAPSHOT_POLL", "EDGE_RETRY_AFTER", "EDGE_ACCESS_LOG_SAMPLE"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("invalid config error does not name %s: %v", name, err)
		}
	}
}

// TestRunPicksUpUpdates runs the real refresher and HTTP server on a
// loopback port: a document written after start is served at once (the
// update notification), and Run stops cleanly.
func TestRunPicksUpUpdates(t *testing.T) {
	h := newHarness(t, nil, func(cm *config.Common, c *Config, d *Deps) {
		cm.DrainDelay = 0
		d.Now = time.Now
		c.SnapshotPoll = time.Hour // only the notification can bring the update
		c.ReadyGrace = 0           // ready over the empty store, to see the 503 first
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.srv.RunOn(ctx, ln)
	}()
	url := "http://" + ln.Addr().String()
	waitFor(t, func() bool { return h.srv.Ready() })
	if code := get(t, url+view.PathTotalSupply); code != http.StatusServiceUnavailable {
		t.Fatalf("before any write: %d", code)
	}
	if err := edgetest.WriteDoc(ctx, h.store, contract.DomainSupply, edgetest.Supply(), time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return get(t, url+view.PathTotalSupply) == http.StatusOK })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestRedisWrongPassword: a Redis that refuses the edge's credentials is
// reported as that in /api/status, not as unreachable, and the password
// is nowhere in the answer.
func TestRedisWrongPassword(t *testing.T) {
	rs := redistest.StartWithPassword(t, "right-horse-battery")
	opts, err := store.ParseRedisURL("redis://:wrong-staple@" + rs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	rst := store.New(store.NewRedis(opts), config.DemoMint)
	t.Cleanup(func() { _ = rst.Close() })
	h := newHarness(t, rst)
	h.refresh()
	st := h.srv.statusReportNow()
	if st.Checks.Store.Status != view.StatusDown || st.Checks.Store.Error == nil ||
		*st.Checks.Store.Error != "REDIS_URL: authentication failed (wrong password?)" {
		t.Errorf("redis check %+v", st.Checks.Store)
	}
	if body := h.do(http.MethodGet, view.PathStatus).Body.String(); strings.Contains(body, "staple") || strings.Contains(body, "unreachable") {
		t.Errorf("/api/status: %s", body)
	}
}

// TestRedisDownAndBack: the edge keeps serving its snapshot while Redis is
// down (status degraded, still ready), and picks up new writes after Redis
// comes back.
func TestRedisDownAndBack(t *testing.T) {
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.MaxRetries = 200*time.Millisecond, 200*time.Millisecond, -1
	rst := store.New(store.NewRedis(opts), config.DemoMint)
	t.Cleanup(func() { _ = rst.Close() })
	h := newHarness(t, rst, func(cm *config.Common, c *Config, d *Deps) {
		cm.DrainDelay = 0
		d.Now = time.Now
		c.SnapshotPoll, c.StoreTimeout = 100*time.Millisecond, 300*time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := edgetest.WriteAll(ctx, rst, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- h.srv.RunOn(ctx, ln)
	}()
	url := "http://" + ln.Addr().String()
	waitFor(t, func() bool { return get(t, url+view.PathPrice) == http.StatusOK })
	before := h.do(http.MethodGet, view.PathPrice).Body.String()

	rs.Stop()
	waitFor(t, func() bool { return !h.srv.storeUp() })
	for _, p := range []string{view.PathPrice, view.PathTotalSupply, view.PathHolders, view.PathMarketData} {
		if code := get(t, url+p); code != http.StatusOK {
			t.Errorf("%s with Redis down: %d", p, code)
		}
	}
	if got := h.do(http.MethodGet, view.PathPrice).Body.String(); got != before {
		t.Errorf("the snapshot changed while Redis was down")
	}
	st := h.srv.statusReportNow()
	if st.Status != view.StatusDegraded || st.Checks.Store.Status != view.StatusDown {
		t.Errorf("status with Redis down: %s, redis %s", st.Status, st.Checks.Store.Status)
	}
	if !h.srv.Ready() {
		t.Error("not ready while holding data")
	}
	if rec := h.do(http.MethodGet, view.PathStatus); strings.Contains(rec.Body.String(), rs.Addr()) {
		t.Error("/api/status quotes the Redis address")
	}

	rs.Resume() // an empty Redis (no persistence): our copies stay until their own TTL
	newer := edgetest.Market()
	p := decimalPtr("0.00002")
	newer.PriceUSD, newer.Selected.PriceUSD = p, p
	waitFor(t, func() bool {
		return edgetest.WriteDoc(ctx, rst, contract.DomainMarket, newer, time.Now(), time.Hour) == nil
	})
	waitFor(t, func() bool {
		return strings.Contains(h.do(http.MethodGet, view.PathPrice).Body.String(), `"price_usd":0.00002,`)
	})
	waitFor(t, func() bool { return h.srv.storeUp() })
	if code := get(t, url+view.PathTotalSupply); code != http.StatusOK {
		t.Errorf("supply lost after the Redis restart: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = readAll(t, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBoundaryWithoutTheRefresher: a request made past a boundary (a
// stale-after, a TTL) gets the view of that moment even when the
// refresher has not re-rendered (its timer late on a busy machine): never
// a price past its TTL, never a stale one flagged fresh.
func TestBoundaryWithoutTheRefresher(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	if rec := h.do(http.MethodGet, view.PathPrice); rec.Code != http.StatusOK || rec.Header().Get("X-Data-Stale") != "false" {
		t.Fatalf("fresh: %d %v", rec.Code, rec.Header())
	}
	h.clock.Add(151 * time.Second) // market is 181 s old: past its stale-after, nobody re-rendered
	if rec := h.do(http.MethodGet, view.PathPrice); rec.Code != http.StatusOK || rec.Header().Get("X-Data-Stale") != "true" {
		t.Fatalf("past the stale-after: %d, X-Data-Stale %q", rec.Code, rec.Header().Get("X-Data-Stale"))
	}
	h.clock.Add(contract.DefaultTimings[contract.DomainMarket].TTL) // past the TTL
	rec := h.do(http.MethodGet, view.PathPrice)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"data_unavailable"`) {
		t.Fatalf("past the TTL: %d %s, want 503 data_unavailable", rec.Code, rec.Body)
	}
}
