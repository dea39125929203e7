package dexsim

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// usdPrices reads each pool's USD price of its base token from both
// routes: DexScreener's priceUsd and GeckoTerminal's base_token_price_usd.
func usdPrices(t *testing.T, s *Server) (ds, gt map[string]*big.Rat) {
	t.Helper()
	ds, gt = map[string]*big.Rat{}, map[string]*big.Rat{}
	_, b := serve(s, pairsPath(testMint))
	var pairs []struct {
		ChainID     string `json:"chainId"`
		PairAddress string `json:"pairAddress"`
		PriceUSD    string `json:"priceUsd"`
	}
	if err := json.Unmarshal(b, &pairs); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if r, ok := new(big.Rat).SetString(p.PriceUSD); ok && p.ChainID == ChainSolana {
			ds[p.PairAddress] = r
		}
	}
	_, b = serve(s, poolsPath(testMint))
	var doc struct {
		Data []struct {
			Attributes struct {
				Address string  `json:"address"`
				Price   *string `json:"base_token_price_usd"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Data {
		if p.Attributes.Price == nil {
			continue
		}
		if r, ok := new(big.Rat).SetString(*p.Attributes.Price); ok {
			gt[p.Attributes.Address] = r
		}
	}
	return ds, gt
}

// TestPriceSkew: a skew on one route multiplies every USD price it serves
// by the factor, exactly; the other route and the model stay as they were.
func TestPriceSkew(t *testing.T) {
	s := New()
	s.LoadScenario(testMint, 9)
	ds0, gt0 := usdPrices(t, s)
	if len(ds0) < 2 || len(gt0) < 2 {
		t.Fatalf("scenario has %d and %d priced pools", len(ds0), len(gt0))
	}
	for _, tc := range []struct {
		route  string
		skew   string
		factor *big.Rat
	}{
		{RouteGeckoTerminal, "5", big.NewRat(105, 100)},
		{RouteDexScreener, "-40", big.NewRat(60, 100)},
	} {
		s.Faults().Inject(tc.route, fault.Fault{Kind: fault.PriceSkew, Skew: tc.skew, Times: 1})
		ds, gt := usdPrices(t, s)
		skewedSide, other, base, otherBase := gt, ds, gt0, ds0
		if tc.route == RouteDexScreener {
			skewedSide, other, base, otherBase = ds, gt, ds0, gt0
		}
		for addr, p := range base {
			want := new(big.Rat).Mul(p, tc.factor)
			if got := skewedSide[addr]; got == nil || got.Cmp(want) != 0 {
				t.Errorf("%s skew %s%%: pool %s priced %v, want %v", tc.route, tc.skew, addr, got, want.FloatString(20))
			}
		}
		for addr, p := range otherBase {
			if got := other[addr]; got == nil || got.Cmp(p) != 0 {
				t.Errorf("%s skew moved the other route's pool %s: %v, want %v", tc.route, addr, got, p)
			}
		}
		// Times 1: the next answer is the model's again.
		ds, gt = usdPrices(t, s)
		for addr, p := range base {
			if got := map[bool]map[string]*big.Rat{true: ds, false: gt}[tc.route == RouteDexScreener][addr]; got.Cmp(p) != 0 {
				t.Errorf("%s: the skew outlived its one request on pool %s", tc.route, addr)
			}
		}
	}
}

// TestDown: an aggregator that is down resets every connection.
func TestDown(t *testing.T) {
	s, c := startServer(t)
	s.LoadScenario(testMint, 9)
	spec, err := fault.ParseSpec("dexscreener=down")
	if err != nil {
		t.Fatal(err)
	}
	s.Faults().Inject(spec.Route, spec.Fault)
	for range 2 {
		if resp, err := c.Get(s.DexScreenerURL() + pairsPath(testMint)); err == nil {
			_ = resp.Body.Close()
			t.Fatalf("down: got a response %d", resp.StatusCode)
		}
	}
	if code, _ := get(t, c, s.GeckoTerminalURL()+"/networks/solana/tokens/"+testMint+"/pools"); code != 200 {
		t.Errorf("geckoterminal answered %d while only dexscreener is down", code)
	}
}
