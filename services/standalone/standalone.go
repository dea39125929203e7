// Package standalone runs the whole service in one process: the supply,
// market and holders collectors and the edge, over one store (in memory
// unless REDIS_URL is set), with one ops listener. It composes the very
// packages the separate services run; it copies none of their code.
//
// With no token configured it runs in demo mode: the built-in simulator is
// every upstream (Solana RPC, DexScreener, GeckoTerminal), which it says in
// its first log line and in /api/status.
package standalone

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/market"
	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/process"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/store"
)

// Options are what Run needs besides the environment.
type Options struct {
	// Common is the shared configuration (config.LoadCommon).
	Common config.Common
	// Log is the process logger.
	Log *slog.Logger
	// Banner receives the human-readable "where to look" lines; nil: none.
	Banner io.Writer
	// APIListener and OpsListener, when set, replace HTTP_ADDR and
	// OPS_ADDR (tests listen on free ports).
	APIListener, OpsListener net.Listener
	// Sim tunes the demo simulator; zero values take the demo defaults.
	Sim simulator.Options
	// Started, when set, is called once everything is built and serving,
	// with the effective URLs of the simulator in demo mode.
	Started func(Info)
}

// Info describes a started standalone process.
type Info struct {
	Demo bool
	Mint string
	// Token is the effective token (in demo mode, with the simulator's
	// pairs), for another edge over the same store.
	Token config.Token
	API   string
	Ops   string
	Sim   *simulator.Sim
	Store *store.Store
}

// DemoSim are the demo defaults: a Token-2022 token with 5,000 token
// accounts whose price drifts every 15 s and whose supply grows every
// minute, so a newcomer sees the numbers move.
var DemoSim = simulator.Options{Seed: 1, Accounts: 5000, PriceEvery: 15 * time.Second, SupplyEvery: time.Minute}

// DefaultOpsAddr is standalone's OPS_ADDR when the variable is not set:
// loopback, since one process on a host is scraped from that host (the
// cluster services listen on :9090, where the cluster's Prometheus
// reaches them). Set OPS_ADDR=:9090 to open it.
const DefaultOpsAddr = "127.0.0.1:9090"

// LoadCommon is config.LoadCommon with standalone's own default for
// OPS_ADDR.
func LoadCommon() (config.Common, error) {
	c, err := config.LoadCommon()
	if err != nil {
		return c, err
	}
	if _, set := os.LookupEnv("OPS_ADDR"); !set {
		c.OpsAddr = DefaultOpsAddr
	}
	return c, nil
}

// Run builds everything and serves until ctx is done.
func Run(ctx context.Context, o Options) error {
	common, log := o.Common, o.Log
	token, demo, err := config.ResolveToken(common, true)
	if err != nil {
		return err
	}
	var sim *simulator.Sim
	if demo {
		if sim, err = startDemo(ctx, log, o.Sim, token.Mint); err != nil {
			return err
		}
		defer sim.Close()
		common, token = onSimulator(common, token, sim)
	}
	logging.Start(log, common)

	store.LogClientTo(log)
	st, backend, err := process.OpenStore(common, token.Mint)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	if demo {
		if err := seedDemo(ctx, log, st, sim, token, common); err != nil {
			return err
		}
	}

	reg := ops.NewRegistry("standalone")
	deps := collector.NewDeps(st, reg, log)
	simulated := demo || common.UpstreamsSimulated // the built-in simulator, or another one
	deps.Simulated = simulated
	edgeDeps := edge.Deps{Store: st, Registry: reg, Log: log.With("component", "edge"), Demo: simulated}
	collectors, api, err := newServices(common, token, deps, edgeDeps, demo)
	if err != nil {
		return err
	}

	apiL, err := listen(o.APIListener, common.HTTPAddr, "HTTP_ADDR")
	if err != nil {
		return err
	}
	opsL, err := listen(o.OpsListener, common.OpsAddr, "OPS_ADDR")
	if err != nil {
		_ = apiL.Close()
		return err
	}
	opsSrv := process.OpsServer(common, reg, api.Ready, opsL, log)

	info := Info{Demo: demo, Mint: token.Mint, Token: token, API: "http://" + hostPort(apiL), Ops: "http://" + hostPort(opsL), Sim: sim, Store: st}
	announce(o, log, info, backend)
	serveAPI := func(ctx context.Context) error { return api.RunOn(ctx, apiL) }
	return lifecycle.RunWithOps(ctx, opsSrv, append([]lifecycle.Actor{serveAPI}, collectors...)...)
}

// startDemo starts the demo simulator of mint (so, or DemoSim when so is
// zero).
func startDemo(ctx context.Context, log *slog.Logger, so simulator.Options, mint string) (*simulator.Sim, error) {
	// The first line says it: nothing served here is real.
	log.Warn("DEMO MODE: serving a simulated token from the built-in simulator; " +
		"set TOKEN_CONFIG (or TOKEN_MINT with TOKEN_MAX_SUPPLY) to serve a real token")
	if so == (simulator.Options{}) {
		so = DemoSim
	}
	so.Mint = mint
	sim, err := simulator.Start(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("demo simulator: %w", err)
	}
	return sim, nil
}

// onSimulator points the upstreams at sim, and gives the token the
// simulator's official pairs and their exchanges.
func onSimulator(common config.Common, token config.Token, sim *simulator.Sim) (config.Common, config.Token) {
	common.SolanaRPCURL = config.Secret(sim.RPCURL)
	common.HoldersRPCURL = ""
	common.DexScreenerURL, common.GeckoTerminalURL = sim.DexScreenerURL, sim.GeckoTerminalURL
	for _, p := range sim.OfficialPairs {
		token.OfficialPairs = append(token.OfficialPairs, config.OfficialPair{Address: p.Address, Dex: p.Dex, Base: p.Base, Quote: p.Quote})
		token.Exchanges = append(token.Exchanges, config.Exchange{Name: p.Dex + " (simulated)", Type: "dex",
			Pair: p.Address, Base: p.Base, Quote: p.Quote, InfoURL: p.URL, Official: true})
	}
	return common, token
}

// seedDemo writes the demo's simulated past into the store.
func seedDemo(ctx context.Context, log *slog.Logger, st *store.Store, sim *simulator.Sim, token config.Token, common config.Common) error {
	started := time.Now()
	n, err := seedHistory(ctx, st, sim, token, common.Timings(), started)
	if err != nil {
		return fmt.Errorf("demo history: %w", err)
	}
	log.Info("demo history seeded: a simulated past, marked simulated", "days", int(SeedSpan.Hours()/24),
		"points", n, "took", time.Since(started).Round(time.Millisecond).String())
	return nil
}

// newServices loads the configuration of the three collectors and of the
// edge, and builds them (the edge with its signing keys); it returns the
// collectors' Run and the edge.
func newServices(common config.Common, token config.Token, deps collector.Deps, edgeDeps edge.Deps, demo bool) ([]lifecycle.Actor, *edge.Server, error) {
	supplyCfg, err := supply.LoadConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("supply config: %w", err)
	}
	holdersCfg, err := holders.LoadConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("holders config: %w", err)
	}
	marketCfg, err := market.LoadConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("market config: %w", err)
	}
	edgeCfg, err := edge.LoadConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("edge config: %w", err)
	}
	sup, err := supply.New(common, token, supplyCfg, withLog(deps, "supply"))
	if err != nil {
		return nil, nil, fmt.Errorf("supply: %w", err)
	}
	mkt, err := market.New(common, token, marketCfg, withLog(deps, "market"))
	if err != nil {
		return nil, nil, fmt.Errorf("market: %w", err)
	}
	hld, err := holders.New(common, token, holdersCfg, withLog(deps, "holders"))
	if err != nil {
		return nil, nil, fmt.Errorf("holders: %w", err)
	}
	// Demo mode signs with a key made for this process (marked generated
	// in /api/status) unless SIGNING_KEY_FILE names one.
	key, prev, err := edge.LoadKeys(demo)
	if err != nil {
		return nil, nil, fmt.Errorf("edge: %w", err)
	}
	edgeDeps.SigningKey, edgeDeps.PreviousKey = key, prev
	api, err := edge.New(common, token, edgeCfg, edgeDeps)
	if err != nil {
		return nil, nil, fmt.Errorf("edge: %w", err)
	}
	return []lifecycle.Actor{sup.Run, mkt.Run, hld.Run}, api, nil
}

// announce logs that the process is ready, writes the banner and calls
// o.Started.
func announce(o Options, log *slog.Logger, info Info, backend string) {
	log.Info("standalone ready", "mint", info.Mint, "demo", info.Demo, "store", backend, "api", info.API, "ops", info.Ops)
	if o.Banner != nil {
		_, _ = fmt.Fprintf(o.Banner, "\ntokendata standalone (%s store%s) for mint %s\n  API:     %s/api/market\n  Status:  %s/api/status\n  OpenAPI: %s/api/openapi.json\n  Metrics: %s/metrics\n\n",
			backend, map[bool]string{true: ", DEMO MODE: simulated upstreams", false: ""}[info.Demo], info.Mint,
			info.API, info.API, info.API, info.Ops)
	}
	if o.Started != nil {
		o.Started(info)
	}
}

func withLog(d collector.Deps, name string) collector.Deps {
	d.Log = d.Log.With("component", name)
	return d
}

func listen(l net.Listener, addr, name string) (net.Listener, error) {
	if l != nil {
		return l, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, addr, err)
	}
	return l, nil
}

// hostPort turns a wildcard listen address into one a browser can open.
func hostPort(l net.Listener) string {
	a := l.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", a.Port)
	}
	return a.String()
}
