// Command holders is the holders collector of tokendata: it counts the
// token's unique holders on HOLDERS_REFRESH and writes them to Redis. See
// package holders.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { process.Main("holders", run) }

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
	c, err := holders.New(p.Common, p.Token, cfg, collector.NewDeps(p.Store, p.Registry, p.Log))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return p.Serve(ctx, nil, c.Run)
}
