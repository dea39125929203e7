package standalone

import (
	"context"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
)

// Simulate runs only the simulator for the demo token (or TOKEN_MINT) and
// prints the variables that point the services at it (with the demo
// token's maximum supply, which a token named by its mint alone must
// state), until ctx is done.
// It lets the separate services (or a cluster) run against simulated
// upstreams.
func Simulate(ctx context.Context, c config.Common, out io.Writer) error {
	mint := c.TokenMint
	if mint == "" {
		mint = config.DemoMint
	}
	if err := config.CheckAddress(mint); err != nil {
		return fmt.Errorf("TOKEN_MINT: %w", err)
	}
	so := DemoSim
	so.Mint = mint
	sim, err := simulator.Start(ctx, so)
	if err != nil {
		return err
	}
	defer sim.Close()
	_, _ = fmt.Fprintf(out, "TOKEN_MINT=%s\nTOKEN_MAX_SUPPLY=%s\nSOLANA_RPC_URL=%s\nDEXSCREENER_URL=%s\nGECKOTERMINAL_URL=%s\n",
		mint, config.DemoMaxSupply, sim.RPCURL, sim.DexScreenerURL, sim.GeckoTerminalURL)
	<-ctx.Done()
	return nil
}
