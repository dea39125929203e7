package edge

import (
	"net/http"
	"testing"
)

// TestHeadOfUnknownPath: HEAD carries the same headers as GET, JSON
// content type included, and no body.
func TestHeadOfUnknownPath(t *testing.T) {
	h := newHarness(t, nil)
	for _, p := range []string{"/api/nope", "/API/PRICE", "/api/price/"} {
		get, head := h.do(http.MethodGet, p), h.do(http.MethodHead, p)
		if head.Code != http.StatusNotFound || head.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d, body %q", p, head.Code, head.Body)
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Access-Control-Allow-Origin", "Cache-Control"} {
			if head.Header().Get(k) != get.Header().Get(k) {
				t.Errorf("HEAD %s: %s %q, GET has %q", p, k, head.Header().Get(k), get.Header().Get(k))
			}
		}
	}
}
