package dexsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testMint = "TDDmint1111111111111111111111111111111111111"

// startServer starts a Server for t and returns it with a client whose idle
// connections are closed at cleanup.
func startServer(t *testing.T) (*Server, *http.Client) {
	t.Helper()
	s := New()
	if _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get fetches url and returns status and body; it fails t on a transport error.
func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp.StatusCode, b
}

// serve answers one request in process (no socket), for loops over seeds.
func serve(s *Server, path string) (int, []byte) {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.Bytes()
}

func pairsPath(mint string) string { return "/token-pairs/v1/solana/" + mint }
func poolsPath(mint string) string {
	return GeckoTerminalPrefix + "/networks/solana/tokens/" + mint + "/pools"
}

func fixture(t *testing.T, name string) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, b)
	}
	return v
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return fmt.Sprintf("%T", v)
}

// shapeRules say which documented fields may be missing or null. Paths look
// like "[].priceChange.m5" ("[]" is any array element, "*" any key).
type shapeRules struct {
	optional, nullable map[string]bool
}

func (r shapeRules) has(set map[string]bool, path string) bool {
	if set[path] {
		return true
	}
	if i := strings.LastIndex(path, "."); i >= 0 && set[path[:i]+".*"] {
		return true
	}
	return false
}

// checkShape compares got's shape (field names, JSON types, nesting) to the
// documented example want: no field outside the documentation, no documented
// field missing unless optional, every type as documented (null only where
// nullable).
func checkShape(t *testing.T, path string, got, want any, r shapeRules) {
	t.Helper()
	if got == nil {
		if want != nil && !r.has(r.nullable, path) {
			t.Errorf("%s: null, documented as %s", path, kind(want))
		}
		return
	}
	if want == nil {
		if !r.has(r.nullable, path) {
			t.Errorf("%s: %s, documented as null", path, kind(got))
		}
		return
	}
	if kind(got) != kind(want) {
		t.Errorf("%s: %s, documented as %s", path, kind(got), kind(want))
		return
	}
	switch g := got.(type) {
	case map[string]any:
		w := want.(map[string]any)
		for k, v := range g {
			wv, ok := w[k]
			if !ok {
				t.Errorf("%s.%s: field not in the documented shape", path, k)
				continue
			}
			checkShape(t, path+"."+k, v, wv, r)
		}
		for k := range w {
			if _, ok := g[k]; !ok && !r.has(r.optional, path+"."+k) {
				t.Errorf("%s.%s: documented field missing", path, k)
			}
		}
	case []any:
		w := want.([]any)
		if len(w) == 0 {
			return
		}
		for _, e := range g {
			checkShape(t, path+"[]", e, w[0], r)
		}
	case json.Number:
		if strings.ContainsAny(string(g), "eE") {
			t.Errorf("%s: number %s in exponent form", path, g)
		}
	}
}

var plainDecimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// wireTruth applies the contract's market rule to a served DexScreener body,
// independently of Market.Truth.
type wireTruth struct {
	indexed    bool
	selected   string
	priceUSD   *big.Rat
	liquidity  *big.Rat
	volumeH24  *big.Rat
	buysH24    int
	sellsH24   int
	kept       []string
	usable     []string
	pairPrices map[string]*big.Rat
}

type wirePair struct {
	ChainID     string `json:"chainId"`
	PairAddress string `json:"pairAddress"`
	BaseToken   struct {
		Address string `json:"address"`
	} `json:"baseToken"`
	QuoteToken struct {
		Address string `json:"address"`
	} `json:"quoteToken"`
	PriceNative string  `json:"priceNative"`
	PriceUSD    *string `json:"priceUsd"`
	Liquidity   *struct {
		USD json.Number `json:"usd"`
	} `json:"liquidity"`
	Volume map[string]json.Number `json:"volume"`
	Txns   map[string]struct {
		Buys  int `json:"buys"`
		Sells int `json:"sells"`
	} `json:"txns"`
}

func rat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("not a decimal: %q", s)
	}
	return r
}

func ruleFromWire(t *testing.T, body []byte, mint string, official []string) wireTruth {
	t.Helper()
	var pairs []wirePair
	if err := json.Unmarshal(body, &pairs); err != nil {
		t.Fatalf("decode pairs: %v", err)
	}
	isOfficial := map[string]bool{}
	for _, a := range official {
		isOfficial[a] = true
	}
	w := wireTruth{liquidity: new(big.Rat), volumeH24: new(big.Rat), pairPrices: map[string]*big.Rat{}}
	var bestLiq *big.Rat
	for _, p := range pairs {
		if p.ChainID != "solana" || (p.BaseToken.Address != mint && p.QuoteToken.Address != mint) {
			continue
		}
		w.kept = append(w.kept, p.PairAddress)
		liq := new(big.Rat)
		if p.Liquidity != nil {
			liq = rat(t, string(p.Liquidity.USD))
		}
		w.liquidity.Add(w.liquidity, liq)
		w.volumeH24.Add(w.volumeH24, rat(t, string(p.Volume["h24"])))
		w.buysH24 += p.Txns["h24"].Buys
		w.sellsH24 += p.Txns["h24"].Sells
		if p.PriceUSD == nil {
			continue
		}
		price := rat(t, *p.PriceUSD)
		if p.QuoteToken.Address == mint {
			native := rat(t, p.PriceNative)
			if native.Sign() <= 0 {
				continue
			}
			price.Quo(price, native)
		}
		if price.Sign() <= 0 {
			continue
		}
		w.usable = append(w.usable, p.PairAddress)
		w.pairPrices[p.PairAddress] = price
		better := bestLiq == nil || liq.Cmp(bestLiq) > 0
		if bestLiq != nil && liq.Cmp(bestLiq) == 0 {
			switch {
			case isOfficial[p.PairAddress] != isOfficial[w.selected]:
				better = isOfficial[p.PairAddress]
			default:
				better = p.PairAddress < w.selected
			}
		}
		if better {
			bestLiq, w.selected, w.priceUSD = liq, p.PairAddress, price
		}
	}
	w.indexed = len(w.kept) > 0
	return w
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func f64(t *testing.T, r *big.Rat) float64 {
	t.Helper()
	f, _ := r.Float64()
	return f
}

func recorder(s *Server, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}
