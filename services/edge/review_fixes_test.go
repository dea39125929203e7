package edge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestLastModifiedMovesWithTheBody: when a body changes without newer
// data (the stale flag flips), Last-Modified moves forward, so a client
// revalidating by date alone gets the new body, not a 304.
func TestLastModifiedMovesWithTheBody(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	fresh := h.do(http.MethodGet, PathCoinGeckoSupply)
	lm := fresh.Header().Get("Last-Modified")
	if lm == "" {
		t.Fatal("no Last-Modified")
	}
	h.srv.rerender() // same body: the date stays
	if got := h.do(http.MethodGet, PathCoinGeckoSupply).Header().Get("Last-Modified"); got != lm {
		t.Errorf("unchanged body, Last-Modified %s -> %s", lm, got)
	}
	h.clock.Add(20 * time.Minute) // supply is past its stale-after (15 min)
	h.srv.rerender()
	stale := h.do(http.MethodGet, PathCoinGeckoSupply, "If-Modified-Since", lm)
	if stale.Code != http.StatusOK || !strings.Contains(stale.Body.String(), `"stale":true`) {
		t.Fatalf("If-Modified-Since with the old date: %d %s", stale.Code, stale.Body)
	}
	newLM, _ := http.ParseTime(stale.Header().Get("Last-Modified"))
	oldLM, _ := http.ParseTime(lm)
	if !newLM.After(oldLM) {
		t.Errorf("Last-Modified %s did not move past %s", newLM, oldLM)
	}
	if rec := h.do(http.MethodGet, PathCoinGeckoSupply, "If-Modified-Since", stale.Header().Get("Last-Modified")); rec.Code != http.StatusNotModified {
		t.Errorf("revalidation with the new date: %d", rec.Code)
	}
}

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

// TestEchoedMessagesCarryNoURL: a status record's message is shown to the
// public; whatever a collector wrote, no URL (where keys live) goes out,
// even when this process does not know the secret.
func TestEchoedMessagesCarryNoURL(t *testing.T) {
	h := newHarness(t, nil)
	st := edgetest.Unsupported(t0)
	run := st.Runs[contract.DomainHolders]
	run.Error = `Post "https://mainnet.helius-rpc.com/?api-key=SECRETKEY": getProgramAccounts disabled`
	st.Runs[contract.DomainHolders] = run
	if err := h.store.WriteStatus(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	for _, p := range []string{PathHolders, PathStatus} {
		rec := h.do(http.MethodGet, p)
		if strings.Contains(rec.Body.String(), "SECRETKEY") || strings.Contains(rec.Body.String(), "helius-rpc.com") {
			t.Errorf("%s leaks the URL: %s", p, rec.Body)
		}
	}
	if rec := h.do(http.MethodGet, PathHolders); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "holders_unavailable") {
		t.Errorf("holders: %d %s", rec.Code, rec.Body)
	}
}

// TestCirculatingMustEqualTotal: a supply document that breaks disclosure
// rule 1 is refused, never served.
func TestCirculatingMustEqualTotal(t *testing.T) {
	h := newHarness(t, nil)
	s := edgetest.Supply()
	s.CirculatingRaw = "1"
	h.write(contract.DomainSupply, s, time.Second)
	h.refresh()
	if rec := h.do(http.MethodGet, PathCirculatingSupply); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("circulating with a bad document: %d %s", rec.Code, rec.Body)
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

// TestMethodNotAllowedKeepsItsRoute: a 405 is counted under the route it
// hit; a 405-like request on an unknown path stays "unmatched".
func TestMethodNotAllowedKeepsItsRoute(t *testing.T) {
	h := newHarness(t, nil)
	h.do(http.MethodPost, PathPrice)
	h.do(http.MethodPost, "/api/nope")
	want := strings.NewReader(`
# HELP tokendata_edge_http_requests_total ` + helpOf(t, h, "tokendata_edge_http_requests_total") + `
# TYPE tokendata_edge_http_requests_total counter
tokendata_edge_http_requests_total{code="404",method="OTHER",route="unmatched"} 1
tokendata_edge_http_requests_total{code="405",method="OTHER",route="/api/price"} 1
`)
	if err := testutil.GatherAndCompare(h.reg, want, "tokendata_edge_http_requests_total"); err != nil {
		t.Error(err)
	}
}

func helpOf(t *testing.T, h *harness, name string) string {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetHelp()
		}
	}
	t.Fatalf("no metric %s", name)
	return ""
}
