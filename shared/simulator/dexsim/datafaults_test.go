package dexsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

var dataKinds = []fault.Kind{fault.HostileHTML, fault.HostileHuge, fault.HostileControl, fault.HostileNumbers, fault.RealWorldOdd}

// TestDataFaults serves each data fault on both routes: the market's pairs
// come first, the fault's pairs after them with their documented values,
// and the fault applies to the faulted requests only.
func TestDataFaults(t *testing.T) {
	for _, kind := range dataKinds {
		t.Run(string(kind), func(t *testing.T) {
			s := New()
			m := s.LoadScenario(testMint, 9)
			extras := DataFaultPairs(kind, m)
			if len(extras) == 0 {
				t.Fatal("no pair")
			}

			s.Faults().Inject(RouteDexScreener, fault.Fault{Kind: kind, Times: 1})
			st, body := serve(s, pairsPath(testMint))
			if st != http.StatusOK {
				t.Fatalf("dexscreener status %d", st)
			}
			var ds []struct {
				PairAddress string `json:"pairAddress"`
				PriceUSD    string `json:"priceUsd"`
				QuoteToken  struct{ Address, Name string }
			}
			if err := json.Unmarshal(body, &ds); err != nil {
				t.Fatal(err)
			}
			if len(ds) != len(m.Pairs)+len(extras) {
				t.Fatalf("%d pairs served, want %d + %d", len(ds), len(m.Pairs), len(extras))
			}
			for i, e := range extras {
				got := ds[len(m.Pairs)+i]
				if got.PairAddress != e.Address || got.PriceUSD != e.PriceUSD {
					t.Errorf("pair %d: %s %s, want %s %s", i, got.PairAddress, got.PriceUSD, e.Address, e.PriceUSD)
				}
			}

			s.Faults().Inject(RouteGeckoTerminal, fault.Fault{Kind: kind, Times: 1})
			st, body = serve(s, poolsPath(testMint))
			if st != http.StatusOK {
				t.Fatalf("geckoterminal status %d", st)
			}
			var gt struct {
				Data []struct {
					Attributes struct{ Address string }
				}
				Included []struct{ ID string }
			}
			if err := json.Unmarshal(body, &gt); err != nil {
				t.Fatal(err)
			}
			solana := len(m.Pairs) - 1 // the scenario has one pair on ethereum
			if len(gt.Data) != solana+len(extras) || len(gt.Included) != 2*len(extras) {
				t.Fatalf("%d pools, %d included", len(gt.Data), len(gt.Included))
			}
			if gt.Data[solana].Attributes.Address != extras[0].Address {
				t.Errorf("first extra pool %s", gt.Data[solana].Attributes.Address)
			}

			// Times: 1: the next answers are the market alone.
			if _, body := serve(s, pairsPath(testMint)); bytes.Contains(body, []byte(extras[0].Address)) {
				t.Error("dexscreener: fault pairs after the fault")
			}
			if _, body := serve(s, poolsPath(testMint)); bytes.Contains(body, []byte(extras[0].Address)) {
				t.Error("geckoterminal: fault pairs after the fault")
			}
		})
	}
}

func TestDataFaultValues(t *testing.T) {
	s := New()
	m := s.LoadScenario(testMint, 9)
	top := 0.0
	for _, p := range m.Pairs {
		if p.Liquidity != nil && p.ChainID() == ChainSolana {
			top = max(top, p.Liquidity.USD)
		}
	}
	body := func(kind fault.Kind, route, path string) []byte {
		s.Faults().Inject(route, fault.Fault{Kind: kind, Times: 1})
		_, b := serve(s, path)
		return b
	}

	html := DataFaultPairs(fault.HostileHTML, m)
	if html[0].Address != HostilePairAddress || html[1].Other.Address != HostileTokenAddress || html[0].Liquidity.USD <= top {
		t.Errorf("html pairs %+v", html[:2])
	}
	if b := body(fault.HostileHTML, RouteDexScreener, pairsPath(testMint)); !bytes.Contains(b, []byte(`"url":"javascript:alert(document.domain)"`)) {
		t.Error("no javascript: link")
	}

	huge := body(fault.HostileHuge, RouteDexScreener, pairsPath(testMint))
	if len(huge) < HugeNameBytes || len(huge) > 4<<20 {
		t.Errorf("huge answer of %d bytes", len(huge))
	}

	for route, path := range map[string]string{RouteDexScreener: pairsPath(testMint), RouteGeckoTerminal: poolsPath(testMint)} {
		b := body(fault.HostileControl, route, path)
		if !bytes.Contains(b, []byte("Bad\xff\xfeBytes")) || !bytes.Contains(b, []byte(`\u0000`)) || !bytes.Contains(b, []byte("\u202e")) {
			t.Errorf("%s: control answer lacks invalid UTF-8, NUL or U+202E", route)
		}
	}

	nums := body(fault.HostileNumbers, RouteDexScreener, pairsPath(testMint))
	for _, want := range []string{`"priceUsd":"9e39"`, `"usd":900000000000000000000`, `"buys":9223372036854775807`} {
		if !bytes.Contains(nums, []byte(want)) {
			t.Errorf("numbers answer lacks %s", want)
		}
	}

	odd := body(fault.RealWorldOdd, RouteDexScreener, pairsPath(testMint))
	for _, want := range []string{`"priceUsd":"` + OddPriceUSD + `"`, `"url":"Https://`, `.png?key=ab12cd\u0026size=lg"`, `"newFieldObject"`, `"name":"Token Data Demo  "`} {
		if !bytes.Contains(odd, []byte(want)) {
			t.Errorf("odd answer lacks %s", want)
		}
	}
	extras := DataFaultPairs(fault.RealWorldOdd, m)
	if extras[1].Liquidity == nil || extras[1].Liquidity.USD != 0 || extras[2].Liquidity != nil {
		t.Errorf("odd liquidity %+v %+v", extras[1].Liquidity, extras[2].Liquidity)
	}
	gt := body(fault.RealWorldOdd, RouteGeckoTerminal, poolsPath(testMint))
	if !bytes.Contains(gt, []byte(`"reserve_in_usd":"0"`)) || !bytes.Contains(gt, []byte(`"reserve_in_usd":null`)) || !strings.Contains(string(gt), `"new_field"`) {
		t.Error("odd pools lack a zero reserve, a null reserve or an unknown field")
	}
}
