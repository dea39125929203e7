package supply

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// TestRunOverRedis runs the collector loop against the simulator and a
// real redis-server: both documents are written with their TTLs and
// announced on the updates channel; a later outage keeps them and is
// recorded; cancelling stops the loop.
func TestRunOverRedis(t *testing.T) {
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	tok := t22six()
	f := newFixture(t, tok, fixtureOpts{backend: store.NewRedis(opts), refresh: 150 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates, closeUpdates, err := f.store.Updates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeUpdates() }()

	done := make(chan error, 1)
	go func() { done <- f.c.Run(ctx) }()

	seen := map[contract.Domain]bool{}
	timeout := time.After(10 * time.Second)
	for !seen[contract.DomainSupply] || !seen[contract.DomainMetadata] {
		select {
		case d := <-updates:
			seen[d] = true
		case <-timeout:
			t.Fatalf("updates seen: %v", seen)
		}
	}
	env, doc := f.supplyDoc(t)
	if doc.TotalRaw != "999999999999999" || doc.TokenProgram != contract.ProgramToken2022 || env.TTL <= 0 || env.TTL > time.Hour {
		t.Errorf("supply %+v ttl %s", doc, env.TTL)
	}
	if _, md := f.metadataDoc(t); md.OnChain == nil || md.OnChain.Source != contract.MetadataSourceToken2022 {
		t.Errorf("metadata %+v", md)
	}

	// The supply grows: a later poll of the loop publishes it.
	if err := f.sim.SetSupply(tok.Mint, 1_000_000_000_000_001); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, d := f.supplyDoc(t); return d.TotalRaw == "1000000000000001" })
	if _, d := f.supplyDoc(t); len(d.Warnings) == 0 || d.Warnings[0].Code != WarnTotalAboveMax {
		t.Errorf("warnings %v", d.Warnings)
	}

	// An outage: the documents stay, the status record tells.
	// The document is read once a poll has failed: a poll that began
	// before the fault may still write, one after a failure may not.
	failures := func(n int) func() bool {
		return func() bool {
			sts, err := f.store.ReadStatuses(context.Background())
			return err == nil && sts[contract.CollectorSupply].Runs[contract.DomainSupply].ConsecutiveFailures >= n
		}
	}
	f.sim.Faults().Inject("*", fault.Fault{Kind: fault.HTTP503})
	waitFor(t, failures(1))
	good := string(f.raw(t, contract.DomainSupply))
	waitFor(t, failures(3))
	if got := string(f.raw(t, contract.DomainSupply)); got != good {
		t.Error("the outage changed the supply document")
	}
	sts, err := f.store.ReadStatuses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run := sts[contract.CollectorSupply].Runs[contract.DomainSupply]
	if run.ErrorKind != contract.ErrKindUnavailable || run.LastSuccessAt == nil || strings.Contains(run.Error, secretKey) {
		t.Errorf("status %+v", run)
	}
	f.sim.Faults().ClearAll()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
	f.assertNoSecret(t, "logs", f.logs.String())
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLoadConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c, err := LoadConfig()
		want := Config{Commitment: CommitmentFinalized, RPCTimeout: 10 * time.Second, RetryAttempts: 3, RetryBase: time.Second,
			Quorum: "majority", NodeMaxLag: 150, WSPing: 10 * time.Second, WSSilence: 30 * time.Second,
			WSBackoff: time.Second, WSBackoffMax: time.Minute}
		if err != nil || c != want || DefaultConfig() != want {
			t.Errorf("LoadConfig() = %+v, %v; DefaultConfig() = %+v; want %+v", c, err, DefaultConfig(), want)
		}
	})
	t.Run("set", func(t *testing.T) {
		t.Setenv("SUPPLY_COMMITMENT", "confirmed")
		t.Setenv("SUPPLY_RPC_TIMEOUT", "3s")
		t.Setenv("SUPPLY_RETRY_ATTEMPTS", "5")
		t.Setenv("SUPPLY_RETRY_BASE", "250ms")
		t.Setenv("SUPPLY_QUORUM", "2")
		t.Setenv("SUPPLY_NODE_MAX_LAG", "1000")
		t.Setenv("SUPPLY_WS_PING", "5s")
		t.Setenv("SUPPLY_WS_SILENCE", "12s")
		t.Setenv("SUPPLY_WS_BACKOFF", "2s")
		t.Setenv("SUPPLY_WS_BACKOFF_MAX", "2m")
		c, err := LoadConfig()
		want := Config{Commitment: "confirmed", RPCTimeout: 3 * time.Second, RetryAttempts: 5, RetryBase: 250 * time.Millisecond,
			Quorum: "2", NodeMaxLag: 1000, WSPing: 5 * time.Second, WSSilence: 12 * time.Second,
			WSBackoff: 2 * time.Second, WSBackoffMax: 2 * time.Minute}
		if err != nil || c != want {
			t.Errorf("LoadConfig() = %+v, %v", c, err)
		}
	})
	for name, env := range map[string][2]string{
		"SUPPLY_COMMITMENT":     {"SUPPLY_COMMITMENT", "recent"},
		"SUPPLY_RPC_TIMEOUT":    {"SUPPLY_RPC_TIMEOUT", "-1s"},
		"SUPPLY_RETRY_ATTEMPTS": {"SUPPLY_RETRY_ATTEMPTS", "0"},
		"SUPPLY_RETRY_BASE":     {"SUPPLY_RETRY_BASE", "0s"},
		"SUPPLY_QUORUM":         {"SUPPLY_QUORUM", "most"},
		"SUPPLY_QUORUM 0":       {"SUPPLY_QUORUM", "0"},
		"SUPPLY_RPC_TIMEOUT ":   {"SUPPLY_RPC_TIMEOUT", "soon"},
		"SUPPLY_WS_SILENCE":     {"SUPPLY_WS_SILENCE", "5s"}, // not above SUPPLY_WS_PING
		"SUPPLY_WS_PING":        {"SUPPLY_WS_PING", "0s"},
		"SUPPLY_WS_BACKOFF_MAX": {"SUPPLY_WS_BACKOFF_MAX", "10ms"},
	} {
		t.Run("bad "+name, func(t *testing.T) {
			t.Setenv(env[0], env[1])
			if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), env[0]) {
				t.Errorf("err %v, want one naming %s", err, env[0])
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	mint := key("classic-9")
	good := func() (config.Common, config.Token, Config, *store.Store) {
		return testCommon("http://127.0.0.1:1", time.Second), officialToken(mint), testConfig(), store.New(store.NewMemory(), mint)
	}
	cases := map[string]struct {
		mutate func(*config.Common, *config.Token, *Config, **store.Store)
		want   string
	}{
		"bad mint": {func(_ *config.Common, tk *config.Token, _ *Config, st **store.Store) { tk.Mint = "nope" }, "mint"},
		"store of another mint": {func(_ *config.Common, _ *config.Token, _ *Config, st **store.Store) {
			*st = store.New(store.NewMemory(), key("other"))
		}, "store serves"},
		"no store":       {func(_ *config.Common, _ *config.Token, _ *Config, st **store.Store) { *st = nil }, "Store"},
		"bad max supply": {func(_ *config.Common, tk *config.Token, _ *Config, _ **store.Store) { tk.MaxSupply = "1.5" }, "max_supply"},
		"no max supply":  {func(_ *config.Common, tk *config.Token, _ *Config, _ **store.Store) { tk.MaxSupply = "" }, "max_supply: missing"},
		"bad commitment": {func(_ *config.Common, _ *config.Token, c *Config, _ **store.Store) { c.Commitment = "max" }, "SUPPLY_COMMITMENT"},
		"bad timing": {func(c *config.Common, _ *config.Token, _ *Config, _ **store.Store) {
			c.Metadata = config.DomainTiming{Refresh: time.Hour, StaleAfter: time.Hour, TTL: time.Hour}
		}, "metadata timing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			common, tok, cfg, st := good()
			c.mutate(&common, &tok, &cfg, &st)
			_, err := New(common, tok, cfg, deps(st))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New = %v, want an error naming %q", err, c.want)
			}
		})
	}
	common, tok, cfg, st := good()
	tok.MaxSupply = config.MaxSupplyNone // stated: the issuer discloses none
	c, err := New(common, tok, cfg, deps(st))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func deps(st *store.Store) collector.Deps { return collector.Deps{Store: st} }
