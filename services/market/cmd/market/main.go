// Command market is the market collector of tokendata: it polls
// DexScreener (GeckoTerminal as the fallback) and writes the market
// document to Redis. See package market.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/market"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/cli"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { cli.Main(app) }

var app = process.Service{
	Name: "market",
	About: `The market collector of tokendata: it reads the token's pairs from DexScreener
(DEXSCREENER_URL; GeckoTerminal, GECKOTERMINAL_URL, when DexScreener fails),
selects the price pair and writes the market document to Redis.`,
	ServeHelp: "Polls the aggregators every MARKET_REFRESH; metrics and probes on OPS_ADDR.",
	Serve:     run,
	Probe: func(ctx context.Context, c *process.Checked, r *check.Report) {
		market.Probe(ctx, c.Common, c.Token, r)
	},
}.App()

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
	c, err := market.New(p.Common, p.Token, cfg, collector.NewDepsOf(p.Common, p.Store, p.Registry, p.Log))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return p.Serve(ctx, nil, c.Run)
}
