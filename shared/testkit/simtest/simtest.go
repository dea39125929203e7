// Package simtest starts the Solana simulator for a test.
package simtest

import (
	"context"
	"testing"

	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// StartTB starts a simulator serving tokens, stops it when the test ends,
// and returns it with its base URL.
func StartTB(tb testing.TB, tokens ...solanasim.Token) (*solanasim.Server, string) {
	tb.Helper()
	s := solanasim.New()
	for _, tok := range tokens {
		if err := s.AddToken(tok); err != nil {
			tb.Fatal(err)
		}
	}
	url, err := s.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s, url
}
