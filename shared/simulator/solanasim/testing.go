package solanasim

import "context"

// TB is the part of testing.TB that StartTB needs (taken as an interface
// so that this package does not link package testing into binaries).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// StartTB starts a server with tokens for a test, stops it when the test
// ends, and returns it with its base URL.
func StartTB(tb TB, tokens ...Token) (*Server, string) {
	tb.Helper()
	s := New()
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
