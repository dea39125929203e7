package edge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/view"
)

// TestLastModifiedMovesWithTheBody: when a body changes without newer
// data (the stale flag flips), Last-Modified moves forward, so a client
// revalidating by date alone gets the new body, not a 304.
func TestLastModifiedMovesWithTheBody(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	fresh := h.do(http.MethodGet, view.PathCoinGeckoSupply)
	lm := fresh.Header().Get("Last-Modified")
	if lm == "" {
		t.Fatal("no Last-Modified")
	}
	h.srv.rerender() // same body: the date stays
	if got := h.do(http.MethodGet, view.PathCoinGeckoSupply).Header().Get("Last-Modified"); got != lm {
		t.Errorf("unchanged body, Last-Modified %s -> %s", lm, got)
	}
	h.clock.Add(20 * time.Minute) // supply is past its stale-after (15 min)
	h.srv.rerender()
	stale := h.do(http.MethodGet, view.PathCoinGeckoSupply, "If-Modified-Since", lm)
	if stale.Code != http.StatusOK || !strings.Contains(stale.Body.String(), `"stale":true`) {
		t.Fatalf("If-Modified-Since with the old date: %d %s", stale.Code, stale.Body)
	}
	newLM, _ := http.ParseTime(stale.Header().Get("Last-Modified"))
	oldLM, _ := http.ParseTime(lm)
	if !newLM.After(oldLM) {
		t.Errorf("Last-Modified %s did not move past %s", newLM, oldLM)
	}
	if rec := h.do(http.MethodGet, view.PathCoinGeckoSupply, "If-Modified-Since", stale.Header().Get("Last-Modified")); rec.Code != http.StatusNotModified {
		t.Errorf("revalidation with the new date: %d", rec.Code)
	}
}
