package edge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// wrongMarket is the fixture's market with a price nobody quoted.
func wrongMarket() contract.Market {
	m := edgetest.Market()
	p := decimalPtr("123456.789")
	m.PriceUSD, m.Selected.PriceUSD = p, p
	return m
}

// TestFutureDatedDocumentRefused: a document dated far ahead of the edge's
// clock is refused (it would look fresh forever), the good one stays, and
// the refusal shows in /api/status.
func TestFutureDatedDocumentRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	before := h.do(http.MethodGet, view.PathPrice).Body.String()

	for _, ahead := range []time.Duration{contract.MaxClockSkew + 5*time.Second, 74 * 365 * 24 * time.Hour} {
		h.write(contract.DomainMarket, wrongMarket(), -ahead)
		h.refresh()
		if got := h.do(http.MethodGet, view.PathPrice).Body.String(); got != before {
			t.Fatalf("a document dated %s ahead replaced good data: %s", ahead, got)
		}
		rej := h.srv.statusReportNow().Checks.Domains["market"].Rejected
		if rej == nil || !strings.Contains(*rej, "ahead of this reader's clock") {
			t.Fatalf("status does not say why the document dated %s ahead was refused: %v", ahead, rej)
		}
	}
}

// TestBadWriteDoesNotOutliveNextGood: a wrong document dated ahead of the
// clock, but within the allowed skew, is served until the collector writes
// again; the next good write replaces it although it is dated earlier.
func TestBadWriteDoesNotOutliveNextGood(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	good := h.do(http.MethodGet, view.PathPrice).Body.String()

	h.write(contract.DomainMarket, wrongMarket(), -50*time.Second) // within the skew
	h.refresh()
	if got := h.do(http.MethodGet, view.PathPrice).Body.String(); !strings.Contains(got, `"price_usd":123456.789`) {
		t.Fatalf("the store's current document was not taken: %s", got)
	}
	h.clock.Add(10 * time.Second)
	h.write(contract.DomainMarket, edgetest.Market(), 40*time.Second) // as writeAll did, 30 s before the first clock
	h.refresh()
	if got := h.do(http.MethodGet, view.PathPrice).Body.String(); got != good {
		t.Fatalf("the next good write did not replace the bad one:\n%s\nwant\n%s", got, good)
	}
}
