// Command market is the market collector of tokendata: it polls
// DexScreener (GeckoTerminal as the fallback) and writes the market
// document to Redis. See package market.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/market"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { process.Main("market", run) }

func run(ctx context.Context, out io.Writer) error {
	p, err := process.Setup("market", out)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg, err := market.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	p.LogStart(cfg)
	c, err := market.New(p.Common, p.Token, cfg, collector.NewDeps(p.Store, p.Registry, p.Log))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return p.Serve(ctx, nil, c.Run)
}
