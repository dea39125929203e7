package edge

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// BenchmarkServe measures the request path through the real engine (every
// middleware on) for a text, a small JSON and the largest JSON endpoint,
// without Accept-Encoding (identity) and asking for gzip and for br as
// browsers do. Each request writes into a fresh header map, as net/http
// gives every request.
func BenchmarkServe(b *testing.B) {
	h := newHarness(b, nil)
	h.writeAll()
	h.refresh()
	for _, enc := range []struct{ name, accept string }{
		{"identity", ""}, {"gzip", "gzip"}, {"br", "gzip, deflate, br, zstd"},
	} {
		for _, p := range []string{view.PathTotalSupply, view.PathPrice, view.PathMarketData} {
			b.Run(enc.name+p, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, p, nil)
				if enc.accept != "" {
					req.Header.Set("Accept-Encoding", enc.accept)
				}
				b.ReportAllocs()
				for b.Loop() {
					w := &discardWriter{h: http.Header{}}
					h.srv.Handler().ServeHTTP(w, req)
				}
			})
		}
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// BenchmarkMinimal is the ceiling: a bare Gin engine writing a constant
// body of the same size as /api/market-data.
func BenchmarkMinimal(b *testing.B) {
	h := newHarness(b, nil)
	h.writeAll()
	h.refresh()
	body := h.srv.mirror.View().Routes[view.RouteMarketData].Body
	e := gin.New()
	e.GET(view.PathMarketData, func(c *gin.Context) { c.Data(http.StatusOK, answer.ContentJSON, body) })
	req := httptest.NewRequest(http.MethodGet, view.PathMarketData, nil)
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		e.ServeHTTP(w, req)
	}
}

// BenchmarkServerLimits measures what the public server's limits cost a
// request over a real loopback connection: the same engine behind a bare
// http.Server ("bare") and behind the edge's own server ("limits":
// counting listener and connection, read, write and idle deadlines).
// Keep-alive clients, as the cache tier is. Compare with
// go test -bench ServerLimits -count 10 | benchstat.
func BenchmarkServerLimits(b *testing.B) {
	h := newHarness(b, nil)
	h.writeAll()
	h.refresh()
	for _, name := range []string{"bare", "limits"} {
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var (
				srv *http.Server
				l   net.Listener
			)
			if name == "limits" {
				s := h.srv.apiServer(ln)
				srv, l = s.Srv, s.Listener
			} else {
				srv, l = &http.Server{Handler: h.srv.Handler(), ReadHeaderTimeout: 5 * time.Second}, ln
			}
			go func() { _ = srv.Serve(l) }()
			defer func() { _ = srv.Close() }()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			url := "http://" + ln.Addr().String() + view.PathPrice
			b.ReportAllocs()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		})
	}
}

// TestCacheHitAllocatesNothing: a cache hit (identity, gzip, br, HEAD,
// 304) allocates nothing of its own through the whole engine. The header
// map is the one allocation left, and it is net/http's: a fresh one per
// request, which grows as the dozen headers of an answer go in (4
// allocations, BenchmarkServe) and which a handler cannot size; here it is
// reused, cleared, so that only the request path is counted.
func TestCacheHitAllocatesNothing(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage counters and the race detector allocate")
	}
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	etag := h.do(http.MethodGet, view.PathMarketData, "Accept-Encoding", "gzip").Header().Get("Etag")
	for _, c := range []struct {
		name, method, path string
		hdr                []string
	}{
		{"identity", http.MethodGet, view.PathMarketData, nil},
		{"text", http.MethodGet, view.PathTotalSupply, nil},
		{"gzip", http.MethodGet, view.PathMarketData, []string{"Accept-Encoding", "gzip"}},
		{"br", http.MethodGet, view.PathPrice, []string{"Accept-Encoding", "gzip, deflate, br, zstd"}},
		{"head", http.MethodHead, view.PathMarketData, []string{"Accept-Encoding", "br"}},
		{"304", http.MethodGet, view.PathMarketData, []string{"Accept-Encoding", "gzip", "If-None-Match", etag}},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		w := &discardWriter{h: make(http.Header, 32)}
		serve := func() {
			clear(w.h)
			h.srv.Handler().ServeHTTP(w, req)
		}
		serve()
		if want := map[bool]int{true: http.StatusNotModified, false: http.StatusOK}[c.name == "304"]; w.code != want {
			t.Fatalf("%s: %d, want %d", c.name, w.code, want)
		}
		if n := testing.AllocsPerRun(200, serve); n != 0 {
			t.Errorf("%s %s: %v allocations per request", c.name, c.path, n)
		}
	}
}

// BenchmarkRender measures a render of every route: "changed" compresses
// every body (as when everything changed; the market domain alone changes
// four), "unchanged" re-renders the same state (a stale flag flips
// elsewhere) and keeps every compressed body. "new-market-supply" and
// "stale-flip" are the two renders of a second in make bench's boundary
// row: new market and supply documents (the price moved), then the
// instant their stale-after is crossed; each compresses the bodies made
// of them again.
func BenchmarkRender(b *testing.B) {
	h := newHarness(b, nil)
	h.writeAll()
	h.refresh()
	v := h.srv.mirror.View()
	for _, name := range []string{"changed", "unchanged"} {
		b.Run(name, func(b *testing.B) {
			prev := v
			if name == "changed" {
				prev = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				h.srv.bodies.Render(v.State, prev, t0)
			}
		})
	}
	m := edgetest.Market()
	p := decimal.New(123456, -10)
	m.PriceUSD = &p
	h.write(contract.DomainMarket, m, 0)
	h.write(contract.DomainSupply, edgetest.Supply(), 0)
	h.refresh()
	moved := h.srv.mirror.View()
	b.Run("new-market-supply", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.srv.bodies.Render(moved.State, v, h.clock.Now())
		}
	})
	if moved.NextChange.IsZero() {
		b.Fatal("no stale-after ahead of the new documents")
	}
	b.Run("stale-flip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.srv.bodies.Render(snapshot.Expire(moved.State, moved.NextChange), moved, moved.NextChange)
		}
	})
}
