// Command market is the market collector of tokendata: it polls
// DexScreener (GeckoTerminal as the fallback) and writes the market
// document to Redis. See package market.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/tokendata/tokendata/services/market"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

func main() {
	log := logging.New(os.Stdout, "market", slog.LevelInfo)
	ctx, stop := lifecycle.SignalContext(context.Background())
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("exit", "err", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	common, err := config.LoadCommon()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if lvl, err := config.ParseLevel(common.LogLevel); err == nil {
		log = logging.New(os.Stdout, "market", lvl)
	}
	cfg, err := market.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	token, _, err := config.ResolveToken(common, false)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	logging.Start(log, struct {
		Common config.Common
		Market market.Config
		Mint   string
	}{common, cfg, token.Mint})
	if common.RedisURL == "" {
		return errors.New("REDIS_URL: required (the in-memory store is for standalone only)")
	}
	opts, err := store.ParseRedisURL(common.RedisURL.Reveal())
	if err != nil {
		return fmt.Errorf("REDIS_URL: %s", config.Redact(err.Error(), common.RedisURL))
	}
	backend := store.NewRedis(opts)
	defer func() { _ = backend.Close() }()

	reg := ops.NewRegistry("market")
	c, err := market.New(common, token, cfg, collector.Deps{
		Store:    store.New(backend, token.Mint),
		Metrics:  collector.NewMetrics(reg),
		Registry: reg,
		Log:      log,
	})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// A collector stays ready while its upstream is down: that is a
	// metric and an alert, not a restart.
	var ready ops.Readiness
	ready.Set(true)
	opsSrv := &lifecycle.Server{
		Name: "ops", Srv: &http.Server{Addr: common.OpsAddr, Handler: ops.Handler(reg, ready.Ready), ReadHeaderTimeout: 5 * time.Second},
		BeforeDrain: func() { ready.Set(false) }, Drain: common.DrainDelay, Timeout: common.ShutdownTimeout, Log: log,
	}
	return lifecycle.Run(ctx, opsSrv.Run, c.Run)
}
