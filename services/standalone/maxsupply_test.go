package standalone_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/standalone"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/logging"
)

// TestLiveModeRequiresMaxSupply: a token named by its mint alone does not
// start with an invented maximum supply; the error says what to set.
func TestLiveModeRequiresMaxSupply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := standalone.Run(ctx, standalone.Options{
		Common: config.Common{TokenMint: config.DemoMint},
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err == nil || !strings.Contains(err.Error(), "TOKEN_MAX_SUPPLY") || !strings.Contains(err.Error(), "none") {
		t.Fatalf("Run = %v, want a refusal naming TOKEN_MAX_SUPPLY", err)
	}
}

// TestSimulatePrintsMaxSupply: the variables `standalone simulate` prints
// are enough to start a service on the simulated token, maximum supply
// included.
func TestSimulatePrintsMaxSupply(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &logging.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- standalone.Simulate(ctx, config.Common{}, standalone.DefaultSimulateOptions(), out, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Simulate: %v", err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "GECKOTERMINAL_URL="); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing printed: %q", out.String())
		}
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	tok, _, err := config.ResolveToken(config.Common{TokenMint: vars["TOKEN_MINT"], TokenMaxSupply: vars["TOKEN_MAX_SUPPLY"]}, false)
	if err != nil || tok.MaxSupply != config.DemoMaxSupply {
		t.Errorf("the printed token %q does not resolve: %+v %v", out.String(), tok, err)
	}
}
