package edge

import (
	"net/http"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestCirculatingMustEqualTotal: a supply document that breaks disclosure
// rule 1 is refused, never served.
func TestCirculatingMustEqualTotal(t *testing.T) {
	h := newHarness(t, nil)
	s := edgetest.Supply()
	s.CirculatingRaw = "1"
	h.write(contract.DomainSupply, s, time.Second)
	h.refresh()
	if rec := h.do(http.MethodGet, view.PathCirculatingSupply); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("circulating with a bad document: %d %s", rec.Code, rec.Body)
	}
}
