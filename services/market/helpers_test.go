package market

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/golden"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// update rewrites the golden files: go test -update.
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mint = config.DemoMint

// Pair addresses (base58 of 32 bytes), in ascending order.
const (
	pairA = "2FDDYMuN9jRdzZ6GGszJWYzFEYtzM4wTGV9XWcwfTvWL"
	pairB = "3BVg6N35GwqNbcs6j2zmeewEqvDWd8qaaEHe4218gb6R"
	pairC = "3MDU63xtQMH5PRmqkPrUMnsDqfGdhxHXStuuM9cxaLBy"
	pairD = "5QdcjUw4yiHqdEqm2wSBoKfabiG6W6fRLNFba6JENwfj"
	pairE = "B2A7GAt6WY6YQs7oKPs8jbXP76vdp79DwrJcCJfkDgsx"
)

var token = dexsim.Token{Address: mint, Name: "Token Data Demo", Symbol: "TDD"}

// setup configures a harness.
type setup struct {
	redis       bool
	official    []string
	moveWarning string
	cfg         *Config
	fallbackOff bool
	maxSupply   string // the token file's max_supply
	// token edits the token file (the price cross-check keys).
	token func(*config.Token)
}

type harness struct {
	t     *testing.T
	sim   *dexsim.Server
	store *store.Store
	reg   *prometheus.Registry
	c     *Collector
}

// testConfig retries fast and never waits on the local rate limits.
func testConfig() Config {
	c := DefaultConfig()
	c.HTTPTimeout, c.RetryAttempts, c.RetryBase = 2*time.Second, 2, time.Millisecond
	c.DexScreenerRPM, c.GeckoTerminalRPM = 60000, 60000
	c.DisableBackfill = true // tests counting GeckoTerminal's requests; backfill_test.go turns it on
	return c
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	sim := dexsim.New()
	if _, err := sim.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	var backend store.Backend
	if s.redis {
		srv := redistest.Start(t)
		opts, err := store.ParseRedisURL(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		backend = store.NewRedis(opts)
	} else {
		backend = store.NewMemory()
	}
	t.Cleanup(func() { _ = backend.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)

	common := config.Common{DexScreenerURL: sim.DexScreenerURL(), GeckoTerminalURL: sim.GeckoTerminalURL()}
	tok := config.Token{Mint: mint, PriceMoveWarning: s.moveWarning, MaxSupply: s.maxSupply}
	for _, a := range s.official {
		tok.OfficialPairs = append(tok.OfficialPairs, config.OfficialPair{Address: a})
	}
	if s.token != nil {
		s.token(&tok)
	}
	cfg := testConfig()
	if s.cfg != nil {
		cfg = *s.cfg
	}
	cfg.DisableFallback = s.fallbackOff
	reg := prometheus.NewRegistry()
	st := store.New(backend, mint)
	c, err := New(common, tok, cfg, collector.Deps{
		Store: st, Metrics: collector.NewMetrics(reg), Registry: reg,
		Log: slog.New(slog.DiscardHandler), HTTPClient: &http.Client{Transport: tr},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, sim: sim, store: st, reg: reg, c: c}
}

// poll runs one poll and fails the test when it fails.
func (h *harness) poll() contract.Market {
	h.t.Helper()
	if err := h.c.RunOnce(context.Background()); err != nil {
		h.t.Fatalf("RunOnce: %v", err)
	}
	return h.market()
}

// market reads the stored document.
func (h *harness) market() contract.Market {
	h.t.Helper()
	doc, err := h.store.Read(context.Background(), contract.DomainMarket)
	if err != nil {
		h.t.Fatalf("read market: %v", err)
	}
	var m contract.Market
	if err := doc.Decode(&m); err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h *harness) envelope() contract.Envelope {
	h.t.Helper()
	doc, err := h.store.Read(context.Background(), contract.DomainMarket)
	if err != nil {
		h.t.Fatalf("read market: %v", err)
	}
	return doc.Envelope
}

func (h *harness) run() contract.Run {
	h.t.Helper()
	st, err := h.store.ReadStatuses(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return st[contract.CollectorMarket].Runs[contract.DomainMarket]
}

// goldenEnvelope compares the stored envelope, its time normalized, with
// testdata/name.golden.
func (h *harness) goldenEnvelope(name string) {
	h.t.Helper()
	env := h.envelope()
	env.UpdatedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var m contract.Market
	if err := json.Unmarshal(env.Data, &m); err != nil {
		h.t.Fatal(err)
	}
	if m.CrossCheck != nil {
		m.CrossCheck.CheckedAt = env.UpdatedAt
		if m.CrossCheck.Pending != nil {
			m.CrossCheck.Pending.Since = env.UpdatedAt
		}
		b, err := json.Marshal(m)
		if err != nil {
			h.t.Fatal(err)
		}
		env.Data = b
	}
	goldenJSON(h.t, name, env)
}

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, name, append(got, '\n'), *update)
}

// pair builds a solana pair of the test token with some activity. liq < 0
// leaves the liquidity object out.
func pair(addr string, side dexsim.Side, other dexsim.Token, priceUSD, native string, liq float64) dexsim.Pair {
	tx := func(n int) dexsim.Txns { return dexsim.Txns{Buys: n, Sells: n + 1} }
	ch := func(v float64) *float64 { return &v }
	p := dexsim.Pair{
		Address: addr, Dex: "raydium", Side: side, Other: other, PriceUSD: priceUSD, PriceNative: native,
		Volume:      dexsim.Volumes{M5: 1.5, H1: 10.25, H6: 60, H24: 240.75},
		Txns:        dexsim.TxnWindows{M5: tx(1), H1: tx(5), H6: tx(20), H24: tx(80)},
		PriceChange: dexsim.PriceChange{M5: ch(0.1), H1: ch(-1.5), H6: ch(3), H24: ch(-12.25)},
		CreatedAt:   time.Date(2024, 6, 19, 22, 6, 46, 0, time.UTC),
	}
	if liq >= 0 {
		p.Liquidity = &dexsim.Liquidity{USD: liq, Base: 1000, Quote: 10}
	}
	return p
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// eqDec reports whether d is set and equals the decimal text want.
func eqDec(d *decimal.Decimal, want string) bool { return d != nil && d.Equal(dec(want)) }

// simBody answers path from the simulator's handler, in process.
func simBody(t testing.TB, sim *dexsim.Server, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	sim.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Body.Bytes()
}

// upstreamRequests reads tokendata_upstream_requests_total for one label set.
func (h *harness) upstreamRequests(upstream, method, outcome string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	want := map[string]string{"upstream": upstream, "method": method, "outcome": outcome}
	for _, mf := range mfs {
		if mf.GetName() != "tokendata_upstream_requests_total" {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// storeFor is an in-memory store of mint.
func storeFor(t *testing.T, mint string) *store.Store {
	mem := store.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	return store.New(mem, mint)
}
