package edge

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/golden"
)

// update rewrites the golden files: go test -update.
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// t0 is the fixed "now" of golden tests; documents are written 30 s before.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type harness struct {
	t     testing.TB
	srv   *Server
	store *store.Store
	clock *clock
	reg   *prometheus.Registry
}

type harnessOpt func(*config.Common, *Config, *Deps)

// newHarness builds an edge of edgetest.Token() on st (a fresh memory store
// on the harness's clock when nil) with a clock at t0.
func newHarness(t testing.TB, st *store.Store, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessOf(t, edgetest.Token(), st, opts...)
}

// newHarnessOf is newHarness for another token file.
func newHarnessOf(t testing.TB, token config.Token, st *store.Store, opts ...harnessOpt) *harness {
	t.Helper()
	ck := &clock{t: t0}
	// A store of the harness reads, trims and counts TTLs on the edge's
	// clock (Deps.Now, whatever the options make it).
	var storeNow func() time.Time
	if st == nil {
		now := func() time.Time { return storeNow() }
		st = store.New(store.NewMemoryOn(now), config.DemoMint, store.WithClock(now))
	}
	var common config.Common // the defaults, whatever the test process's environment
	if err := env.ParseWithOptions(&common, env.Options{Environment: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	deps := Deps{Store: st, Registry: reg, Now: ck.Now}
	for _, o := range opts {
		o(&common, &cfg, &deps)
	}
	storeNow = deps.Now
	srv, err := New(common, token, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, store: st, clock: ck, reg: reg}
}

// writeAll writes every fixture document, updated 30 s before the clock.
func (h *harness) writeAll() {
	h.t.Helper()
	if err := edgetest.WriteAll(context.Background(), h.store, h.clock.Now().Add(-30*time.Second)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) write(d contract.Domain, doc any, age time.Duration) {
	h.t.Helper()
	if err := edgetest.WriteDoc(context.Background(), h.store, d, doc, h.clock.Now().Add(-age), contract.DefaultTimings[d].TTL); err != nil {
		h.t.Fatal(err)
	}
}

// writeFrom is write with the document's own source.
func (h *harness) writeFrom(d contract.Domain, doc any, age time.Duration, src contract.Source) {
	h.t.Helper()
	env, err := contract.NewEnvelope(h.store.Mint(), d, h.clock.Now().Add(-age), src, doc)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.Write(context.Background(), env, contract.DefaultTimings[d].TTL); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) refresh() { h.srv.Refresh(context.Background()) }

// do sends a request through the real Gin engine.
func (h *harness) do(method, target string, hdr ...string) *httptest.ResponseRecorder {
	h.t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// dump is the golden form of a response: status, headers (sorted, without
// the per-request id), blank line, exact body.
func dump(rec *httptest.ResponseRecorder) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(rec.Code) + " " + http.StatusText(rec.Code) + "\n")
	keys := make([]string, 0, len(rec.Header()))
	for k := range rec.Header() {
		if k != "X-Request-Id" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + ": " + strings.Join(rec.Header()[k], ", ") + "\n")
	}
	b.WriteString("\n")
	b.Write(rec.Body.Bytes())
	return b.String()
}

// checkGolden compares got with testdata/<name>.golden (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, name, []byte(got), *update)
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var t0Ctx = context.Background()

func decimalPtr(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}
