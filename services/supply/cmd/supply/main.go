// Command supply is the supply collector of tokendata: it writes the
// supply and metadata documents of the configured token to Redis, and
// serves metrics and probes on the ops port. See package supply.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/supply"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { process.Main("supply", run) }

// run reads the configuration, then runs the collector and the ops server
// until ctx is done. Log lines go to out.
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
	c, err := supply.New(p.Common, p.Token, cfg, collector.NewDeps(p.Store, p.Registry, p.Log))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return p.Serve(ctx, nil, c.Run)
}
