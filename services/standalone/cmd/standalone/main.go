// Command standalone runs the collectors and the edge in one process:
//
//	standalone            serve (demo mode without TOKEN_CONFIG/TOKEN_MINT)
//	standalone simulate   run only the upstream simulator and print its URLs
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tokendata/tokendata/services/standalone"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
)

func main() {
	ctx, stop := lifecycle.SignalContext(context.Background())
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "standalone:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	common, err := standalone.LoadCommon()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, _ := config.ParseLevel(common.LogLevel)
	log := logging.New(os.Stdout, "standalone", level)
	switch cmd {
	case "serve":
		return standalone.Run(ctx, standalone.Options{Common: common, Log: log, Banner: os.Stderr})
	case "simulate":
		return standalone.Simulate(ctx, common, os.Stdout)
	}
	return standalone.ErrUsage
}
