package supply

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// update rewrites the golden files: go test -update.
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secretKey is the fake API key of every test RPC URL: it must never
// appear in a status record, a log line or an error message.
const secretKey = "SECRET-k3y-0f-the-rpc"

// key returns a deterministic valid address for name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return base58.Encode(h[:])
}

var authority = key("authority")

// startSim runs the simulator with tokens and returns it and its URL with
// a fake API key in the query string.
func startSim(t testing.TB, tokens ...solanasim.Token) (*solanasim.Server, string) {
	t.Helper()
	s, url := simtest.StartTB(t, tokens...)
	return s, url + "/?api-key=" + secretKey
}

// fixture is a collector on a simulator, with what the tests inspect.
type fixture struct {
	c       *Collector
	sim     *solanasim.Server
	store   *store.Store
	logs    *logging.Buffer
	reg     *prometheus.Registry
	rpcURL  string
	mint    string
	backend store.Backend
	// nodes are the ledger nodes of fixtureOpts.nodes, node 1 first.
	nodes []*solanasim.Node
	// common is the collector's common configuration.
	common config.Common
}

type fixtureOpts struct {
	cfg     *Config
	refresh time.Duration
	backend store.Backend
	token   *config.Token
	// nodes > 0 starts that many ledger nodes over the simulator and
	// gives them to the collector as SOLANA_RPC_URLS.
	nodes int
}

// testCommon is the common configuration of the tests: the simulator's
// URL and short refreshes (retries are capped at half a refresh).
func testCommon(rpcURL string, refresh time.Duration) config.Common {
	dt := config.DomainTiming{Refresh: refresh, StaleAfter: 5 * refresh, TTL: time.Hour}
	return config.Common{SolanaRPCURL: config.Secret(rpcURL), Supply: dt, Metadata: dt}
}

func testConfig() Config {
	return Config{Commitment: CommitmentFinalized, RPCTimeout: 2 * time.Second, RetryAttempts: 2, RetryBase: 5 * time.Millisecond}
}

// officialToken is the token file of a simulated token.
func officialToken(mint string) config.Token {
	return config.Token{Mint: mint, Name: "Demo Token", Symbol: "DEMO", MaxSupply: "1000000000"}
}

// newFixture starts the simulator with tok and a collector of it.
func newFixture(t testing.TB, tok solanasim.Token, o fixtureOpts) *fixture {
	t.Helper()
	sim, url := startSim(t, tok)
	return newFixtureOn(t, sim, url, tok.Mint, o)
}

func newFixtureOn(t testing.TB, sim *solanasim.Server, url, mint string, o fixtureOpts) *fixture {
	t.Helper()
	cfg := testConfig()
	if o.cfg != nil {
		cfg = *o.cfg
	}
	if o.refresh == 0 {
		o.refresh = 200 * time.Millisecond
	}
	if o.backend == nil {
		o.backend = store.NewMemory()
	}
	token := officialToken(mint)
	if o.token != nil {
		token = *o.token
	}
	f := &fixture{sim: sim, logs: &logging.Buffer{}, reg: prometheus.NewRegistry(), rpcURL: url, mint: mint, backend: o.backend}
	common := testCommon(url, o.refresh)
	var urls []string
	for range o.nodes {
		n := sim.NewNode()
		u, err := n.StartOn(context.Background(), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		f.nodes = append(f.nodes, n)
		urls = append(urls, u+"/?api-key="+secretKey)
	}
	common.SolanaRPCURLs = config.Secret(strings.Join(urls, ","))
	f.common = common
	f.store = store.New(o.backend, mint)
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(common, token, cfg, collector.Deps{
		Store: f.store, Metrics: collector.NewMetrics(f.reg), Registry: f.reg, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	t.Cleanup(func() {
		c.Close()
		_ = f.store.Close()
	})
	return f
}

// raw returns the stored bytes of domain d (nil when absent).
func (f *fixture) raw(t testing.TB, d contract.Domain) []byte {
	t.Helper()
	vals, err := f.backend.MGet(context.Background(), store.DefaultMaxValueBytes, contract.DocumentKey(f.mint, d))
	if err != nil {
		t.Fatal(err)
	}
	if !vals[0].Found {
		return nil
	}
	return vals[0].Data
}

// mustRun polls d and fails the test on error.
func (f *fixture) mustRun(t testing.TB, d contract.Domain) {
	t.Helper()
	if err := f.c.RunOnce(context.Background(), d); err != nil {
		t.Fatalf("RunOnce(%s): %v", d, err)
	}
}

// supplyDoc reads the stored supply document.
func (f *fixture) supplyDoc(t testing.TB) (store.Document, contract.Supply) {
	t.Helper()
	doc, err := f.store.Read(context.Background(), contract.DomainSupply)
	if err != nil {
		t.Fatal(err)
	}
	var s contract.Supply
	if err := doc.Decode(&s); err != nil {
		t.Fatal(err)
	}
	return doc, s
}

// metadataDoc reads the stored metadata document.
func (f *fixture) metadataDoc(t testing.TB) (store.Document, contract.Metadata) {
	t.Helper()
	doc, err := f.store.Read(context.Background(), contract.DomainMetadata)
	if err != nil {
		t.Fatal(err)
	}
	var m contract.Metadata
	if err := doc.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return doc, m
}

// assertNoSecret fails when the RPC URL's key or host shows up in s.
func (f *fixture) assertNoSecret(t testing.TB, what, s string) {
	t.Helper()
	// The host may be named (a connection failure says which host it
	// could not reach); the key, and the query that holds it, never.
	for _, bad := range []string{secretKey, "api-key"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s quotes %q:\n%s", what, bad, s)
		}
	}
}

// normalized renders an envelope for a golden file: indented, with the
// volatile updated_at fixed.
func normalized(t testing.TB, env contract.Envelope) []byte {
	t.Helper()
	env.UpdatedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
