package edge

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// BenchmarkServe measures the request path through the real engine (every
// middleware on) for a text, a small JSON and the largest JSON endpoint.
func BenchmarkServe(b *testing.B) {
	h := newHarness(b, nil)
	h.writeAll()
	h.refresh()
	for _, p := range []string{PathTotalSupply, PathPrice, PathMarketData} {
		b.Run(p, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, p, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := &discardWriter{h: http.Header{}}
				h.srv.Handler().ServeHTTP(w, req)
			}
		})
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
	body := h.srv.view.Load().routes[rMarketData].body
	e := gin.New()
	e.GET(PathMarketData, func(c *gin.Context) { c.Data(http.StatusOK, contentJSON, body) })
	req := httptest.NewRequest(http.MethodGet, PathMarketData, nil)
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
			url := "http://" + ln.Addr().String() + PathPrice
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
