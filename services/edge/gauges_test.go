package edge

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// scrapeToken GETs /metrics from the ops handler over real HTTP and
// returns the tokendata_token_* samples by series ("name" or
// `name{domain="x"}`).
func scrapeToken(t *testing.T, h *harness) map[string]float64 {
	t.Helper()
	ts := httptest.NewServer(ops.Handler(h.reg, nil, false))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "tokendata_token_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func num64(t *testing.T, n *json.Number) float64 {
	t.Helper()
	if n == nil {
		t.Fatal("the body has no such figure")
	}
	v, err := strconv.ParseFloat(string(*n), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTokenMetricsEqualState: over the full fixture, every token gauge
// equals the figure the API publishes from the same state (/api/market),
// and each domain's updated timestamp is its document's updated_at.
func TestTokenMetricsEqualState(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	// Half the maximum minted, so that market cap and FDV differ (the
	// fixture's total rounds to its maximum at the price's precision).
	sp := edgetest.Supply()
	sp.TotalRaw, sp.CirculatingRaw = "500000000123456", "500000000123456"
	h.write(contract.DomainSupply, sp, 30*time.Second)
	h.refresh()
	rec := h.do(http.MethodGet, view.PathMarket)
	if rec.Code != http.StatusOK {
		t.Fatalf("/api/market: %d %s", rec.Code, rec.Body)
	}
	var b view.MarketBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	st := h.srv.mirror.View().State
	holders := float64(st.Holders().Holders)
	want := map[string]float64{
		"tokendata_token_price_usd":      num64(t, b.PriceUSD),
		"tokendata_token_market_cap_usd": num64(t, b.MarketCapUSD),
		"tokendata_token_fdv_usd":        num64(t, b.FDVUSD),
		"tokendata_token_liquidity_usd":  num64(t, b.LiquidityUSD),
		"tokendata_token_volume_24h_usd": num64(t, b.Volume24hUSD),
		"tokendata_token_supply_total":   num64(t, b.TotalSupply),
		"tokendata_token_holders":        holders,
	}
	if p := st.Market().PriceUSD.InexactFloat64(); want["tokendata_token_price_usd"] != p {
		t.Errorf("body price %v, state price %v", want["tokendata_token_price_usd"], p)
	}
	if want["tokendata_token_market_cap_usd"] == want["tokendata_token_fdv_usd"] {
		t.Fatal("the fixture's market cap equals its FDV: the test could not tell them apart")
	}
	updated := h.clock.Now().Add(-30 * time.Second) // writeAll's updated_at
	for _, d := range contract.Domains {
		if !st.Docs[d].Env.UpdatedAt.Equal(updated) {
			t.Fatalf("%s updated_at %v, want %v", d, st.Docs[d].Env.UpdatedAt, updated)
		}
		want[`tokendata_token_updated_timestamp_seconds{domain="`+string(d)+`"}`] = float64(updated.Unix())
	}
	got := scrapeToken(t, h)
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s not exported", k)
		case g != w || w == 0:
			t.Errorf("%s = %v, want %v (nonzero)", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("token series %v, want exactly %v", got, want)
	}
}

// TestTokenMetricsAbsent: a figure the edge does not hold is not exported
// (no fake 0): with no documents none is; with a token not indexed and no
// disclosed maximum supply, only supply, holders and the timestamps are.
func TestTokenMetricsAbsent(t *testing.T) {
	h := newHarness(t, nil)
	h.refresh()
	if got := scrapeToken(t, h); len(got) != 0 {
		t.Errorf("no document, yet token series %v", got)
	}

	h = newHarnessOf(t, edgetest.TokenMaxNotDisclosed(), nil)
	h.write(contract.DomainSupply, edgetest.SupplyMaxNotDisclosed(), time.Minute)
	h.write(contract.DomainMarket, edgetest.NotIndexed(), time.Minute)
	h.write(contract.DomainHolders, edgetest.Holders(), time.Minute)
	h.refresh()
	got := scrapeToken(t, h)
	want := []string{"tokendata_token_supply_total", "tokendata_token_holders",
		`tokendata_token_updated_timestamp_seconds{domain="supply"}`,
		`tokendata_token_updated_timestamp_seconds{domain="market"}`,
		`tokendata_token_updated_timestamp_seconds{domain="holders"}`}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not exported", k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("token series %v, want only %v", got, want)
	}
	if w := float64(h.clock.Now().Add(-time.Minute).Unix()); got[`tokendata_token_updated_timestamp_seconds{domain="market"}`] != w {
		t.Errorf("market timestamp %v, want %v", got[`tokendata_token_updated_timestamp_seconds{domain="market"}`], w)
	}
}
