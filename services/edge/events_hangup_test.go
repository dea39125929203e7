package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/events"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/testkit/sse"
)

// rawSubscriber is a client of /api/events on a TCP connection of its
// own, which the test closes as it likes.
type rawSubscriber struct {
	conn *net.TCPConn
	*sse.Reader
}

// openRaw asks url for /api/events on a connection of its own and reads
// the answer's head and the stream's first event; nil, and the reason,
// when the answer is not a stream that delivers one.
func openRaw(t *testing.T, url string, extra string) (*rawSubscriber, error) {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return nil, err
	}
	conn := nc.(*net.TCPConn)
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET "+view.PathEvents+" HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"+extra); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	s := &rawSubscriber{conn: conn, Reader: sse.NewReader(resp.Body)}
	ev, err := s.Next()
	if err != nil {
		return nil, fmt.Errorf("no first event: %w", err)
	}
	if !slices.Contains(events.Names, ev.Name) {
		return nil, fmt.Errorf("first event %q", ev.Name)
	}
	_ = conn.SetDeadline(time.Time{})
	return s, nil
}

// published is the number of events the edge published so far.
func (e *liveEdge) published() float64 {
	var n float64
	for _, name := range events.Names {
		n += testutil.ToFloat64(e.srv.serveMetricsEvents(name))
	}
	return n
}

// TestEventsClosedStreamsFreeTheirSlots: with a cap of n streams, n
// clients that close their streams at once (a reconnect storm after a
// network blip), or reset them, free their slots and their connections
// within a second, with no event published and no heartbeat due (the
// fleet of writers would otherwise learn of them at its next write); n
// new clients are then all served.
func TestEventsClosedStreamsFreeTheirSlots(t *testing.T) {
	for _, reset := range []bool{false, true} {
		name := "close"
		if reset {
			name = "reset"
		}
		t.Run(name, func(t *testing.T) {
			st := redisStore(t)
			if err := edgetest.WriteAll(context.Background(), st, time.Now().Add(-10*time.Second)); err != nil {
				t.Fatal(err)
			}
			const n = 6
			e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) {
				// The dead streams and the new ones do not fit under
				// either cap together.
				c.MaxEventStreams, c.MaxConnections = n, n+3
				c.EventHeartbeat = time.Minute
			})
			subs := make([]*rawSubscriber, n)
			for i := range subs {
				s, err := openRaw(t, e.url, "")
				if err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				subs[i] = s
			}
			open := func() (streams, conns float64) {
				return e.metric("tokendata_edge_event_streams_open"), e.metric("tokendata_edge_connections_open")
			}
			if s, c := open(); s != n || c != n {
				t.Fatalf("%v streams and %v connections open, want %d", s, c, n)
			}
			for _, s := range subs {
				if reset {
					_ = s.conn.SetLinger(0) // the close sends a reset
				}
			}
			published := e.published()
			closed := time.Now()
			for _, s := range subs {
				_ = s.conn.Close()
			}
			for {
				s, c := open()
				if s == 0 && c == 0 {
					break
				}
				if time.Since(closed) > time.Second {
					t.Errorf("1 s after their clients closed them, %v streams and %v connections still open (ended: client %v)",
						s, c, testutil.ToFloat64(e.srv.serveMetricsEnded("client")))
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("streams and connections open: 0, %v after the closes", time.Since(closed).Round(time.Millisecond))
			for i := range n {
				if _, err := openRaw(t, e.url, ""); err != nil {
					t.Errorf("new stream %d after the closes: %v", i, err)
				}
			}
			if got := e.published(); got != published {
				t.Errorf("%v events published since the closes: the dead streams may have been found by a write", got-published)
			}
			if got := testutil.ToFloat64(e.srv.serveMetricsEnded("client")); got != n {
				t.Errorf("%v streams ended as client, want %d", got, n)
			}
			if s, _ := open(); s != n {
				t.Errorf("%v streams open, want the %d new ones", s, n)
			}
		})
	}
}

// TestEventsHangUpWhileWaiting: a client that stops reading fills its
// socket, and its stream waits for it on a goroutine of its own; when it
// then shuts its side of the connection, the stream ends as a client's
// at once, not at the write timeout as a slow one.
func TestEventsHangUpWhileWaiting(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A small bound makes a small send buffer (a few changes fill it);
	// each change is published before the next, so that no write finds
	// more than one change's bytes unsent (past the bound: dropped).
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) {
		c.EventMaxPending, c.EventWriteTimeout = 8192, time.Minute
	})
	conn := rawStream(t, e.url).(*net.TCPConn)
	waitFor(t, func() bool { return e.srv.openStreams() == 1 })
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; e.srv.waitingStreams() < 1; i++ {
		if time.Now().After(deadline) || e.srv.openStreams() != 1 {
			t.Fatalf("no stream waited for a client that reads nothing, after %d changes (%d open; ended: client %v, slow %v)", i, e.srv.openStreams(),
				testutil.ToFloat64(e.srv.serveMetricsEnded("client")), testutil.ToFloat64(e.srv.serveMetricsEnded("slow")))
		}
		published := e.published()
		if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(fmt.Sprintf("0.0000%06d", 100000+i)), time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return e.published() > published })
		time.Sleep(10 * time.Millisecond) // the writers' turn
	}
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	waitFor(t, func() bool { return e.srv.openStreams() == 0 && e.srv.waitingStreams() == 0 })
	t.Logf("stream ended %v after the client's close", time.Since(closed).Round(time.Millisecond))
	if c, s := testutil.ToFloat64(e.srv.serveMetricsEnded("client")), testutil.ToFloat64(e.srv.serveMetricsEnded("slow")); c != 1 || s != 0 {
		t.Errorf("ended: client %v, slow %v; want the client's", c, s)
	}
}

// TestEventsBytesAfterTheRequest: bytes a client sends after its request
// (the stream reads none) are not taken for a hang-up: its stream stays
// open and gets the next change; its close then ends it.
func TestEventsBytesAfterTheRequest(t *testing.T) {
	st := redisStore(t)
	ctx := context.Background()
	if err := edgetest.WriteAll(ctx, st, time.Now().Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, st, func(_ *config.Common, c *Config, _ *Deps) { c.EventHeartbeat = time.Minute })
	s, err := openRaw(t, e.url, "GET /api/price HTTP/1.1\r\nHost: x\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(s.conn, "more bytes, unasked\r\n"); err != nil {
		t.Fatal(err)
	}
	price := "0.00004000001"
	if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, pricedMarket(price), time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("the stream of a client that sent more bytes: %v (ended as client: %v)", err, testutil.ToFloat64(e.srv.serveMetricsEnded("client")))
		}
		if ev.Name == events.NamePrice && strings.Contains(ev.Data, `"price_usd":`+price+`,`) {
			break
		}
	}
	if open, ended := e.srv.openStreams(), testutil.ToFloat64(e.srv.serveMetricsEnded("client")); open != 1 || ended != 0 {
		t.Fatalf("%d streams open, %v ended as client; want it open", open, ended)
	}
	_ = s.conn.Close()
	waitFor(t, func() bool { return e.srv.openStreams() == 0 })
}
