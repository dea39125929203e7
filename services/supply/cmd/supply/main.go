// Command supply is the supply service of tokendata (thin until its issue lands:
// it serves the ops port only).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
)

func main() {
	log := logging.New(os.Stdout, "supply", slog.LevelInfo)
	ctx, stop := lifecycle.SignalContext(context.Background())
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("exit", "err", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	cfg, err := config.LoadCommon()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	logging.Start(log, cfg)
	reg := ops.NewRegistry("supply")
	var ready ops.Readiness
	ready.Set(true)
	opsSrv := &lifecycle.Server{
		Name: "ops", Srv: &http.Server{Addr: cfg.OpsAddr, Handler: ops.Handler(reg, ready.Ready), ReadHeaderTimeout: 5e9},
		BeforeDrain: func() { ready.Set(false) }, Drain: cfg.DrainDelay, Timeout: cfg.ShutdownTimeout, Log: log,
	}
	return lifecycle.Run(ctx, opsSrv.Run)
}
