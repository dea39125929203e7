// Command holders is the holders collector of tokendata: it counts the
// token's unique holders on HOLDERS_REFRESH and writes them to Redis.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

func main() {
	log := logging.New(os.Stdout, "holders", slog.LevelInfo)
	ctx, stop := lifecycle.SignalContext(context.Background())
	defer stop()
	if err := run(ctx); err != nil {
		log.Error("exit", "err", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	common, err := config.LoadCommon()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, _ := config.ParseLevel(common.LogLevel) // validated by LoadCommon
	log := logging.New(os.Stdout, "holders", level)
	cfg, err := holders.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	token, _, err := config.ResolveToken(common, false)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if common.RedisURL == "" {
		return errors.New("config: REDIS_URL: required (the in-memory store is for standalone only)")
	}
	logging.Start(log, struct {
		Common  config.Common
		Holders holders.Config
		Mint    string
	}{common, cfg, token.Mint})

	opts, err := store.ParseRedisURL(common.RedisURL.Reveal())
	if err != nil {
		return fmt.Errorf("config: REDIS_URL: %s", config.Redact(err.Error(), common.RedisURL))
	}
	backend := store.NewRedis(opts)
	defer func() { _ = backend.Close() }()

	reg := ops.NewRegistry("holders")
	c, err := holders.New(common, token, cfg, collector.Deps{
		Store: store.New(backend, token.Mint), Metrics: collector.NewMetrics(reg), Registry: reg, Log: log,
	})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var ready ops.Readiness
	ready.Set(true) // a collector stays ready while its upstream is down
	opsSrv := &lifecycle.Server{
		Name: "ops", Srv: &http.Server{Addr: common.OpsAddr, Handler: ops.Handler(reg, ready.Ready), ReadHeaderTimeout: 5 * time.Second},
		BeforeDrain: func() { ready.Set(false) }, Drain: common.DrainDelay, Timeout: common.ShutdownTimeout, Log: log,
	}
	return lifecycle.Run(ctx, opsSrv.Run, c.Run)
}
