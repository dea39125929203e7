package edge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
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

	rec := h.do(http.MethodGet, view.PathMaxSupply)
	var e answer.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusNotFound ||
		e.Error.Code != answer.CodeNotDisclosed || !strings.Contains(e.Error.Message, "discloses no maximum supply") {
		t.Errorf("max-supply: %d %s", rec.Code, rec.Body)
	}

	nulls := map[string][]string{
		view.PathSupply:          {"max_supply", "max_supply_raw"},
		view.PathCoinGeckoSupply: {"max_supply", "max_supply_raw"},
		view.PathMarket:          {"max_supply", "max_supply_raw", "fdv_usd"},
		view.PathMarketData:      {"valuation.fdv_usd", "supply.max", "supply.max_raw"},
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
	_ = json.Unmarshal(h.do(http.MethodGet, view.PathMarket).Body.Bytes(), &m)
	if m["market_cap_usd"] == nil {
		t.Error("market_cap_usd is null")
	}
	if st := h.statusBody(); st.Status != view.StatusOK {
		t.Errorf("status %s %v: a maximum supply not disclosed is not a problem", st.Status, st.Problems)
	}
}

// TestTotalAboveMaxDegrades: a configured maximum below the on-chain total
// makes /api/status degraded, with total_above_max named in the supply
// check and in the problems; whether the supply document carries the
// warning, or only the edge's own token file is below the total.
func TestTotalAboveMaxDegrades(t *testing.T) {
	above := edgetest.Supply() // 999,999,999.123456 tokens
	above.Warnings = append(above.Warnings, contract.Warning{Code: contract.WarnTotalAboveMax,
		Message: "The on-chain total supply 999999999.123456 is above the disclosed maximum supply 999999999."})
	lowMax := edgetest.Token()
	lowMax.MaxSupply = "999999999"

	cases := []struct {
		name   string
		token  config.Token
		supply contract.Supply
	}{
		{"warning in the document", lowMax, above},
		{"edge's token file below the total", lowMax, edgetest.Supply()},
		{"collector's token file below the total", edgetest.Token(), above},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessOf(t, tc.token, nil)
			h.writeAll()
			h.write(contract.DomainSupply, tc.supply, 30e9)
			h.refresh()
			st := h.statusBody()
			if st.Status != view.StatusDegraded {
				t.Errorf("status %s, want degraded", st.Status)
			}
			ws := st.Checks.Domains[string(contract.DomainSupply)].Warnings
			if len(ws) != 1 || ws[0].Code != contract.WarnTotalAboveMax || !strings.Contains(ws[0].Message, "999999999.123456") {
				t.Errorf("supply check warnings %+v", ws)
			}
			if len(st.Problems) != 1 || !strings.HasPrefix(st.Problems[0], "supply: total_above_max: ") {
				t.Errorf("problems %q", st.Problems)
			}
		})
	}

	// At or below the maximum: no warning, status ok, and the field absent.
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	if st := h.statusBody(); st.Status != view.StatusOK || st.Checks.Domains[string(contract.DomainSupply)].Warnings != nil {
		t.Errorf("below the maximum: %s %+v", st.Status, st.Checks.Domains[string(contract.DomainSupply)])
	}
	if body := h.do(http.MethodGet, view.PathStatus).Body.String(); strings.Contains(body, `"warnings"`) {
		t.Errorf("status names warnings: %s", body)
	}
}

func (h *harness) statusBody() view.StatusBody {
	h.t.Helper()
	rec := h.do(http.MethodGet, view.PathStatus)
	var b view.StatusBody
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
