package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/events"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
	"github.com/tokendata/tokendata/shared/testkit/sse"
)

// liveEdge is an edge serving on a loopback port over a store, on the
// real clock.
type liveEdge struct {
	*harness
	url    string
	cancel context.CancelFunc
	done   chan error
}

// startLive runs an edge on st until the test ends (or stop).
func startLive(t *testing.T, st *store.Store, opts ...harnessOpt) *liveEdge {
	t.Helper()
	opts = append([]harnessOpt{func(cm *config.Common, c *Config, d *Deps) {
		cm.DrainDelay = 0
		d.Now = time.Now
		c.SnapshotPoll = 100 * time.Millisecond
	}}, opts...)
	h := newHarness(t, st, opts...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &liveEdge{harness: h, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- h.srv.RunOn(ctx, ln) }()
	t.Cleanup(e.stop)
	waitFor(t, func() bool { return h.srv.Ready() })
	return e
}

// stop shuts the edge down as SIGTERM does, and waits for it.
func (e *liveEdge) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	if err := <-e.done; err != nil {
		e.t.Errorf("edge: %v", err)
	}
}

// stream is a client of /api/events.
type stream struct {
	resp *http.Response
	*sse.Reader
	events chan sse.Event
	ended  chan error
}

// subscribe opens /api/events at url with Last-Event-ID lastID ("":
// none) and reads it in the background.
func subscribe(t *testing.T, url, lastID string) *stream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+view.PathEvents, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Origin", "https://dashboard.example")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/events: %d", resp.StatusCode)
	}
	s := &stream{resp: resp, Reader: sse.NewReader(resp.Body), events: make(chan sse.Event, 1024), ended: make(chan error, 1)}
	go func() {
		for {
			ev, err := s.Next()
			if err != nil {
				s.ended <- err
				close(s.events)
				return
			}
			s.events <- ev
		}
	}()
	return s
}

// next is the next event, failing after 10 s.
func (s *stream) next(t *testing.T) sse.Event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("the stream ended: %v", <-s.ended)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sse.Event{}
}

// until reads events until one named name whose data contains sub.
func (s *stream) until(t *testing.T, name, sub string) sse.Event {
	t.Helper()
	for {
		if ev := s.next(t); ev.Name == name && strings.Contains(ev.Data, sub) {
			return ev
		}
	}
}

func redisStore(t *testing.T) *store.Store {
	t.Helper()
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.NewRedis(opts), config.DemoMint)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func body(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	return readAll(t, resp.Body)
}

// pricedMarket is the fixture market document with price p.
func pricedMarket(p string) contract.Market {
	m := edgetest.Market()
	d := decimalPtr(p)
	m.PriceUSD, m.Selected.PriceUSD = d, d
	return m
}

// TestEventsStream: a new client gets the current value of every event
// at once, then one event per change, whose data is byte for byte the
// body its endpoint serves; ids never decrease, the figures' increase,
// and the status event's is no figure's ahead (it takes the id of the
// figure published before it); the stream says retry, carries
// CORS and is never stored.
func TestEventsStream(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, st)
	s := subscribe(t, e.url, "")
	for k, want := range map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store",
		"Access-Control-Allow-Origin": "*", "X-Accel-Buffering": "no"} {
		if got := s.resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	seen := map[string]sse.Event{}
	var last, figures uint64
	for len(seen) < len(events.Names) {
		ev := s.next(t)
		id, err := strconv.ParseUint(ev.ID, 10, 64)
		if err != nil || id < last || (id == last && ev.Name != events.NameStatus) {
			t.Fatalf("%s event id %q after %d", ev.Name, ev.ID, last)
		}
		last = id
		if ev.Name != events.NameStatus {
			figures = max(figures, id)
		}
		seen[ev.Name] = ev
	}
	if st, _ := strconv.ParseUint(seen[events.NameStatus].ID, 10, 64); st > figures || st == 0 {
		t.Errorf("status event id %d, want a figure's (at most %d)", st, figures)
	}
	if s.Retry < 1500 || s.Retry > 2500 {
		t.Errorf("retry %d ms, want EDGE_EVENT_RETRY 2 s ± 25 %%", s.Retry)
	}
	for _, ep := range eventPaths {
		if got, want := seen[ep.name].Data, body(t, e.url+ep.path); got != want {
			t.Errorf("%s event:\n%s\nwant %s's body:\n%s", ep.name, got, ep.path, want)
		}
	}
	var status view.StatusBody
	if err := json.Unmarshal([]byte(seen[events.NameStatus].Data), &status); err != nil || status.Status != view.StatusOK {
		t.Errorf("status event: %v %+v", err, status)
	}

	if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket("0.00004321"), time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	price := s.until(t, events.NamePrice, `"price_usd":0.00004321,`)
	if got, want := price.Data, body(t, e.url+view.PathPrice); got != want {
		t.Errorf("price event %s, /api/price %s", got, want)
	}
	if id, _ := strconv.ParseUint(price.ID, 10, 64); id <= last {
		t.Errorf("id %d after %d", id, last)
	}
	s.until(t, events.NameMarket, `"price_usd":0.00004321,`)
	if got := testutil.ToFloat64(e.srv.serveMetricsEvents(events.NamePrice)); got < 2 {
		t.Errorf("events_published_total{event=price} = %v, want 2 or more", got)
	}
}

// TestEventsResumeAcrossADrain: a client on one replica follows the
// price; that replica shuts down (SIGTERM) and ends the stream cleanly;
// prices change while the client is away; it reconnects to another
// replica with Last-Event-ID and gets every price it missed, in order,
// and nothing it had.
func TestEventsResumeAcrossADrain(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	a, b := startLive(t, st), startLive(t, st)
	s := subscribe(t, a.url, "")
	write := func(i int) string {
		p := fmt.Sprintf("0.0000%d1", i)
		if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(p), time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		want := `"price_usd":` + p + `,`
		// Each is served by the replica left before the next one is
		// written: a value the store replaced before any replica read it
		// is no change anyone saw.
		waitFor(t, func() bool { return strings.Contains(body(t, b.url+view.PathPrice), want) })
		return want
	}
	s.until(t, events.NamePrice, write(1))
	// b saw it too before a goes: both replicas follow the store.
	waitFor(t, func() bool { return strings.Contains(body(t, b.url+view.PathPrice), `0.000011`) })
	a.stop()
	select {
	case err := <-s.ended:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the stream of a replica that shut down ended with %v, not a clean end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its replica's shutdown")
	}
	for ev := range s.events {
		_ = ev // what was read before the end
	}
	missed := []string{write(2), write(3), write(4)}
	waitFor(t, func() bool { return strings.Contains(body(t, b.url+view.PathPrice), `0.000041`) })
	r := subscribe(t, b.url, s.LastID)
	for _, want := range missed {
		ev := r.next(t)
		for ev.Name != events.NamePrice {
			if ev.Name == events.NameSupply || ev.Name == events.NameHolders {
				t.Errorf("resumed with %s, which the client had", ev.Name)
			}
			ev = r.next(t)
		}
		if !strings.Contains(ev.Data, want) {
			t.Fatalf("resumed price %s, want %s", ev.Data, want)
		}
	}
}

// rawStream asks url for /api/events on a raw connection with a small
// receive buffer, set before it connects (so that the window it offers
// is small), and reads nothing: the test reads when it wants to.
func rawStream(t *testing.T, url string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, "GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestEventsWholeViewAtOnceKeepsItsClients: a publication larger than
// EDGE_EVENT_MAX_PENDING (every domain in one view: the first one after
// the edge started, or all of them back after an outage) goes whole to a
// client that had taken everything before it, which stays open. Once a
// client that subscribed before the edge's first view was dropped as too
// slow.
func TestEventsWholeViewAtOnceKeepsItsClients(t *testing.T) {
	st := redisStore(t)
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) {
		c.EventMaxPending, c.ReadyGrace = 4096, 0 // ready over the empty store
	})
	s := subscribe(t, e.url, "")
	waitFor(t, func() bool { return e.srv.openStreams() == 1 })
	if err := edgetest.WriteAll(context.Background(), st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Every event up to the last of the view's four, as many bytes as on
	// the wire.
	size, seen := 0, map[string]bool{}
	for len(seen) < 4 {
		ev := s.next(t)
		size += len("id: \nevent: \ndata: \n\n") + len(ev.ID) + len(ev.Name) + len(ev.Data)
		if ev.Name != events.NameStatus {
			seen[ev.Name] = true
		}
	}
	if size <= 4096 {
		t.Fatalf("the view's events are %d bytes, not past the bound of 4096: the test proves nothing", size)
	}
	if open, slow := e.srv.openStreams(), testutil.ToFloat64(e.srv.serveMetricsEnded("slow")); open != 1 || slow != 0 {
		t.Errorf("after a view of %d bytes: %d streams open, %v dropped as slow; want 1 and 0", size, open, slow)
	}
}

// TestEventsSlowSubscriberDropped: a client that reads nothing is dropped
// once its unsent events pass the bound, while a reading client gets
// every change.
func TestEventsSlowSubscriberDropped(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) {
		c.EventMaxPending, c.EventWriteTimeout = 4096, 500*time.Millisecond
	})
	// The slow client never reads past the status line.
	conn := rawStream(t, e.url)
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("slow client's stream: %q %v", line, err)
	}
	fast := subscribe(t, e.url, "")
	dropped := e.srv.serveMetricsEnded("slow")
	// Changes until the slow client is dropped: its socket buffers fill
	// (some kilobytes), then a write waits past the timeout. The next
	// change comes once the reading client has this one, so that it never
	// has more than one change's events (some 1.7 KB) unsent, under the
	// bound however late the edge's writers run on a busy machine.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; testutil.ToFloat64(dropped) < 1; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("a client that reads nothing was not dropped after %d changes (%d streams open; ended: client %v, max_age %v)", i, e.srv.openStreams(),
				testutil.ToFloat64(e.srv.serveMetricsEnded("client")), testutil.ToFloat64(e.srv.serveMetricsEnded("max_age")))
		}
		price := fmt.Sprintf("0.0000%06d", 100000+i)
		if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(price), time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		// The reading client is kept, and has every change.
		fast.until(t, events.NamePrice, `"price_usd":`+strings.TrimRight(price, "0")+`,`)
	}
	waitFor(t, func() bool { return e.srv.openStreams() == 1 })
	if open := e.srv.openStreams(); open != 1 {
		t.Errorf("%d streams open, want the fast one alone", open)
	}
}

// TestEventsPausedSubscriberCatchesUp: a client that stops reading for a
// while, less than the write timeout, fills its socket; its stream waits
// for it on a goroutine of its own, and when it reads again it has every
// event the fast client had, in order, and its stream goes back to the
// fleet's writers and stays open.
func TestEventsPausedSubscriberCatchesUp(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A small bound makes a small send buffer (the edge's socket's is
	// the bound, up to 64 KiB), which about ten changes (some 1.7 KB of
	// events each) fill with rawStream's small receive buffer: the count
	// of changes does not depend on the machine's speed (a bound of 4 MiB
	// took over a thousand changes, 50 s under -race). Each
	// change is published before the next, so that no write finds more
	// than one change's events unsent, and the stream that waits is
	// behind by the two changes below only, well under the bound.
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) {
		c.EventMaxPending, c.EventWriteTimeout = 16<<10, 30*time.Second
	})
	conn := rawStream(t, e.url)
	fast := subscribe(t, e.url, "")
	waitFor(t, func() bool { return e.srv.openStreams() == 2 })
	var last string
	change := func(price string) {
		t.Helper()
		published := e.published()
		if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(price), time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return e.published() > published })
		last = price
	}
	// Changes until the paused client's stream waits for it.
	const most = 200
	started := time.Now()
	i := 0
	for ; e.srv.waitingStreams() < 1; i++ {
		if i == most || e.srv.openStreams() != 2 {
			t.Fatalf("no stream waited for a client that reads nothing, after %d changes (%d open; ended: client %v, slow %v)", i, e.srv.openStreams(),
				testutil.ToFloat64(e.srv.serveMetricsEnded("client")), testutil.ToFloat64(e.srv.serveMetricsEnded("slow")))
		}
		change(fmt.Sprintf("0.0000%06d", 100000+i))
		time.Sleep(10 * time.Millisecond) // the writers' turn
	}
	t.Logf("the stream waited after %d changes (%v)", i, time.Since(started).Round(time.Millisecond))
	// Two more changes while it waits.
	for i := range 2 {
		change(fmt.Sprintf("0.0000%06d", 200000+i))
	}
	want := `"price_usd":` + strings.TrimRight(last, "0") + `,`
	var fastIDs []string
	for {
		ev := fast.next(t)
		fastIDs = append(fastIDs, ev.Name+" "+ev.ID)
		if ev.Name == events.NamePrice && strings.Contains(ev.Data, want) {
			break
		}
	}
	// It reads again: the head, then every event the fast client had.
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	r := sse.NewReader(br)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var pausedIDs []string
	for len(pausedIDs) < len(fastIDs) {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("the paused client's stream after %d of %d events: %v", len(pausedIDs), len(fastIDs), err)
		}
		pausedIDs = append(pausedIDs, ev.Name+" "+ev.ID)
	}
	if strings.Join(pausedIDs, ",") != strings.Join(fastIDs, ",") {
		t.Errorf("the paused client had\n%v\nthe fast one\n%v", pausedIDs, fastIDs)
	}
	waitFor(t, func() bool { return e.srv.waitingStreams() == 0 })
	// Back with the writers: the next change reaches it.
	next := "0.00003000001"
	if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(next), time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("after it caught up: %v", err)
		}
		if ev.Name == events.NamePrice && strings.Contains(ev.Data, `"price_usd":`+next+`,`) {
			break
		}
	}
	if open, slow := e.srv.openStreams(), testutil.ToFloat64(e.srv.serveMetricsEnded("slow")); open != 2 || slow != 0 {
		t.Errorf("%d streams open, %v dropped as slow; want both open, none dropped", open, slow)
	}
}

// TestEventsManyStreamsEveryChange: changes in quick succession, while
// the writers are busy with many streams, reach every stream, in the same
// order: a publication during a round of writes is not missed.
func TestEventsManyStreamsEveryChange(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, st)
	subs := make([]*stream, 300)
	for i := range subs {
		subs[i] = subscribe(t, e.url, "")
	}
	var last string
	for i := range 30 {
		last = fmt.Sprintf("0.0000%06d", 300000+i)
		if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(last), time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%4) * time.Millisecond)
	}
	want := `"price_usd":` + strings.TrimRight(last, "0") + `,`
	var first []string
	for i, s := range subs {
		var got []string
		for {
			ev := s.next(t)
			got = append(got, ev.ID)
			if ev.Name == events.NamePrice && strings.Contains(ev.Data, want) {
				break
			}
		}
		if i == 0 {
			first = got
		} else if strings.Join(got, ",") != strings.Join(first, ",") {
			t.Errorf("stream %d had ids %v, stream 0 %v", i, got, first)
		}
	}
}

// TestEventsStreamCap: past EDGE_MAX_EVENT_STREAMS a stream is refused
// with the API's 503; a cap at or above the connection cap is refused at
// start.
func TestEventsStreamCap(t *testing.T) {
	st := redisStore(t)
	if err := edgetest.WriteAll(context.Background(), st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) { c.MaxEventStreams = 2 })
	subscribe(t, e.url, "")
	subscribe(t, e.url, "")
	resp, err := http.Get(e.url + view.PathEvents)
	if err != nil {
		t.Fatal(err)
	}
	b := readAll(t, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, `"too_many_streams"`) ||
		resp.Header.Get("Retry-After") == "" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("third stream: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	// HEAD gets the stream's headers and no stream; a preflight allows
	// Last-Event-ID, which EventSource sends when it reconnects.
	head := e.do(http.MethodHead, view.PathEvents)
	if head.Code != http.StatusServiceUnavailable { // the two streams above are open
		t.Errorf("HEAD at the cap: %d", head.Code)
	}
	pre := e.do(http.MethodOptions, view.PathEvents, "Origin", "https://dashboard.example",
		"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "last-event-id")
	if pre.Code != http.StatusNoContent || !strings.Contains(pre.Header().Get("Access-Control-Allow-Headers"), "Last-Event-ID") {
		t.Errorf("preflight: %d %v", pre.Code, pre.Header())
	}
	cfg := DefaultConfig()
	cfg.MaxConnections, cfg.MaxEventStreams = 100, 100
	if _, err := resolveConnCap(&cfg); err == nil || !strings.Contains(err.Error(), "EDGE_MAX_EVENT_STREAMS") {
		t.Errorf("streams as many as connections: %v", err)
	}
	cfg.MaxConnections, cfg.MaxEventStreams = 100, 0
	if _, err := resolveConnCap(&cfg); err != nil || cfg.MaxEventStreams != 50 {
		t.Errorf("default: %d streams, %v; want half the cap", cfg.MaxEventStreams, err)
	}
}

// TestEventsHeartbeatAndMaxAge: an idle stream sends its heartbeat
// comment, and ends at its maximum age; the client resumes from its id
// and is sent nothing it had.
func TestEventsHeartbeatAndMaxAge(t *testing.T) {
	st := redisStore(t)
	if err := edgetest.WriteAll(context.Background(), st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) {
		c.EventHeartbeat, c.EventMaxAge = 100*time.Millisecond, 1500*time.Millisecond
	})
	s := subscribe(t, e.url, "")
	for range events.Names {
		s.next(t)
	}
	select {
	case err := <-s.ended:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its maximum age")
	}
	if s.Comments < 3 {
		t.Errorf("%d heartbeats in about 1.5 s at one each 100 ms", s.Comments)
	}
	head := e.do(http.MethodHead, view.PathEvents)
	if head.Code != http.StatusOK || head.Header().Get("Content-Type") != "text/event-stream; charset=utf-8" || head.Body.Len() != 0 {
		t.Errorf("HEAD: %d %v %q", head.Code, head.Header(), head.Body.String())
	}
	r := subscribe(t, e.url, s.LastID)
	select {
	case ev := <-r.events:
		if ev.Name != events.NameStatus { // a status verdict may move; figures may not
			t.Errorf("resumed with %s %s, which the client had", ev.Name, ev.ID)
		}
	case <-time.After(500 * time.Millisecond):
	}
}

// TestEventsNothingBeforeTheFirstRead: before the edge has read the
// store, the feed offers nothing (the start's empty view would give a
// "store: not checked yet" status, which a client connecting to the edge
// as it turns ready would get before the real one); the first read's
// view gives every event, the status of that read among them.
func TestEventsNothingBeforeTheFirstRead(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.srv.offerEvents()
	if first, _, _, err := h.srv.hub.Subscribe(""); err != nil || len(first) != 0 {
		for _, ev := range first {
			t.Errorf("before the first read: %s %s", ev.Name, ev.Data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	h.refresh()
	h.srv.offerEvents()
	first, _, _, err := h.srv.hub.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, ev := range first {
		names[ev.Name] = string(ev.Data)
	}
	if len(names) != len(events.Names) {
		t.Errorf("after the first read: events %v, want one of each of %v", slices.Collect(maps.Keys(names)), events.Names)
	}
	if !strings.Contains(names[events.NameStatus], `"status":"ok"`) {
		t.Errorf("status event after the first read: %s", names[events.NameStatus])
	}
}

// TestEventsGolden: the bytes of the first events a client gets, for the
// golden state.
func TestEventsGolden(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	h.srv.offerEvents()
	first, _, _, err := h.srv.hub.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range first {
		b.Write(ev.Wire())
	}
	checkGolden(t, "events_first", b.String())
}
