// Package holderstest holds what the tests of the holders collector and
// of its rooms (services/holders, tally, wire, follow) share: their two
// tokens, a simulator ledger with the tests' own record of its accounts
// (Ledger), and a Follower kept on a simulator node's socket
// (FollowNode). It serves those tests; production code does not import
// it (shared/testkit/layout keeps it out of every binary).
package holderstest

import (
	"crypto/sha256"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// key returns a deterministic valid address for name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return base58.Encode(h[:])
}

// The mints of the tests' two tokens.
var (
	ClassicMint = key("holders classic mint")
	T22Mint     = key("holders t22 mint")
)

// ClassicToken is a token of the classic token program with n accounts:
// some owners hold several, some accounts are empty.
func ClassicToken(n int) solanasim.Token {
	return solanasim.Token{Mint: ClassicMint, Program: solanasim.ProgramToken, Decimals: 9,
		Supply:  999_999_999_123_456_789,
		Holders: solanasim.Holders{Accounts: n, Seed: 7, MultiAccountShare: 0.3, ZeroShare: 0.1}}
}

// T22Token is a Token-2022 token with n accounts: more owners with
// several accounts, more empty ones, and most accounts extended (longer
// than 165 bytes).
func T22Token(n int) solanasim.Token {
	return solanasim.Token{Mint: T22Mint, Program: solanasim.ProgramToken2022, Decimals: 6,
		Supply: 5_000_000_000_000_000,
		Holders: solanasim.Holders{Accounts: n, Seed: 9, MultiAccountShare: 0.5, AccountsPerOwner: 4,
			ZeroShare: 0.2, ExtendedShare: 0.6}}
}

// MintOf decodes mint (base58) into the tallies' key; the test fails if
// it is not 32 bytes.
func MintOf(t testing.TB, mint string) tally.Owner {
	t.Helper()
	b, err := base58.Decode(mint)
	if err != nil || len(b) != 32 {
		t.Fatalf("mint %q: %v", mint, err)
	}
	return tally.Owner(b)
}
