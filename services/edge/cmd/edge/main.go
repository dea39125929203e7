// Command edge is the public API of tokendata: it serves every /api/ path
// from a snapshot of the documents the collectors write to Redis. See
// package edge.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/shared/process"
)

func main() { process.Main("edge", run) }

func run(ctx context.Context, out io.Writer) error {
	p, err := process.Setup("edge", out)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg, err := edge.LoadConfig()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	p.LogStart(cfg)
	srv, err := edge.New(p.Common, p.Token, cfg, edge.Deps{Store: p.Store, Registry: p.Registry, Log: p.Log})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// Ready once the edge holds a snapshot; not while stopping.
	return p.Serve(ctx, srv.Ready, srv.Run)
}
