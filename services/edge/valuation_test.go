package edge

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestValuationFromThePriceBasis: market cap and FDV are rounded once from
// the exact product of the aggregator's figures, at the significant digits
// the market document carries, never at those the stored price shows after
// JSON dropped its trailing zeros. Token as the quote: 1.0001 / 81.30 has
// 4 digits, 0.01230 (stored 0.0123); × 987654321.123456789 is exactly
// 12149484.459..., published 12150000 (the rounded price gave 12100000).
// Token as the base at 1.50 (stored 1.5): 1481481481.685... at 3 digits is
// 1480000000 (2 digits would give 1500000000).
func TestValuationFromThePriceBasis(t *testing.T) {
	supply := edgetest.Supply()
	supply.Decimals = 9
	supply.TotalRaw, supply.CirculatingRaw, supply.MaxRaw = "987654321123456789", "987654321123456789", "1000000000000000000"

	quote := edgetest.Market()
	quote.PriceUSD = decimalPtr("0.0123")
	quote.PriceBasis = &contract.PriceBasis{USD: decimal.RequireFromString("1.0001"), Native: decimalPtr("81.30"), Digits: 4}

	base := edgetest.Market()
	base.PriceUSD = decimalPtr("1.5")
	base.PriceBasis = &contract.PriceBasis{USD: decimal.RequireFromString("1.50"), Digits: 3}

	// A basis that does not give the document's price is not trusted:
	// the stored price's own digits rule, as for a document without one.
	forged := edgetest.Market()
	forged.PriceUSD = decimalPtr("1.5")
	forged.PriceBasis = &contract.PriceBasis{USD: decimal.RequireFromString("1.51"), Digits: 3}

	cases := []struct {
		name             string
		market           contract.Market
		price, mcap, fdv string
	}{
		{"token is the quote", quote, "0.01230", "12150000", "12300000"},
		{"token is the base, last digit 0", base, "1.50", "1480000000", "1500000000"},
		{"basis that does not give the price", forged, "1.5", "1500000000", "1500000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.writeAll()
			h.write(contract.DomainSupply, supply, 30e9)
			h.write(contract.DomainMarket, tc.market, 30e9)
			h.refresh()

			var m map[string]json.RawMessage
			rec := h.do(http.MethodGet, view.PathMarket)
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("market: %d %s", rec.Code, rec.Body)
			}
			for k, want := range map[string]string{"price_usd": tc.price, "market_cap_usd": tc.mcap, "fdv_usd": tc.fdv} {
				if got := string(m[k]); got != want {
					t.Errorf("/api/market %s = %s, want %s", k, got, want)
				}
			}
			var md struct {
				Price     struct{ USD json.RawMessage }
				Valuation struct {
					MarketCapUSD json.RawMessage `json:"market_cap_usd"`
					FDVUSD       json.RawMessage `json:"fdv_usd"`
				}
			}
			if err := json.Unmarshal(h.do(http.MethodGet, view.PathMarketData).Body.Bytes(), &md); err != nil {
				t.Fatal(err)
			}
			if string(md.Price.USD) != tc.price || string(md.Valuation.MarketCapUSD) != tc.mcap || string(md.Valuation.FDVUSD) != tc.fdv {
				t.Errorf("/api/market-data price %s cap %s fdv %s, want %s %s %s", md.Price.USD,
					md.Valuation.MarketCapUSD, md.Valuation.FDVUSD, tc.price, tc.mcap, tc.fdv)
			}
			var p map[string]json.RawMessage
			_ = json.Unmarshal(h.do(http.MethodGet, view.PathPrice).Body.Bytes(), &p)
			if string(p["price_usd"]) != tc.price {
				t.Errorf("/api/price price_usd = %s, want %s", p["price_usd"], tc.price)
			}
		})
	}
}
