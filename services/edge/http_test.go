package edge

import (
	"net/http"
	"strings"
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

// TestRequestIDEchoed: a well-formed X-Request-Id of the client comes
// back; a malformed one does not; none is made up on the response.
func TestRequestIDEchoed(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	if got := h.do(http.MethodGet, PathPrice, "X-Request-Id", "ingress-42.a_b").Header().Get("X-Request-Id"); got != "ingress-42.a_b" {
		t.Errorf("echoed id = %q", got)
	}
	if got := h.do(http.MethodGet, "/api/nope", "X-Request-Id", "ingress-43").Header().Get("X-Request-Id"); got != "ingress-43" {
		t.Errorf("echoed id on a 404 = %q", got)
	}
	for _, bad := range []string{"has space", strings.Repeat("x", 65), "semi;colon"} {
		if got := h.do(http.MethodGet, PathPrice, "X-Request-Id", bad).Header().Get("X-Request-Id"); got != "" {
			t.Errorf("malformed id %q echoed as %q", bad, got)
		}
	}
}
