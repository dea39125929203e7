package wire_test

import (
	"crypto/sha256"
	"testing"

	"github.com/mr-tron/base58"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// key returns a deterministic valid address for name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return base58.Encode(h[:])
}

// The tokens of the tests, as the collector's tests have them
// (services/holders/holders_test.go).
var (
	classicMint = key("holders classic mint")
	t22Mint     = key("holders t22 mint")
)

func classicToken(n int) solanasim.Token {
	return solanasim.Token{Mint: classicMint, Program: solanasim.ProgramToken, Decimals: 9,
		Supply:  999_999_999_123_456_789,
		Holders: solanasim.Holders{Accounts: n, Seed: 7, MultiAccountShare: 0.3, ZeroShare: 0.1}}
}

func t22Token(n int) solanasim.Token {
	return solanasim.Token{Mint: t22Mint, Program: solanasim.ProgramToken2022, Decimals: 6,
		Supply: 5_000_000_000_000_000,
		Holders: solanasim.Holders{Accounts: n, Seed: 9, MultiAccountShare: 0.5, AccountsPerOwner: 4,
			ZeroShare: 0.2, ExtendedShare: 0.6}}
}
