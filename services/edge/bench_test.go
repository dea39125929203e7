package edge

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
