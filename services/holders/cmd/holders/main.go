// Command holders is the holders collector of tokendata: it counts the
// token's unique holders on HOLDERS_REFRESH and writes them to Redis. See
// package holders.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/cli"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { cli.Main(app) }

var limits = holders.DefaultCheckLimits

var app = process.Service{
	Name: "holders",
	About: `The holders collector of tokendata: it enumerates the token's accounts on the RPC
node of HOLDERS_RPC_URL (or SOLANA_RPC_URL), by getProgramAccounts or DAS
getTokenAccounts (HOLDERS_METHOD), and writes the number of holders to Redis.`,
	ServeHelp:  "Counts the holders every HOLDERS_REFRESH; metrics and probes on OPS_ADDR.",
	Serve:      run,
	CheckFlags: limits.Flags,
	Probe: func(ctx context.Context, c *process.Checked, r *check.Report) {
		holders.Probe(ctx, c.Common, c.Token, limits, r)
	},
}.App()

func run(ctx context.Context, out io.Writer) error {
	p, err := process.Setup("holders", out)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg, err := holders.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	p.LogStart(cfg)
	c, err := holders.New(p.Common, p.Token, cfg, collector.NewDepsOf(p.Common, p.Store, p.Registry, p.Log))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return p.Serve(ctx, nil, c.Run)
}
