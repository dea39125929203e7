// Command supply is the supply collector of tokendata: it writes the
// supply and metadata documents of the configured token to Redis, and
// serves metrics and probes on the ops port. See package supply.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/cli"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { cli.Main(app) }

var app = process.Service{
	Name: "supply",
	About: `The supply collector of tokendata: it reads the token's supply, mint account and
on-chain metadata from the Solana RPC node of SOLANA_RPC_URL and writes the supply
and metadata documents to Redis (REDIS_URL).`,
	ServeHelp: "Polls the ledger every SUPPLY_REFRESH and METADATA_REFRESH; metrics and probes on OPS_ADDR.",
	Serve:     run,
	Probe: func(ctx context.Context, c *process.Checked, r *check.Report) {
		supply.Probe(ctx, c.Common, c.Token, r)
	},
}.App()

func run(ctx context.Context, out io.Writer) error {
	p, err := process.Setup("supply", out)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg, err := supply.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	p.LogStart(cfg)
	c, err := supply.New(p.Common, p.Token, cfg, collector.NewDepsOf(p.Common, p.Store, p.Registry, p.Log))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return p.Serve(ctx, nil, c.Run)
}
