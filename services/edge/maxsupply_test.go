package edge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestMaxSupplyNotDisclosed: a token whose issuer discloses no maximum
// supply gets no invented one: /api/max-supply is 404 not_disclosed, every
// maximum supply field and every FDV is null, and nothing else changes.
func TestMaxSupplyNotDisclosed(t *testing.T) {
	h := newHarnessOf(t, edgetest.TokenMaxNotDisclosed(), nil)
	h.writeAll()
	h.write(contract.DomainSupply, edgetest.SupplyMaxNotDisclosed(), 30e9)
	h.refresh()

	rec := h.do(http.MethodGet, PathMaxSupply)
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusNotFound ||
		e.Error.Code != codeNotDisclosed || !strings.Contains(e.Error.Message, "discloses no maximum supply") {
		t.Errorf("max-supply: %d %s", rec.Code, rec.Body)
	}

	nulls := map[string][]string{
		PathSupply:          {"max_supply", "max_supply_raw"},
		PathCoinGeckoSupply: {"max_supply", "max_supply_raw"},
		PathMarket:          {"max_supply", "max_supply_raw", "fdv_usd"},
		PathMarketData:      {"valuation.fdv_usd", "supply.max", "supply.max_raw"},
	}
	for path, fields := range nulls {
		rec := h.do(http.MethodGet, path)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		for _, f := range fields {
			v, ok := lookup(body, f)
			if !ok || v != nil {
				t.Errorf("%s: %s = %v (present %v), want null", path, f, v, ok)
			}
		}
	}
	// The market cap does not depend on the maximum supply.
	var m map[string]any
	_ = json.Unmarshal(h.do(http.MethodGet, PathMarket).Body.Bytes(), &m)
	if m["market_cap_usd"] == nil {
		t.Error("market_cap_usd is null")
	}
	if st := h.statusBody(); st.Status != statusOK {
		t.Errorf("status %s %v: a maximum supply not disclosed is not a problem", st.Status, st.Problems)
	}
}

func (h *harness) statusBody() statusBody {
	h.t.Helper()
	rec := h.do(http.MethodGet, PathStatus)
	var b statusBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		h.t.Fatalf("status: %v %s", err, rec.Body)
	}
	return b
}

// lookup follows a dotted path in a decoded JSON object.
func lookup(body map[string]any, path string) (any, bool) {
	var v any = body
	for _, k := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
