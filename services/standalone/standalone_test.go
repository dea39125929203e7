package standalone_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/edge/hostile"
	"github.com/tokendata/tokendata/services/standalone"
	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeBinaries()
	if err := writeMatrix(); err != nil {
		fmt.Fprintln(os.Stderr, "fault matrix report:", err)
		code = 1
	}
	if err := checkOperationsDoc(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// paths are the 13 public paths of the contract, plus the OpenAPI document.
var paths = []string{
	"/api/total-supply", "/api/circulating-supply", "/api/max-supply", "/api/supply",
	"/api/coingecko-supply", "/api/price", "/api/holders", "/api/token-metadata", "/api/health",
	"/api/exchanges", "/api/market", "/api/market-data", "/api/status", "/api/market-pairs",
	"/api/openapi.json",
}

type running struct {
	info   standalone.Info
	cancel context.CancelFunc
	done   chan error
}

// start runs standalone on loopback with no drain delay; opts adjust the
// common configuration after that.
func start(t *testing.T, sim simulator.Options, opts ...func(*config.Common)) *running {
	t.Helper()
	common, err := config.LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	common.DrainDelay = 0
	for _, o := range opts {
		o(&common)
	}
	apiL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opsL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan standalone.Info, 1)
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- standalone.Run(ctx, standalone.Options{
			Common: common, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			APIListener: apiL, OpsListener: opsL, Sim: sim,
			Started: func(i standalone.Info) { started <- i },
		})
	}()
	// Stopped even when it does not start in time: a standalone left
	// running takes the CPU of the tests after it.
	exited := false
	t.Cleanup(func() {
		cancel()
		if exited {
			return
		}
		if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("standalone stopped with %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	// Demo mode seeds 30 days of history before it starts: seconds, but
	// over thirty under -race on a busy machine. The bound only ends a
	// start that hangs.
	const startBound = 3 * time.Minute
	select {
	case r.info = <-started:
	case err := <-r.done:
		exited = true
		t.Fatalf("standalone stopped: %v", err)
	case <-time.After(startBound):
		t.Fatalf("standalone did not start within %s", startBound)
	}
	return r
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// waitFor polls path until it answers 200 (the collectors' first polls,
// and the edge's first render: over forty seconds under -race on a busy
// machine, its history bodies included; the bound only ends a wait that
// hangs).
func waitFor(t *testing.T, base, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(150 * time.Second)
	for {
		resp, body := get(t, base+path)
		if resp.StatusCode == 200 {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers %d: %s", path, resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDemoEndToEnd runs standalone in demo mode on loopback and checks
// every public path against the simulator's ground truth.
func TestDemoEndToEnd(t *testing.T) {
	r := start(t, simulator.Options{Seed: 7, Accounts: 2000})
	base := r.info.API
	if !r.info.Demo || r.info.Mint != config.DemoMint || r.info.Sim == nil {
		t.Fatalf("not in demo mode: %+v", r.info)
	}
	for _, p := range []string{"/api/total-supply", "/api/price", "/api/holders", "/api/market"} {
		waitFor(t, base, p)
	}

	for _, p := range paths {
		resp, body := get(t, base+p+"?cachebust=1")
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d: %s", p, resp.StatusCode, body)
			continue
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: CORS/nosniff headers missing: %v", p, resp.Header)
		}
		if resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") == "" {
			t.Errorf("%s: ETag or Cache-Control missing: %v", p, resp.Header)
		}
		if strings.HasSuffix(resp.Header.Get("Content-Type"), "json") && !json.Valid(body) {
			t.Errorf("%s: invalid JSON: %s", p, body)
		}
	}

	// Supply: exactly the ledger's, formatted from the raw amount.
	_, total := get(t, base+"/api/total-supply")
	_, circ := get(t, base+"/api/circulating-supply")
	want := amount.MustFormat("987654321123456", 6)
	if string(total) != want || string(circ) != want {
		t.Errorf("total %q circulating %q, want %q", total, circ, want)
	}
	if _, max := get(t, base+"/api/max-supply"); string(max) != "1000000000" {
		t.Errorf("max supply %q", max)
	}

	// Holders: the simulator's exact count.
	var holders struct{ Holders uint64 }
	if err := json.Unmarshal(waitFor(t, base, "/api/holders"), &holders); err != nil {
		t.Fatal(err)
	}
	if truth := r.info.Sim.Holders(); holders.Holders != uint64(truth.Holders) || holders.Holders == 0 {
		t.Errorf("holders = %d, truth %d", holders.Holders, truth.Holders)
	}

	// Price: the selected pair's, exactly as the aggregator's ground truth.
	var price struct {
		PriceUSD json.Number `json:"price_usd"`
	}
	dec := json.NewDecoder(strings.NewReader(string(waitFor(t, base, "/api/price"))))
	dec.UseNumber()
	if err := dec.Decode(&price); err != nil {
		t.Fatal(err)
	}
	got, ok := new(big.Rat).SetString(price.PriceUSD.String())
	truth := r.info.Sim.Market()
	if !ok || truth.PriceUSD == nil || got.Cmp(truth.PriceUSD) != 0 {
		t.Errorf("price_usd = %s, truth %s", price.PriceUSD, truth.PriceUSDText)
	}

	// Demo mode is visible in /api/status.
	if _, status := get(t, base+"/api/status"); !strings.Contains(string(status), "demo") {
		t.Errorf("/api/status does not say demo: %s", status)
	}

	// 304 on a matching If-None-Match.
	resp, _ := get(t, base+"/api/supply")
	req, _ := http.NewRequest(http.MethodGet, base+"/api/supply", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	nm, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = nm.Body.Close()
	if nm.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", nm.StatusCode)
	}

	// Ops listener: metrics and readiness, and no public path on it.
	if resp, body := get(t, r.info.Ops+"/metrics"); resp.StatusCode != 200 || !strings.Contains(string(body), "tokendata_collector_runs_total") {
		t.Errorf("metrics: %d", resp.StatusCode)
	}
	if resp, _ := get(t, r.info.Ops+"/readyz"); resp.StatusCode != 200 {
		t.Errorf("readyz: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("/metrics on the public listener: %d", resp.StatusCode)
	}
}

// TestSupplyChangeReachesTheEdge: when the ledger's supply grows, the next
// supply poll writes it and the edge serves it without a restart.
func TestSupplyChangeReachesTheEdge(t *testing.T) {
	t.Setenv("SUPPLY_REFRESH", "1s")
	t.Setenv("SUPPLY_STALE_AFTER", "3s")
	t.Setenv("SUPPLY_TTL", "10s")
	r := start(t, simulator.Options{Seed: 3, Accounts: 100})
	base := r.info.API
	first := string(waitFor(t, base, "/api/total-supply"))
	if err := r.info.Sim.RPC.SetSupply(r.info.Mint, 987654321123456+1_500_000); err != nil {
		t.Fatal(err)
	}
	want := amount.MustFormat("987654322623456", 6)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := get(t, base+"/api/total-supply")
		if string(body) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("total supply still %q (was %q), want %q", body, first, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPublicServerIsTheEdges: standalone serves its API through the edge's
// own server, so it has the edge's header limit (431 past it) and the
// edge's drain hook (tokendata_edge_ready turns 0 as the drain begins,
// while the listeners still answer).
func TestPublicServerIsTheEdges(t *testing.T) {
	const drain = 3 * time.Second
	r := start(t, simulator.Options{Seed: 5, Accounts: 100}, func(c *config.Common) { c.DrainDelay = drain })

	req, err := http.NewRequest(http.MethodGet, r.info.API+"/api/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Pad", strings.Repeat("x", 48<<10)) // over the edge's 32 KiB, far under net/http's 1 MiB
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(string(body), `"code":"header_too_large"`) {
		t.Errorf("48 KiB of headers: %d %v %s, want the edge's 431 of the error contract", resp.StatusCode, resp.Header, body)
	}
	// A trickled body is refused at once and its connection closed.
	addr := strings.TrimPrefix(r.info.API, "http://")
	a, err := hostile.Trickle(addr, "/api/health", 100, 200*time.Millisecond, 5*time.Second)
	if err != nil || a.Status != http.StatusRequestEntityTooLarge || !a.Closed || a.ClosedAfter > 3*time.Second {
		t.Errorf("trickled body: %d, closed %v after %s (%v)", a.Status, a.Closed, a.ClosedAfter, err)
	}
	// pprof is off unless OPS_PPROF is set.
	if resp, _ := get(t, r.info.Ops+"/debug/pprof/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without OPS_PPROF: %d", resp.StatusCode)
	}

	waitReady := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		got := edgeReady(r.info.Ops)
		for got != want {
			if time.Now().After(deadline) {
				t.Fatalf("tokendata_edge_ready = %q, want %s", got, want)
			}
			time.Sleep(20 * time.Millisecond)
			got = edgeReady(r.info.Ops)
		}
	}
	// The first read of the store carries the seeded history: seconds,
	// but CI's run of this test (-race, the tools' build beside it) was
	// still not ready at 30 s. The bound only ends a hang.
	waitReady("1", 2*time.Minute)
	r.cancel()
	waitReady("0", drain-time.Second)
}

// edgeReady is the value of tokendata_edge_ready on the ops listener, ""
// when it cannot be read.
func edgeReady(ops string) string {
	resp, err := http.Get(ops + "/metrics")
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "tokendata_edge_ready "); ok {
			return v
		}
	}
	return ""
}

// TestOpsAddrDefaultsToLoopback: standalone's ops listener is on loopback
// unless OPS_ADDR says otherwise; the cluster services keep :9090.
func TestOpsAddrDefaultsToLoopback(t *testing.T) {
	t.Setenv("OPS_ADDR", "") // restored after the test
	_ = os.Unsetenv("OPS_ADDR")
	c, err := standalone.LoadCommon()
	if err != nil || c.OpsAddr != "127.0.0.1:9090" {
		t.Errorf("OPS_ADDR unset: %q %v, want 127.0.0.1:9090", c.OpsAddr, err)
	}
	if c, err := config.LoadCommon(); err != nil || c.OpsAddr != ":9090" {
		t.Errorf("cluster default: %q %v", c.OpsAddr, err)
	}
	t.Setenv("OPS_ADDR", ":9191")
	if c, err := standalone.LoadCommon(); err != nil || c.OpsAddr != ":9191" {
		t.Errorf("OPS_ADDR=:9191: %q %v", c.OpsAddr, err)
	}
}
