// Command edge is the public API of tokendata: it serves every endpoint of
// the contract from a snapshot of Redis, and the ops port (metrics,
// probes, pprof).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

func main() {
	log := logging.New(os.Stdout, "edge", slog.LevelInfo)
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
	cfg, err := edge.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if level, err := config.ParseLevel(common.LogLevel); err == nil {
		log = logging.New(os.Stdout, "edge", level)
	}
	logging.Start(log, struct {
		Common config.Common
		Edge   edge.Config
	}{common, cfg})
	token, _, err := config.ResolveToken(common, false)
	if err != nil {
		return err
	}
	if common.RedisURL == "" {
		return errors.New("REDIS_URL: required by the edge (standalone runs without Redis)")
	}
	opts, err := store.ParseRedisURL(common.RedisURL.Reveal())
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	st := store.New(store.NewRedis(opts), token.Mint)
	defer func() { _ = st.Close() }()

	reg := ops.NewRegistry("edge")
	srv, err := edge.New(common, token, cfg, edge.Deps{Store: st, Registry: reg, Log: log})
	if err != nil {
		return err
	}
	// Readiness follows the edge: ready once it holds a snapshot, not while
	// draining (the API server's stop flips it before its drain delay).
	opsSrv := &lifecycle.Server{
		Name:  "ops",
		Srv:   &http.Server{Addr: common.OpsAddr, ReadHeaderTimeout: 5 * time.Second, Handler: ops.Handler(reg, srv.Ready)},
		Drain: common.DrainDelay, Timeout: common.ShutdownTimeout, Log: log,
	}
	return lifecycle.Run(ctx, srv.Run, opsSrv.Run)
}
