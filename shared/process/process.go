// Package process is the start-up every service binary shares: signal
// context and exit code, configuration and token, logger, metrics
// registry, store, and the ops listener. A service's main keeps only what
// is its own: its config and its constructor.
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

// Main runs run until SIGINT or SIGTERM; when it fails, it logs one line
// and exits 1. Log lines go to standard output.
func Main(service string, run func(ctx context.Context, out io.Writer) error) {
	ctx, stop := lifecycle.SignalContext(context.Background())
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		logging.New(os.Stdout, service, slog.LevelInfo).Error("exit", "error", err.Error())
		os.Exit(1)
	}
}

// Process is what a service binary runs with.
type Process struct {
	Service  string
	Common   config.Common
	Token    config.Token
	Log      *slog.Logger
	Registry *prometheus.Registry
	Store    *store.Store
}

// Setup reads the common configuration and the token file (TOKEN_CONFIG
// or TOKEN_MINT are required: demo mode is standalone's), builds the
// logger on out and the registry, and connects to Redis (REDIS_URL is
// required: the in-memory store is standalone's). Close releases it.
func Setup(service string, out io.Writer) (*Process, error) {
	common, err := config.LoadCommon()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	level, _ := config.ParseLevel(common.LogLevel) // validated by LoadCommon
	token, _, err := config.ResolveToken(common, false)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if common.RedisURL == "" {
		return nil, fmt.Errorf("config: REDIS_URL: required by the %s service (only standalone runs on its in-memory store)", service)
	}
	log := logging.New(out, service, level)
	store.LogClientTo(log)
	st, _, err := OpenStore(common, token.Mint)
	if err != nil {
		return nil, err
	}
	return &Process{
		Service: service, Common: common, Token: token,
		Log:      log,
		Registry: ops.NewRegistry(service),
		Store:    st,
	}, nil
}

// OpenStore returns the store of mint: Redis when REDIS_URL is set, else
// the in-memory one. backend is "redis" or "memory". A Redis that answers
// but refuses the credentials is an error; one that does not answer yet
// is not (it may be starting: the store reconnects).
func OpenStore(c config.Common, mint string) (st *store.Store, backend string, err error) {
	retention := store.WithRetention(store.Retention{Raw: c.History.RawRetention,
		FiveMin: c.History.FiveMinRetention, Hour: c.History.HourRetention})
	if c.RedisURL == "" {
		return store.New(store.NewMemory(), mint, retention), "memory", nil
	}
	opts, err := store.ParseRedisURL(c.RedisURL.Reveal())
	if err != nil {
		return nil, "", fmt.Errorf("config: REDIS_URL: %s", config.Redact(err.Error(), c.RedisURL))
	}
	if c.RedisPassword != "" {
		opts.Password = c.RedisPassword.Reveal()
	}
	st = store.New(store.NewRedis(opts), mint, retention)
	ctx, cancel := context.WithTimeout(context.Background(), storeCheckTimeout)
	defer cancel()
	if err := st.Ping(ctx); store.IsAuthError(err) {
		_ = st.Close()
		return nil, "", errors.New("config: REDIS_URL: authentication failed (wrong password?)")
	}
	return st, "redis", nil
}

// storeCheckTimeout bounds the check of Redis's credentials at start.
const storeCheckTimeout = 5 * time.Second

// LogStart logs the start line: the common configuration (secrets
// masked), the service's own configuration, and the mint.
func (p *Process) LogStart(serviceConfig any) {
	logging.Start(p.Log, p.Common)
	p.Log.Info("service configuration", "mint", p.Token.Mint, p.Service, serviceConfig)
}

// Serve runs the ops listener and the actors until ctx is done or one
// fails. ready decides readiness besides the drain (nil: always ready, as
// a collector is while its upstream is down: that is a metric and an
// alert, not a restart).
func (p *Process) Serve(ctx context.Context, ready func() bool, actors ...lifecycle.Actor) error {
	opsSrv := OpsServer(p.Common, p.Registry, ready, nil, p.Log)
	return lifecycle.RunWithOps(ctx, opsSrv, actors...)
}

// OpsWriteTimeout bounds one answer of the ops listener (a scrape, a
// probe). A pprof profile or trace extends it by its ?seconds=, which
// ops.MaxProfileSeconds bounds.
const OpsWriteTimeout = 30 * time.Second

// Close releases the store.
func (p *Process) Close() { _ = p.Store.Close() }

// OpsServer is the ops listener (/metrics, /healthz, /readyz, and pprof
// when OPS_PPROF is on) on l, or on OPS_ADDR when l is nil. /readyz
// follows ready and turns false as soon as the stop begins, before the
// drain delay (with DRAIN_MAX above DRAIN_DELAY: when the drain ends).
func OpsServer(c config.Common, reg *prometheus.Registry, ready func() bool, l net.Listener, log *slog.Logger) *lifecycle.Server {
	var stopping ops.Readiness
	isReady := func() bool { return !stopping.Ready() && (ready == nil || ready()) }
	return &lifecycle.Server{
		Name: "ops", Listener: l, Log: log,
		Srv: &http.Server{Addr: c.OpsAddr, Handler: ops.Handler(reg, isReady, c.OpsPprof),
			ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: OpsWriteTimeout, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10},
		BeforeDrain: func() { stopping.Set(true) }, Drain: c.DrainDelay, Timeout: c.ShutdownTimeout,
		StayReady: c.DrainMax > c.DrainDelay,
	}
}
