// Command supply is the supply collector of tokendata: it writes the
// supply and metadata documents of the configured token to Redis, and
// serves metrics and probes on the ops port.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

func main() {
	ctx, stop := lifecycle.SignalContext(context.Background())
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		logging.New(os.Stdout, "supply", slog.LevelInfo).Error("exit", "err", err.Error())
		os.Exit(1)
	}
}

// run reads the configuration, then runs the collector and the ops server
// until ctx is done. Log lines go to out.
func run(ctx context.Context, out io.Writer) error {
	common, err := config.LoadCommon()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, _ := config.ParseLevel(common.LogLevel) // validated by LoadCommon
	log := logging.New(out, "supply", level)
	cfg, err := supply.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	token, _, err := config.ResolveToken(common, false)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if common.RedisURL == "" {
		return errors.New("config: REDIS_URL: required (the supply service writes to Redis; standalone runs on the in-memory store)")
	}
	timings := map[string]string{}
	for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMetadata} {
		t := common.Timings()[d]
		timings[string(d)] = fmt.Sprintf("refresh %s, stale after %s, ttl %s", t.Refresh, t.StaleAfter, t.TTL)
	}
	logging.Start(log, map[string]any{
		"common": common, "supply": map[string]any{
			"commitment": cfg.Commitment, "rpc_timeout": cfg.RPCTimeout.String(),
			"retry_attempts": cfg.RetryAttempts, "retry_base": cfg.RetryBase.String(),
		},
		"mint": token.Mint, "timings": timings,
	})

	opts, err := store.ParseRedisURL(common.RedisURL.Reveal())
	if err != nil {
		return fmt.Errorf("config: REDIS_URL: %w", err)
	}
	st := store.New(store.NewRedis(opts), token.Mint)
	defer func() { _ = st.Close() }()

	reg := ops.NewRegistry("supply")
	c, err := supply.New(common, token, cfg, collector.Deps{
		Store: st, Metrics: collector.NewMetrics(reg), Registry: reg, Log: log,
	})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// A collector stays ready while its upstream is down: that is a metric
	// and an alert, not a restart.
	var ready ops.Readiness
	ready.Set(true)
	opsSrv := &lifecycle.Server{
		Name: "ops", Srv: &http.Server{Addr: common.OpsAddr, Handler: ops.Handler(reg, ready.Ready), ReadHeaderTimeout: 5 * time.Second},
		BeforeDrain: func() { ready.Set(false) }, Drain: common.DrainDelay, Timeout: common.ShutdownTimeout, Log: log,
	}
	return lifecycle.Run(ctx, opsSrv.Run, c.Run)
}
