package chartcheck

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/testkit/sse"
)

// supplyPoll is the supply collector's poll interval (SUPPLY_REFRESH) in
// the tests of /api/events through the cache tier: a minute, so that a
// burn reaches clients through the collector's subscription to the mint
// account, and the poll, the safety net, cannot explain the figures.
const supplyPoll = time.Minute

// burnBound is the generous bound on a burn reaching a client of
// /api/events through the cache tier (the target is p99 <= 2 s; this is
// an assertion on a busy machine, not the target).
const burnBound = 10 * time.Second

// burns is how many burns the ledger-to-client figures are taken over.
const burns = 30

// eventsMint is the simulated token of these tests.
const eventsMint = "Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR"

// ledger is the simulated ledger the running services read.
type ledger struct {
	sim *simulator.Sim
	env []string // the services' variables pointing at it
}

// startLedger starts the project's simulator in this process (so that the
// test can burn on its ledger) and writes the token file of its token.
func startLedger(t *testing.T) *ledger {
	t.Helper()
	sim, err := simulator.Start(context.Background(), simulator.Options{Mint: eventsMint, Seed: 1, Accounts: 600})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	var b strings.Builder
	fmt.Fprintf(&b, "mint: %s\nname: Demo Token\nsymbol: DEMO\ndecimals: 6\nmax_supply: \"1000000000\"\nofficial_pairs:\n", eventsMint)
	for _, p := range sim.OfficialPairs {
		fmt.Fprintf(&b, "  - {address: %s, dex: %s, base: %s, quote: %s}\n", p.Address, p.Dex, p.Base, p.Quote)
	}
	path := filepath.Join(t.TempDir(), "token.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return &ledger{sim: sim, env: []string{"TOKEN_CONFIG=" + path, "SOLANA_RPC_URL=" + sim.RPCURL,
		"DEXSCREENER_URL=" + sim.DexScreenerURL, "GECKOTERMINAL_URL=" + sim.GeckoTerminalURL}}
}

// burn burns amount base units on the ledger through the simulator's
// control endpoint (POST /_simulator/burn) and returns the new total.
func (l *ledger) burn(t *testing.T, amount uint64) string {
	t.Helper()
	resp, err := http.Post(l.sim.RPCURL+"/_simulator/burn?amount="+strconv.FormatUint(amount, 10), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Supply string `json:"supply"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Supply == "" {
		t.Fatalf("burn %d: %d %v %+v", amount, resp.StatusCode, err, out)
	}
	return out.Supply
}

// liveTier is a running edge (standalone on the in-process simulator, the
// supply polled every supplyPoll) behind a counting proxy behind the
// chart's nginx tier.
type liveTier struct {
	ledger  *ledger
	edge    *standalone
	counter *countingProxy
	cache   string // nginx's base URL
}

func startLiveTier(t *testing.T, edgeEnv []string, nginxValues ...string) *liveTier {
	t.Helper()
	nginx := findNginx(t)
	l := startLedger(t)
	env := append(append([]string{"SUPPLY_REFRESH=" + supplyPoll.String()}, l.env...), edgeEnv...)
	edge := runStandalone(t, buildStandalone(t), "events", env)
	counter := startCountingProxy(t, edge.api)
	return &liveTier{ledger: l, edge: edge, counter: counter, cache: startNginx(t, nginx, counter.addr, nginxValues...)}
}

// received is one event and when the client read it.
type received struct {
	sse.Event
	at time.Time
}

// eventStream is a client of /api/events reading in the background.
type eventStream struct {
	resp     *http.Response
	opened   time.Time // when the request was sent
	events   chan received
	comments atomic.Int64 // comment lines (heartbeats) read so far
	retry    atomic.Int64 // the retry field, -1 before it
	cancel   context.CancelFunc
	done     chan struct{}
}

// openStream opens u (an /api/events URL) with the request headers h and
// reads it until the test ends.
func openStream(t *testing.T, u string, h http.Header) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	s := &eventStream{opened: time.Now(), events: make(chan received, 1024), cancel: cancel, done: make(chan struct{})}
	s.retry.Store(-1)
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", u, err)
	}
	s.resp = resp
	t.Cleanup(func() {
		cancel()
		<-s.done
		_ = resp.Body.Close()
		tr.CloseIdleConnections()
	})
	// Lines are counted as they come (a heartbeat is a comment, which the
	// event reader skips), then handed to the event reader.
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if strings.HasPrefix(line, ":") {
				s.comments.Add(1)
			}
			if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "retry:"); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					s.retry.Store(int64(n))
				}
			}
			if _, werr := pw.Write([]byte(line)); werr != nil || err != nil {
				_ = pw.CloseWithError(err)
				return
			}
		}
	}()
	go func() {
		defer close(s.done)
		defer close(s.events)
		defer func() { _ = pr.Close() }() // the line reader stops writing
		r := sse.NewReader(pr)
		for {
			e, err := r.Next()
			if err != nil {
				_ = pr.CloseWithError(err)
				return
			}
			select {
			case s.events <- received{Event: e, at: time.Now()}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

// next returns the next event within d.
func (s *eventStream) next(t *testing.T, d time.Duration) (received, bool) {
	t.Helper()
	select {
	case e, ok := <-s.events:
		return e, ok
	case <-time.After(d):
		return received{}, false
	}
}

// supplyTotal is total_supply_raw of a supply event's body.
func supplyTotal(t *testing.T, data string) string {
	t.Helper()
	var b struct {
		Total string `json:"total_supply_raw"`
	}
	if err := json.Unmarshal([]byte(data), &b); err != nil || b.Total == "" {
		t.Fatalf("supply event without total_supply_raw (%v): %.200s", err, data)
	}
	return b.Total
}

// waitSupply reads s until a supply event of total want, within d, and
// returns when it was read. Events of other totals in between are only
// the supply before the burn.
func (s *eventStream) waitSupply(t *testing.T, want, before string, d time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		e, ok := s.next(t, time.Until(deadline))
		if !ok {
			t.Fatalf("no supply event of total %s within %s", want, d)
		}
		if e.Name != "supply" {
			continue
		}
		switch got := supplyTotal(t, e.Data); got {
		case want:
			return e.at
		case before:
		default:
			t.Fatalf("a supply event of total %s: neither the supply before the burn (%s) nor after it (%s)", got, before, want)
		}
	}
}

// TestEventsThroughCacheTier runs the chart's nginx config in front of a
// running edge (its supply polled every supplyPoll from the in-process
// simulator) and proves for /api/events: the current value of every event
// at once on connecting (nothing held back), the stream's headers (CORS,
// no-store, no content coding even to a client that asks for one), a
// change published after connecting delivered within a bound, heartbeats
// passed on, Last-Event-ID passed to the edge, never an answer from the
// cache (each request reaches the edge), the tier's stream cap; and
// measures ledger to client: burns on the simulated ledger, each received
// through nginx as a supply event with the new total (p50, p99 logged).
func TestEventsThroughCacheTier(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the events test burns on the ledger for about a minute")
	}
	// Heartbeats every 300 ms: the supply is published every poll, so a
	// 15 s heartbeat would never be due.
	tier := startLiveTier(t, []string{"EDGE_EVENT_HEARTBEAT=300ms"})
	u := tier.cache + "/api/events"

	s := openStream(t, u, http.Header{"Origin": {"https://dashboard.example"}, "Accept-Encoding": {"gzip, br"}})
	var last received
	ok := t.Run("headers, and the current value of every event at once", func(t *testing.T) {
		h := s.resp.Header
		for k, want := range map[string]string{
			"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store",
			"Access-Control-Allow-Origin": "*", "Content-Encoding": "", "X-Cache-Status": "",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("%s: %q, want %q", k, got, want)
			}
		}
		if s.resp.StatusCode != http.StatusOK || h.Get("X-Request-Id") == "" {
			t.Fatalf("status %d, X-Request-Id %q", s.resp.StatusCode, h.Get("X-Request-Id"))
		}
		seen := map[string]bool{}
		for _, name := range []string{"supply", "price", "market", "holders"} {
			for !seen[name] {
				// The edge sends them in one write: through an unbuffered
				// tier they come within moments, not at the next change.
				e, ok := s.next(t, 5*time.Second)
				if !ok {
					t.Fatalf("after %s: events %v, no %s", time.Since(s.opened).Round(time.Millisecond), seen, name)
				}
				seen[e.Name] = true
				last = e
			}
		}
		if s.retry.Load() <= 0 {
			t.Error("no retry field before the events")
		}
		t.Logf("supply, price, market and holders within %s of connecting", last.at.Sub(s.opened).Round(time.Millisecond))
	})

	ok = ok && t.Run("a change after connecting, and heartbeats", func(t *testing.T) {
		before, _ := tier.ledger.sim.RPC.Supply(eventsMint)
		want := tier.ledger.burn(t, 1_000_000)
		burnt := time.Now()
		got := s.waitSupply(t, want, strconv.FormatUint(before, 10), burnBound)
		t.Logf("a burn after connecting received in %s", got.Sub(burnt).Round(time.Millisecond))
		for deadline := time.Now().Add(10 * time.Second); s.comments.Load() < 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d heartbeats through nginx in 10 s with EDGE_EVENT_HEARTBEAT=300ms", s.comments.Load())
			}
		}
	})

	ok = ok && t.Run("Last-Event-ID reaches the edge: the stream resumes after it", func(t *testing.T) {
		from, err := strconv.ParseInt(last.ID, 10, 64)
		if err != nil {
			t.Fatalf("event id %q: %v", last.ID, err)
		}
		r := openStream(t, u, http.Header{"Last-Event-ID": {last.ID}})
		// A client from scratch gets the four domains again, the oldest
		// first; a resumed one the replica's current status first (its
		// id is the figure's before it), then only what came after its
		// id: here the burn's supply.
		for i := 0; ; i++ {
			e, ok := r.next(t, burnBound)
			if !ok {
				t.Fatal("no supply event after the resumed id (the burn's)")
			}
			id, err := strconv.ParseInt(e.ID, 10, 64)
			if i == 0 && e.Name == "status" && err == nil {
				continue
			}
			if err != nil || id <= from {
				t.Fatalf("resumed after %d, got %s %s: an event at or before it", from, e.ID, e.Name)
			}
			if e.Name == "supply" {
				break
			}
		}
	})

	ok = ok && t.Run("never answered from the cache, never held behind another request", func(t *testing.T) {
		// Two requests open at once: a cache's lock on the key would hold
		// the second until the first ends (proxy_cache_lock), a cache
		// would answer it from the first.
		n := tier.counter.count("/api/events")
		var open []*eventStream
		for i := range 2 {
			r := openStream(t, u, nil)
			if e, ok := r.next(t, 3*time.Second); !ok || e.Name == "" || r.resp.Header.Get("X-Cache-Status") != "" {
				t.Fatalf("request %d (%d open): an event within 3 s %v, X-Cache-Status %q", i+1, len(open), ok, r.resp.Header.Get("X-Cache-Status"))
			}
			open = append(open, r)
		}
		if got := tier.counter.count("/api/events") - n; got != 2 {
			t.Fatalf("two requests of /api/events through nginx reached the edge %d times, want 2", got)
		}
		for _, r := range open {
			r.cancel()
		}
	})

	_ = ok && t.Run("ledger to client", func(t *testing.T) {
		var took []time.Duration
		for i := range burns {
			// Burns at random moments, not in step with anything.
			time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
			before, _ := tier.ledger.sim.RPC.Supply(eventsMint)
			want := tier.ledger.burn(t, uint64(1_000+i))
			burnt := time.Now()
			got := s.waitSupply(t, want, strconv.FormatUint(before, 10), burnBound)
			took = append(took, got.Sub(burnt))
		}
		slices.Sort(took)
		p50, p99 := quantile(took, 0.50), quantile(took, 0.99)
		t.Logf("ledger to client through the nginx tier, %d burns, SUPPLY_REFRESH=%s (the subscription pushes): p50 %s, p99 %s, min %s, max %s",
			len(took), supplyPoll, p50.Round(time.Millisecond), p99.Round(time.Millisecond),
			took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	})
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// TestEventsStreamCap: past cache.nginx.events.maxStreams streams in one
// pod, the tier answers 503 too_many_streams, JSON with CORS and no-store
// (a browser's EventSource then fails for good and the portal polls),
// while the open stream keeps flowing and the API's other paths answer.
func TestEventsStreamCap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs nginx in front of a running edge")
	}
	nginx := findNginx(t)
	edge := startStandalone(t)
	cache := startNginx(t, nginx, strings.TrimPrefix(edge.url, "http://"), "cache.nginx.events.maxStreams=1")
	first := openStream(t, cache+"/api/events", nil)
	if _, ok := first.next(t, 10*time.Second); !ok || first.resp.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d, no event", first.resp.StatusCode)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := fetchWith(c, cache+"/api/events", http.Header{"Origin": {"https://dashboard.example"}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Code   string `json:"code"`
			Status int    `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || r.status != http.StatusServiceUnavailable || body.Error.Code != "too_many_streams" ||
		body.Error.Status != 503 {
		t.Fatalf("second stream: %d %q (%v), want 503 too_many_streams", r.status, r.body, err)
	}
	for k, want := range map[string]string{"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store", "Content-Type": "application/json", "Retry-After": "5"} {
		if got := r.header.Get(k); got != want {
			t.Errorf("503 %s: %q, want %q", k, got, want)
		}
	}
	if p, err := fetch(c, cache+"/api/price"); err != nil || p.status != http.StatusOK {
		t.Errorf("GET /api/price with the streams full: %d %v", p.status, err)
	}
	first.cancel()
	<-first.done
	// The slot is free again once nginx sees the client gone.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		again := openStream(t, cache+"/api/events", nil)
		if again.resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first stream closed: %d", again.resp.StatusCode)
		}
		again.cancel()
	}
}

// TestEventsCacheTierStop: a cache pod that stops (its image's stop
// signal, SIGQUIT: nginx's graceful stop) keeps its open streams through
// the graceful window, then closes them after cache.nginx.shutdownTimeout
// and exits, well before the kubelet's kill; the client sees the stream
// end and resumes elsewhere. Without worker_shutdown_timeout nginx would
// wait for the streams to end, up to the edge's maximum age (30 min), and
// the kill would cut them.
func TestEventsCacheTierStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs nginx in front of a running edge")
	}
	nginx := findNginx(t)
	edge := startStandalone(t)
	cache, proc := startNginxProcess(t, nginx, strings.TrimPrefix(edge.url, "http://"), "cache.nginx.shutdownTimeout=2s")
	s := openStream(t, cache+"/api/events", nil)
	if _, ok := s.next(t, 10*time.Second); !ok || s.resp.StatusCode != http.StatusOK {
		t.Fatalf("stream through nginx: %d, no event", s.resp.StatusCode)
	}
	if err := proc.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	quit := time.Now()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream outlived nginx's graceful stop by 20 s (worker_shutdown_timeout 2s)")
	}
	ended := time.Since(quit)
	select {
	case err := <-proc.done:
		if err != nil {
			t.Errorf("nginx's graceful stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nginx did not exit after its streams were closed")
	}
	// Not cut at once: the graceful window held it open (the bound is the
	// setting, and a stop is not sooner than asked).
	if ended < 1500*time.Millisecond {
		t.Errorf("the stream ended %s after SIGQUIT, before worker_shutdown_timeout (2s)", ended)
	}
	t.Logf("the stream ended %s after SIGQUIT with cache.nginx.shutdownTimeout=2s", ended.Round(10*time.Millisecond))
}

// TestEventsThroughVarnish: /api/events through Debian's Varnish with its
// default VCL (the CDN trial's): every event at once, heartbeats passed
// on, and two streams open at once each reach the edge (the edge's
// no-store makes the stream a hit-for-miss object: never cached, never
// held behind another request). docs/cdn.md says what a CDN needs.
func TestEventsThroughVarnish(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Varnish in front of a running edge")
	}
	varnishd := findVarnishd(t)
	edge := startStandalone(t, "EDGE_EVENT_HEARTBEAT=300ms")
	counter := startCountingProxy(t, edge.url)
	cdn, _ := startVarnish(t, varnishd, counter.addr)
	var open []*eventStream
	for i := range 2 {
		s := openStream(t, cdn+"/api/events", http.Header{"Accept-Encoding": {"gzip"}})
		if s.resp.StatusCode != http.StatusOK || s.resp.Header.Get("Content-Encoding") != "" ||
			s.resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("stream %d through Varnish: %d, Content-Encoding %q, Access-Control-Allow-Origin %q", i+1, s.resp.StatusCode,
				s.resp.Header.Get("Content-Encoding"), s.resp.Header.Get("Access-Control-Allow-Origin"))
		}
		seen := map[string]bool{}
		for !seen["supply"] || !seen["price"] || !seen["market"] {
			e, ok := s.next(t, 5*time.Second)
			if !ok {
				t.Fatalf("stream %d (%d open) through Varnish: events %v within 5 s, want supply, price and market at once", i+1, len(open), seen)
			}
			seen[e.Name] = true
		}
		open = append(open, s)
	}
	if n := counter.count("/api/events"); n != 2 {
		t.Errorf("two streams through Varnish reached the edge %d times, want 2", n)
	}
	for deadline := time.Now().Add(10 * time.Second); open[0].comments.Load() < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d heartbeats through Varnish in 10 s with EDGE_EVENT_HEARTBEAT=300ms", open[0].comments.Load())
		}
	}
}
