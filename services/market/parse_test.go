package market

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// simFixtures are the simulator's recorded wire shapes.
var simFixtures = filepath.Join("..", "..", "shared", "simulator", "dexsim", "testdata")

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(simFixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scenarioBodies renders a scenario from both aggregators.
func scenarioBodies(t testing.TB, seed uint64) (ds, gt []byte) {
	sim := dexsim.New()
	sim.LoadScenario(mint, seed)
	return simBody(t, sim, "/token-pairs/v1/solana/"+mint),
		simBody(t, sim, dexsim.GeckoTerminalPrefix+"/networks/solana/tokens/"+mint+"/pools")
}

func TestParseDexScreenerFixture(t *testing.T) {
	pairs, err := parseDexScreener(fixture(t, "dexscreener_token_pairs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 {
		t.Fatalf("%d pairs", len(pairs))
	}
	p := pairs[0]
	if p.Address != "7qbRF6YsyGGEiAbtWYTeMyJW6H2fHqUtVp3yZRv7Xh6e" || p.Dex != "raydium" || p.Base.Symbol != "EXM" ||
		!eqDec(p.PriceUSD, "0.00001234") || !eqDec(p.PriceNative, "0.00000008317") || !eqDec(p.LiquidityUSD, "153422.07") ||
		!p.Volume.H24.Equal(dec("96345.12")) || p.Txns.H24.Buys != 1203 || !eqDec(p.Change.H24, "-12.75") ||
		p.CreatedAt == nil || p.CreatedAt.UnixMilli() != 1718834806000 || len(p.Labels) != 1 {
		t.Errorf("pair 0: %+v", p)
	}
	if q := pairs[1]; q.LiquidityUSD != nil || q.Change.M5 != nil || !eqDec(q.Change.H24, "4.1") {
		t.Errorf("pair 1 (no liquidity, partial priceChange): %+v", q)
	}
}

func TestParseGeckoTerminalFixture(t *testing.T) {
	pairs, err := parseGeckoTerminal(fixture(t, "geckoterminal_token_pools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 1 {
		t.Fatalf("%d pools", len(pairs))
	}
	p := pairs[0]
	// The recorded example's mint, MintExample1…, is not base58 (it has
	// an "l"): the pool is listed with its address withheld.
	if p.Address != "7qbRF6YsyGGEiAbtWYTeMyJW6H2fHqUtVp3yZRv7Xh6e" || p.Dex != "raydium" || p.Chain != "solana" ||
		p.Base.Address != "" || p.Reject != ReasonInvalidAddress || p.Base.Symbol != "EXM" || p.Quote.Symbol != "SOL" ||
		!eqDec(p.PriceUSD, "0.0000123412345678901") || !eqDec(p.PriceNative, "0.00000008317") ||
		!eqDec(p.LiquidityUSD, "153422.0712") || !p.Volume.H24.Equal(dec("96345.1234567")) || p.Txns.H1.Sells != 37 ||
		!eqDec(p.Change.M5, "0.12") || p.CreatedAt == nil || p.CreatedAt.Unix() != 1718834806 {
		t.Errorf("pool: %+v", p)
	}
}

func TestParseGeckoTerminalIncluded(t *testing.T) {
	body := `{"data":[{"id":"solana_` + pairA + `","type":"pool","attributes":{"address":"` + pairA + `","name":"X / Y 0.25%","base_token_price_usd":"2","base_token_price_quote_token":"4","reserve_in_usd":"10","volume_usd":{"h24":"1"},"transactions":{"h24":{"buys":1,"sells":2}}},
	"relationships":{"base_token":{"data":{"id":"solana_` + pairB + `","type":"token"}},"quote_token":{"data":{"id":"solana_` + pairC + `","type":"token"}},"dex":{"data":{"id":"orca","type":"dex"}}}}],
	"included":[{"id":"solana_` + pairB + `","type":"token","attributes":{"address":"` + pairB + `","name":"Bee","symbol":"BEE"}}]}`
	pairs, err := parseGeckoTerminal([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p := pairs[0]
	if p.Base != (contract.TokenRef{Address: pairB, Name: "Bee", Symbol: "BEE"}) || p.Quote != (contract.TokenRef{Address: pairC, Symbol: "Y"}) || p.Dex != "orca" || p.Reject != "" {
		t.Errorf("tokens %+v %+v %s", p.Base, p.Quote, p.Dex)
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, body, want string
		gecko            bool
	}{
		{"object", `{"pairs":[]}`, "not a JSON array", false},
		{"truncated", `[{"chainId":"solana","pairAddress":"x"`, "truncated", false},
		{"trailing", `[] []`, "malformed", false},
		{"no address", `[{"chainId":"solana"}]`, "pairAddress", false},
		{"price text", `[{"chainId":"solana","pairAddress":"x","priceUsd":"abc"}]`, "priceUsd", false},
		{"price NaN", `[{"chainId":"solana","pairAddress":"x","priceUsd":"NaN"}]`, "priceUsd", false},
		{"price Infinity", `[{"chainId":"solana","pairAddress":"x","priceUsd":"Infinity"}]`, "priceUsd", false},
		{"huge exponent", `[{"chainId":"solana","pairAddress":"x","volume":{"h24":1e999999}}]`, "volume.h24", false},
		{"tiny exponent", `[{"chainId":"solana","pairAddress":"x","priceUsd":"1e-900"}]`, "priceUsd", false},
		{"fractional count", `[{"chainId":"solana","pairAddress":"x","txns":{"m5":{"buys":1.5}}}]`, "txns.m5.buys", false},
		{"bool number", `[{"chainId":"solana","pairAddress":"x","volume":{"h1":true}}]`, "", false},
		{"negative liquidity", `[{"chainId":"solana","pairAddress":"x","liquidity":{"usd":-1}}]`, "liquidity.usd", false},
		{"gecko array", `[]`, "JSON:API", true},
		{"gecko negative reserve", `{"data":[{"id":"solana_x","attributes":{"address":"x","reserve_in_usd":"-3"}}]}`, "reserve_in_usd", true},
		{"gecko bad time", `{"data":[{"id":"solana_x","attributes":{"address":"x","pool_created_at":"yesterday"}}]}`, "pool_created_at", true},
		{"gecko no address", `{"data":[{"id":"eth_x","attributes":{}}]}`, "address", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.gecko {
				_, err = parseGeckoTerminal([]byte(tc.body))
			} else {
				_, err = parseDexScreener([]byte(tc.body))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// checkParsed asserts what every accepted body must give: no negative
// figure, and a document that passes its own checks, encodes and
// publishes only validated text and figures (checkPublished).
func checkParsed(t *testing.T, pairs []wirePair) {
	for _, p := range pairs {
		for _, d := range []*decimal.Decimal{p.PriceUSD, p.PriceNative, p.LiquidityUSD, &p.Volume.M5, &p.Volume.H1, &p.Volume.H6, &p.Volume.H24} {
			if d != nil && d.Sign() < 0 {
				t.Fatalf("negative figure accepted: %+v", p)
			}
		}
		for _, x := range []contract.Txns{p.Txns.M5, p.Txns.H1, p.Txns.H6, p.Txns.H24} {
			if x.Buys < 0 || x.Sells < 0 {
				t.Fatalf("negative count accepted: %+v", p)
			}
		}
	}
	in := buildInput{Mint: "MintExample1111111111111111111111111111111", Official: []string{"7qbRF6YsyGGEiAbtWYTeMyJW6H2fHqUtVp3yZRv7Xh6e"}, MoveShare: dec("0.5")}
	for _, m := range []string{in.Mint, mint} {
		in.Mint = m
		doc, err := buildMarket(pairs, in)
		if err != nil {
			t.Fatalf("a validated answer gave no document: %v", err) // no sum can overflow
		}
		if err := checkDocument(doc); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
		checkPublished(t, doc)
	}
}

// faultBody renders the answer of route under data fault kind, around
// one honest pair.
func faultBody(t testing.TB, route string, kind fault.Kind) []byte {
	sim := dexsim.New()
	sim.SetMarket(mint, dexsim.Market{Token: token, Pairs: []dexsim.Pair{pair(pairA, dexsim.Base, dexsim.USDC, "0.001", "0.001", 1000)}})
	sim.Faults().Inject(route, fault.Fault{Kind: kind})
	if route == dexsim.RouteDexScreener {
		return simBody(t, sim, "/token-pairs/v1/solana/"+mint)
	}
	return simBody(t, sim, dexsim.GeckoTerminalPrefix+"/networks/solana/tokens/"+mint+"/pools")
}

// seedKinds are the data faults whose answers seed the fuzz targets (not
// the MiB-size one: a seed that large slows every mutation).
var seedKinds = []fault.Kind{fault.HostileHTML, fault.HostileControl, fault.HostileNumbers, fault.RealWorldOdd}

func FuzzParseDexScreener(f *testing.F) {
	f.Add(fixture(f, "dexscreener_token_pairs.json"))
	ds, _ := scenarioBodies(f, 42)
	f.Add(ds)
	for _, k := range seedKinds {
		f.Add(faultBody(f, dexsim.RouteDexScreener, k))
	}
	for _, s := range []string{`[]`, `null`, ` null `, `[{"chainId":"solana","pairAddress":"p","priceUsd":null,"liquidity":{}}]`,
		`[{"chainId":"solana","pairAddress":"p","baseToken":{"address":"MintExample1111111111111111111111111111111"},"priceUsd":"1e-7","priceNative":"0","volume":{"h24":12.5}}]`,
		`[{"chainId":"solana","pairAddress":"p","quoteToken":{"address":"MintExample1111111111111111111111111111111"},"priceUsd":"3","priceNative":"7","txns":{"h24":{"buys":9223372036854775807,"sells":1}}}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pairs, err := parseDexScreener(body)
		if err != nil {
			return
		}
		checkParsed(t, pairs)
	})
}

func FuzzParseGeckoTerminal(f *testing.F) {
	f.Add(fixture(f, "geckoterminal_token_pools.json"))
	f.Add(fixture(f, "geckoterminal_not_found.json"))
	_, gt := scenarioBodies(f, 42)
	f.Add(gt)
	for _, k := range seedKinds {
		f.Add(faultBody(f, dexsim.RouteGeckoTerminal, k))
	}
	for _, s := range []string{`{"data":[]}`, `{"data":null}`, `{}`,
		`{"data":[{"id":"solana_p","attributes":{"address":"p","base_token_price_usd":"2","base_token_price_quote_token":"0.5","reserve_in_usd":null}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pairs, err := parseGeckoTerminal(body)
		if err != nil {
			return
		}
		checkParsed(t, pairs)
	})
}

// BenchmarkParseAndBuild measures one poll's work on a scenario answer
// (7 pairs), without the network.
func BenchmarkParseAndBuild(b *testing.B) {
	ds, _ := scenarioBodies(b, 42)
	in := buildInput{Mint: mint, MoveShare: dec("0.5")}
	b.ReportAllocs()
	b.SetBytes(int64(len(ds)))
	for b.Loop() {
		pairs, err := parseDexScreener(ds)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := buildMarket(pairs, in); err != nil {
			b.Fatal(err)
		}
	}
}
