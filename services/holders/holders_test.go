package holders_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/golden"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// update rewrites the golden files: go test -update.
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// apiKey stands for the secret an RPC URL carries.
const apiKey = "SECRET-api-key-123"

// sim starts a simulator with the given tokens and returns it and its URL
// (with an API key in the query, as providers do).
func sim(t testing.TB, tokens ...solanasim.Token) (*solanasim.Server, string) {
	t.Helper()
	s, url := simtest.StartTB(t, tokens...)
	return s, url + "/?api-key=" + apiKey
}

type fixture struct {
	c     *holders.Collector
	store *store.Store
	reg   *prometheus.Registry
	logs  *logging.Buffer
}

type setup struct {
	url, mint, method string
	cfg               holders.Config
	backend           store.Backend
}

func newCollector(t testing.TB, s setup) fixture {
	t.Helper()
	if s.method == "" {
		s.method = contract.HoldersMethodGPA
	}
	if s.cfg == (holders.Config{}) {
		s.cfg = holders.DefaultConfig()
	}
	if s.cfg.Live == holders.LiveAuto {
		// These tests call Enumerate, never Run: the scans. The live
		// count's tests set HOLDERS_LIVE=true (livecollect_test.go), and
		// TestLiveOn what auto means.
		s.cfg.Live = "false"
	}
	if s.backend == nil {
		mem := store.NewMemory()
		t.Cleanup(func() { _ = mem.Close() })
		s.backend = mem
	}
	common := config.Common{SolanaRPCURL: config.Secret(s.url), HoldersMethod: s.method}
	st := store.New(s.backend, s.mint)
	reg := prometheus.NewRegistry()
	logs := &logging.Buffer{}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := holders.New(common, config.Token{Mint: s.mint}, s.cfg, collector.Deps{
		Store: st, Metrics: collector.NewMetrics(reg), Registry: reg,
		Log:        slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HTTPClient: &http.Client{Transport: tr},
	})
	if err != nil {
		t.Fatal(err)
	}
	fastRetries(c)
	return fixture{c: c, store: st, reg: reg, logs: logs}
}

// fastRetries keeps the runner's retry policy but with millisecond waits.
func fastRetries(c *holders.Collector) {
	c.Runner().Backoff = collector.Backoff{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond}
}

func readHolders(t testing.TB, st *store.Store) (contract.Holders, store.Document) {
	t.Helper()
	doc, err := st.Read(context.Background(), contract.DomainHolders)
	if err != nil {
		t.Fatalf("read holders: %v", err)
	}
	var h contract.Holders
	if err := doc.Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h, doc
}

func checkTruth(t *testing.T, s *solanasim.Server, mint string, h contract.Holders) {
	t.Helper()
	truth, ok := s.Truth(mint)
	if !ok {
		t.Fatal("no truth")
	}
	if h.Holders != uint64(truth.Holders) || h.TokenAccounts != uint64(truth.TokenAccounts) ||
		h.NonZeroAccounts != uint64(truth.NonZeroAccounts) {
		t.Errorf("holders %d accounts %d non-zero %d; truth holders %d accounts %d non-zero %d",
			h.Holders, h.TokenAccounts, h.NonZeroAccounts, truth.Holders, truth.TokenAccounts, truth.NonZeroAccounts)
	}
}

func TestGroundTruth(t *testing.T) {
	const n = 20_000
	s, url := sim(t, holderstest.ClassicToken(n), holderstest.T22Token(n))
	truth22, _ := s.Truth(holderstest.T22Mint)
	if truth22.Accounts165 == 0 || truth22.Accounts170 == 0 {
		t.Fatalf("the Token-2022 fixture must mix 165- and 170-byte accounts: %+v", truth22)
	}
	truthC, _ := s.Truth(holderstest.ClassicMint)
	if truthC.Holders >= truthC.Owners || truthC.NonZeroAccounts == truthC.TokenAccounts {
		t.Fatalf("the fixture must have zero balances and owners of several accounts: %+v", truthC)
	}
	tests := []struct {
		name, mint, method, program string
		gzip                        bool
		pageLimit                   int
	}{
		{"token/gzip/auto", holderstest.ClassicMint, contract.HoldersMethodGPA, holders.ProgramAuto, true, 0},
		{"token/identity/explicit", holderstest.ClassicMint, contract.HoldersMethodGPA, holders.ProgramToken, false, 0},
		{"token-2022/gzip/auto", holderstest.T22Mint, contract.HoldersMethodGPA, holders.ProgramAuto, true, 0},
		{"token-2022/identity/explicit", holderstest.T22Mint, contract.HoldersMethodGPA, holders.ProgramToken2022, false, 0},
		{"token/das", holderstest.ClassicMint, contract.HoldersMethodDAS, holders.ProgramAuto, true, 1000},
		{"token-2022/das/small-pages", holderstest.T22Mint, contract.HoldersMethodDAS, holders.ProgramAuto, false, 333},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := holders.DefaultConfig()
			cfg.Gzip, cfg.Program = tt.gzip, tt.program
			if tt.pageLimit > 0 {
				cfg.DASPageLimit = tt.pageLimit
			}
			f := newCollector(t, setup{url: url, mint: tt.mint, method: tt.method, cfg: cfg})
			if err := f.c.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			h, doc := readHolders(t, f.store)
			checkTruth(t, s, tt.mint, h)
			if h.Method != tt.method || doc.Source.Method != tt.method || doc.Source.Name != contract.UpstreamSolanaRPC || h.Slot == 0 {
				t.Errorf("method %q source %+v slot %d", h.Method, doc.Source, h.Slot)
			}
			wantQueries := 1
			if tt.mint == holderstest.T22Mint && tt.method == contract.HoldersMethodGPA {
				wantQueries = 2
			}
			if len(h.Queries) != wantQueries {
				t.Errorf("queries = %q, want %d", h.Queries, wantQueries)
			}
			if got := testutil.ToFloat64(gauge(t, f.reg, "tokendata_holders_last_enumeration_accounts")); got != float64(h.TokenAccounts) {
				t.Errorf("last enumeration accounts gauge = %v", got)
			}
		})
	}
}

// gauge finds a registered gauge by name.
func gauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "h", nil, nil), prometheus.GaugeValue, m.GetGauge().GetValue())
				}
			}
		}
	})
}

type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func TestDASPagination(t *testing.T) {
	s, url := sim(t, holderstest.T22Token(1000))
	cfg := holders.DefaultConfig()
	cfg.DASPageLimit = 7
	f := newCollector(t, setup{url: url, mint: holderstest.T22Mint, method: contract.HoldersMethodDAS, cfg: cfg})
	if err := f.c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, _ := readHolders(t, f.store)
	checkTruth(t, s, holderstest.T22Mint, h)
	// ceil(1000/7) = 143 full or partial pages, then the empty page.
	pages := testutil.ToFloat64(counterOf(t, f.reg, "tokendata_upstream_requests_total", "getTokenAccounts"))
	if pages != 144 {
		t.Errorf("getTokenAccounts requests = %v, want 144", pages)
	}
}

func counterOf(t *testing.T, reg *prometheus.Registry, name, method string) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "method" && l.GetValue() == method {
						sum += m.GetCounter().GetValue()
					}
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "h", nil, nil), prometheus.CounterValue, sum)
	})
}

// TestFaults runs every fault kind of the simulator against a collector
// that already wrote a good count: each run fails with the right kind,
// names no secret, and leaves the good document as it was.
func TestFaults(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(3000), holderstest.T22Token(3000))
	tests := []struct {
		method  string
		fault   fault.Fault
		kind    string
		remedy  string
		timeout time.Duration
	}{
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.HTTP403}, contract.ErrKindUnsupported, holders.RemedyGPA, 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.HTTP429}, contract.ErrKindRateLimited, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.HTTP500}, contract.ErrKindUnavailable, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.HTTP503}, contract.ErrKindUnavailable, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.Reset}, contract.ErrKindUnavailable, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.Truncate, AfterBytes: 100_000}, contract.ErrKindUnavailable, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.Truncate, AfterBytes: 10}, contract.ErrKindUnavailable, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.Malformed}, contract.ErrKindInvalid, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.Latency, Delay: 2 * time.Second}, contract.ErrKindUnavailable, "", 200 * time.Millisecond},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.RPCNodeUnhealthy}, contract.ErrKindNodeBehind, "", 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.RPCExcludedIndex}, contract.ErrKindUnsupported, holders.RemedyGPA, 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.RPCMethodNotFound}, contract.ErrKindUnsupported, holders.RemedyGPA, 0},
		{contract.HoldersMethodGPA, fault.Fault{Kind: fault.RPCInvalidParams}, contract.ErrKindRPC, "", 0},
		{contract.HoldersMethodDAS, fault.Fault{Kind: fault.RPCMethodNotFound}, contract.ErrKindUnsupported, holders.RemedyDAS, 0},
		{contract.HoldersMethodDAS, fault.Fault{Kind: fault.HTTP403}, contract.ErrKindUnsupported, holders.RemedyDAS, 0},
		{contract.HoldersMethodDAS, fault.Fault{Kind: fault.Truncate, AfterBytes: 2000}, contract.ErrKindUnavailable, "", 0},
		{contract.HoldersMethodDAS, fault.Fault{Kind: fault.Malformed}, contract.ErrKindInvalid, "", 0},
		{contract.HoldersMethodDAS, fault.Fault{Kind: fault.HTTP429}, contract.ErrKindRateLimited, "", 0},
	}
	for _, tt := range tests {
		for _, mint := range []string{holderstest.ClassicMint, holderstest.T22Mint} {
			t.Run(tt.method+"/"+string(tt.fault.Kind)+"/"+mint[:4], func(t *testing.T) {
				cfg := holders.DefaultConfig()
				cfg.DASPageLimit = 500 // several pages: a fault hits the middle of the enumeration
				mem := store.NewMemory()
				defer mem.Close()
				// A first collector writes a good count; the faulty run
				// (with its own timeout) shares its store.
				ctx := context.Background()
				if err := newCollector(t, setup{url: url, mint: mint, method: tt.method, cfg: cfg, backend: mem}).c.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
				if tt.timeout > 0 {
					cfg.RPCTimeout = tt.timeout
				}
				f := newCollector(t, setup{url: url, mint: mint, method: tt.method, cfg: cfg, backend: mem})
				good, goodDoc := readHolders(t, f.store)
				route := map[string]string{contract.HoldersMethodGPA: "getProgramAccounts", contract.HoldersMethodDAS: "getTokenAccounts"}[tt.method]
				s.Faults().Inject(route, tt.fault)
				defer s.Faults().Clear(route)

				err := f.c.RunOnce(ctx)
				var ce *collector.Error
				if !errors.As(err, &ce) || ce.Kind != tt.kind {
					t.Fatalf("err = %v, want kind %s", err, tt.kind)
				}
				// Every kind has a remedy: the method's own, or its kind's,
				// which names the endpoint's variable.
				if !strings.HasPrefix(ce.Remedy, tt.remedy) || ce.Remedy == "" ||
					tt.remedy == "" && !strings.Contains(ce.Remedy, "SOLANA_RPC_URL") {
					t.Errorf("remedy = %q, want %q", ce.Remedy, tt.remedy)
				}
				st, _ := f.store.ReadStatuses(ctx)
				run := st[contract.CollectorHolders].Runs[contract.DomainHolders]
				if run.OK || run.ErrorKind != tt.kind || run.Remedy != ce.Remedy || run.ConsecutiveFailures != 1 {
					t.Errorf("status run = %+v", run)
				}
				for _, text := range []string{run.Error, run.Remedy, f.logs.String()} {
					// The host may be named (a failed connection says which
					// host); the key never.
					if strings.Contains(text, apiKey) {
						t.Errorf("a secret leaked: %s", text)
					}
				}
				after, afterDoc := readHolders(t, f.store)
				if after.Holders != good.Holders || !afterDoc.UpdatedAt.Equal(goodDoc.UpdatedAt) {
					t.Errorf("the good document changed: %+v", after)
				}
			})
		}
	}
}

// TestStreamCutNeverCounts cuts the stream in the middle on every attempt:
// no document is ever written, the status says why.
func TestStreamCutNeverCounts(t *testing.T) {
	s, url := sim(t, holderstest.T22Token(5000))
	for _, gz := range []bool{true, false} {
		cfg := holders.DefaultConfig()
		cfg.Gzip = gz
		f := newCollector(t, setup{url: url, mint: holderstest.T22Mint, cfg: cfg})
		s.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.Truncate, AfterBytes: 300_000})
		err := f.c.RunOnce(context.Background())
		s.Faults().Clear("getProgramAccounts")
		var ce *collector.Error
		if !errors.As(err, &ce) || !ce.Retry || !strings.Contains(ce.Message, "no partial count") {
			t.Fatalf("gzip=%v: err = %#v", gz, err)
		}
		if _, err := f.store.Read(context.Background(), contract.DomainHolders); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("gzip=%v: a document was written from a cut stream: %v", gz, err)
		}
	}
}

// TestUnsupportedStatusGolden: the node refuses to enumerate; the status
// record says so plainly, with the remedy and without the URL.
func TestUnsupportedStatusGolden(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(100))
	s.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.RPCExcludedIndex})
	f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint})
	calls := 0
	_ = f.c.RunOnce(context.Background())
	calls = int(testutil.ToFloat64(counterOf(t, f.reg, "tokendata_upstream_requests_total", "getProgramAccounts")))
	if calls != 1 {
		t.Errorf("an unsupported enumeration was tried %d times, want once (no retry)", calls)
	}
	st, err := f.store.ReadStatuses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec := st[contract.CollectorHolders]
	run := rec.Runs[contract.DomainHolders]
	run.StartedAt, run.FinishedAt = time.Time{}, time.Time{}
	rec.Runs[contract.DomainHolders] = run
	goldenJSON(t, "status_unsupported", rec)
}

func TestGoldenDocuments(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(2000), holderstest.T22Token(2000))
	for _, tt := range []struct{ name, mint, method string }{
		{"holders_token", holderstest.ClassicMint, contract.HoldersMethodGPA},
		{"holders_token2022", holderstest.T22Mint, contract.HoldersMethodGPA},
		{"holders_das", holderstest.T22Mint, contract.HoldersMethodDAS},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newCollector(t, setup{url: url, mint: tt.mint, method: tt.method})
			if err := f.c.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			h, doc := readHolders(t, f.store)
			checkTruth(t, s, tt.mint, h)
			h.DurationSeconds = 0
			doc.UpdatedAt = time.Time{}
			doc.TTL = 0
			goldenJSON(t, tt.name, map[string]any{"source": doc.Source, "data": h})
		})
	}
}

// TestRedisStore runs the collector over a real redis-server.
func TestRedisStore(t *testing.T) {
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	backend := store.NewRedis(opts)
	t.Cleanup(func() { _ = backend.Close() })
	s, url := sim(t, holderstest.T22Token(4000))
	f := newCollector(t, setup{url: url, mint: holderstest.T22Mint, backend: backend})
	if err := f.c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, doc := readHolders(t, f.store)
	checkTruth(t, s, holderstest.T22Mint, h)
	if ttl := contract.DefaultTimings[contract.DomainHolders].TTL; doc.TTL <= 0 || doc.TTL > ttl {
		t.Errorf("ttl = %s", doc.TTL)
	}
}

// TestProgress: a long enumeration logs its progress and exports it.
func TestProgress(t *testing.T) {
	_, url := sim(t, holderstest.ClassicToken(50_000))
	cfg := holders.DefaultConfig()
	cfg.ProgressInterval = time.Nanosecond
	f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint, cfg: cfg})
	if err := f.c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lines int
	for _, l := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"enumerating token accounts"`) {
			lines++
			var m struct {
				Accounts int64 `json:"accounts"`
				Rate     int64 `json:"accounts_per_second"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.Accounts <= 0 || m.Rate <= 0 {
				t.Errorf("progress line %s", l)
			}
		}
	}
	if lines < 3 { // every 16,384 accounts at most
		t.Errorf("%d progress lines", lines)
	}
	if v := testutil.ToFloat64(gauge(t, f.reg, "tokendata_holders_enumeration_accounts")); v != 0 {
		t.Errorf("progress gauge after the run = %v, want 0", v)
	}
	if v := testutil.ToFloat64(gauge(t, f.reg, "tokendata_holders_enumeration_accounts_per_second")); v <= 0 {
		t.Errorf("rate gauge = %v", v)
	}
}

// TestRunStops: Run polls at once and returns on cancellation.
func TestRunStops(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(500))
	f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := f.store.Read(ctx, contract.DomainHolders); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no document written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h, _ := readHolders(t, f.store)
	checkTruth(t, s, holderstest.ClassicMint, h)
}

func TestConfig(t *testing.T) {
	for name, mut := range map[string]func(*holders.Config){
		"HOLDERS_RPC_TIMEOUT":                     func(c *holders.Config) { c.RPCTimeout = 0 },
		"HOLDERS_PROGRAM":                         func(c *holders.Config) { c.Program = "spl" },
		"HOLDERS_DAS_PAGE_LIMIT":                  func(c *holders.Config) { c.DASPageLimit = 1001 },
		"HOLDERS_COMMITMENT":                      func(c *holders.Config) { c.Commitment = "final" },
		"HOLDERS_PROGRESS_INTERVAL":               func(c *holders.Config) { c.ProgressInterval = -1 },
		"HOLDERS_MAX_ACCOUNTS":                    func(c *holders.Config) { c.MaxAccounts = 0 },
		"HOLDERS_MAX_MEMORY_BYTES":                func(c *holders.Config) { c.MaxMemoryBytes = 1 << 20 },
		"HOLDERS_CROSSCHECK_EVERY":                func(c *holders.Config) { c.CrossCheckEvery = 0 },
		"HOLDERS_CROSSCHECK_CHURN_FLOOR":          func(c *holders.Config) { c.CrossCheckChurnFloor = -1 },
		"HOLDERS_CROSSCHECK_CHURN_PER_1000_SLOTS": func(c *holders.Config) { c.CrossCheckChurnPer1000Slots = -1 },
		"HOLDERS_WS_URL":                          func(c *holders.Config) { c.WSURL = "https://node.example/?api-key=k" },
		"HOLDERS_WS_SILENCE":                      func(c *holders.Config) { c.WSSilence = c.WSPing },
		"HOLDERS_WS_BACKOFF_MAX":                  func(c *holders.Config) { c.WSBackoffMax = c.WSBackoff / 2 },
		"HOLDERS_PUBLISH_INTERVAL":                func(c *holders.Config) { c.PublishInterval = time.Millisecond },
		"HOLDERS_RESYNC":                          func(c *holders.Config) { c.Resync = 0 },
		"HOLDERS_LIVE":                            func(c *holders.Config) { c.Live = "yes" },
	} {
		c := holders.DefaultConfig()
		mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	t.Setenv("HOLDERS_DAS_PAGE_LIMIT", "250")
	t.Setenv("HOLDERS_PROGRAM", "token-2022")
	c, err := holders.LoadConfig()
	if err != nil || c.DASPageLimit != 250 || c.Program != holders.ProgramToken2022 || c.RPCTimeout != 5*time.Minute {
		t.Errorf("LoadConfig = %+v, %v", c, err)
	}
	if d := holders.DefaultConfig(); d != (holders.Config{RPCTimeout: 5 * time.Minute, Program: "auto", DASPageLimit: 1000,
		Gzip: true, Commitment: "confirmed", ProgressInterval: 10 * time.Second,
		MaxAccounts: 20_000_000, MaxMemoryBytes: 192 << 20, Live: holders.LiveAuto, CrossCheckMethod: contract.HoldersMethodGPA, CrossCheckEvery: 4,
		CrossCheckChurnFloor: 5, CrossCheckChurnPer1000Slots: 500,
		PublishInterval: 2 * time.Second, Resync: 30 * time.Hour, WSPing: 10 * time.Second, WSSilence: 30 * time.Second,
		WSBackoff: time.Second, WSBackoffMax: time.Minute}) {
		t.Errorf("DefaultConfig = %+v", d)
	}
	mem := store.NewMemory()
	defer mem.Close()
	_, err = holders.New(config.Common{SolanaRPCURL: "http://127.0.0.1:1", HoldersMethod: "scan"},
		config.Token{Mint: holderstest.ClassicMint}, holders.DefaultConfig(), collector.Deps{Store: store.New(mem, holderstest.ClassicMint)})
	if err == nil || !strings.Contains(err.Error(), "HOLDERS_METHOD") {
		t.Errorf("bad method: %v", err)
	}
	live := holders.DefaultConfig()
	live.Live = "true"
	_, err = holders.New(config.Common{SolanaRPCURL: "http://127.0.0.1:1", HoldersMethod: contract.HoldersMethodDAS},
		config.Token{Mint: holderstest.ClassicMint}, live, collector.Deps{Store: store.New(mem, holderstest.ClassicMint)})
	if err == nil || !strings.Contains(err.Error(), "HOLDERS_LIVE") || !strings.Contains(err.Error(), "HOLDERS_METHOD=getProgramAccounts") {
		t.Errorf("live with das: %v", err)
	}
}

// TestLiveOn: HOLDERS_LIVE auto (the default) is live where the method
// anchors it, getProgramAccounts, and scans with das; true with das is
// an error that says what to set; the boolean spellings of before hold.
func TestLiveOn(t *testing.T) {
	for _, tc := range []struct {
		live, method string
		on           bool
		err          string
	}{
		{holders.LiveAuto, contract.HoldersMethodGPA, true, ""},
		{holders.LiveAuto, contract.HoldersMethodDAS, false, ""},
		{"true", contract.HoldersMethodGPA, true, ""},
		{"1", contract.HoldersMethodGPA, true, ""},
		{"TRUE", contract.HoldersMethodGPA, true, ""},
		{"false", contract.HoldersMethodGPA, false, ""},
		{"0", contract.HoldersMethodGPA, false, ""},
		{"false", contract.HoldersMethodDAS, false, ""},
		{"true", contract.HoldersMethodDAS, false, "HOLDERS_METHOD=getProgramAccounts, or HOLDERS_LIVE=auto or false"},
		{"Auto", contract.HoldersMethodGPA, false, `HOLDERS_LIVE: "Auto" is not auto, true or false`},
		{"", contract.HoldersMethodGPA, false, `HOLDERS_LIVE: "" is not auto, true or false`},
	} {
		c := holders.DefaultConfig()
		c.Live = tc.live
		on, err := c.LiveOn(tc.method)
		if on != tc.on || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("HOLDERS_LIVE=%q with %s: %v, %v; want %v, %q", tc.live, tc.method, on, err, tc.on, tc.err)
		}
	}
	t.Setenv("HOLDERS_LIVE", "false")
	if c, err := holders.LoadConfig(); err != nil || c.Live != "false" {
		t.Errorf("HOLDERS_LIVE=false: %q, %v", c.Live, err)
	}
	t.Setenv("HOLDERS_LIVE", "on")
	if _, err := holders.LoadConfig(); err == nil || !strings.Contains(err.Error(), `HOLDERS_LIVE: "on" is not auto, true or false`) {
		t.Errorf("HOLDERS_LIVE=on: %v", err)
	}
}

// TestWrongProgramIsNotZero: a mint with no token account under the
// configured program is an error, never 0 holders.
func TestWrongProgramIsNotZero(t *testing.T) {
	_, url := sim(t, holderstest.T22Token(100))
	cfg := holders.DefaultConfig()
	cfg.Program = holders.ProgramToken
	f := newCollector(t, setup{url: url, mint: holderstest.T22Mint, cfg: cfg})
	err := f.c.RunOnce(context.Background())
	var ce *collector.Error
	if !errors.As(err, &ce) || ce.Kind != contract.ErrKindInvalid || !strings.Contains(ce.Remedy, "HOLDERS_PROGRAM") {
		t.Fatalf("err = %#v", err)
	}
}

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, name, append(got, '\n'), *update)
}
