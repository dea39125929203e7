package edge

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestBodyWarnings: every body carries the warnings of the documents whose
// figures it shows, each as that document's own body serves it: /api/price
// the market document's; /api/holders the holders document's;
// /api/market, /api/market-data and the page those of market, supply and
// holders, in that order. A held price and a holders count the second
// source disagrees with, both written without their warnings (the edge
// adds them from the cross-checks, once), and the supply's
// mint_authority_active.
func TestBodyWarnings(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	m := edgetest.Market()
	m.CrossCheck = priceCheck(contract.PriceHeld)
	h.write(contract.DomainMarket, m, 30e9)
	d := edgetest.Holders()
	d.CrossCheck = &contract.HoldersCheck{Verdict: contract.HoldersDisagree,
		Primary:      contract.HoldersCount{Method: contract.HoldersMethodGPA, Holders: 18342, Slot: 312345600},
		Secondary:    contract.HoldersCount{Method: contract.HoldersMethodDAS, Holders: 18101, Slot: 312345640},
		SlotDistance: 40, Difference: 241, AllowedChurn: 25,
		Reason:    "the primary (getProgramAccounts) counts 18342 holders, the second source (das) 18101: 241 apart, beyond the 25 allowed",
		CheckedAt: t0.Add(-40 * time.Second)}
	h.write(contract.DomainHolders, d, 30e9)
	h.refresh()

	price, holders := contract.WarnPriceSourcesDisagree, contract.WarnHoldersSourcesDisagree
	supply := edgetest.Supply().Warnings[0].Code
	for path, want := range map[string][]string{
		view.PathPrice:       {price},
		view.PathMarketPairs: {price},
		view.PathHolders:     {holders},
		view.PathMarket:      {price, supply, holders},
		view.PathMarketData:  {price, supply, holders},
	} {
		rec := h.do(http.MethodGet, path)
		var b struct{ Warnings []contract.Warning }
		if err := json.Unmarshal(rec.Body.Bytes(), &b); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("%s: %d %v", path, rec.Code, err)
		}
		var codes []string
		for _, w := range b.Warnings {
			codes = append(codes, w.Code)
			switch w.Code {
			case price:
				if w.Message != m.CrossCheck.Reason {
					t.Errorf("%s: %s %q, want the price cross-check's reason", path, w.Code, w.Message)
				}
			case holders:
				if w.Message != d.CrossCheck.Reason {
					t.Errorf("%s: %s %q, want the holders cross-check's reason", path, w.Code, w.Message)
				}
			}
		}
		if !slices.Equal(codes, want) {
			t.Errorf("%s: warnings %q, want %q", path, codes, want)
		}
	}
	page := h.do(http.MethodGet, "/").Body.String()
	for _, code := range []string{price, supply, holders} {
		if n := strings.Count(page, "<code>"+code+"</code>"); n != 1 {
			t.Errorf("the page shows %s %d times, want once", code, n)
		}
	}
}
