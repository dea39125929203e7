package follow_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"

	"github.com/mr-tron/base58"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// The tests' tokens and their record of a simulator's ledger: the same
// helpers as the live tally's tests (services/holders/wire/live_test.go)
// and the collector's (services/holders/livenode_test.go), without the
// socket, which a Follower's tests keep with pubsub.Keep.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// key returns a deterministic valid address for name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return base58.Encode(h[:])
}

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

// acct is the test's own record of a token account.
type acct struct {
	owner  string
	amount uint64
	closed bool
}

// liveNode is a simulator with one token and the test's record of its
// accounts.
type liveNode struct {
	t       *testing.T
	s       *solanasim.Server
	url     string
	tok     solanasim.Token
	mint    tally.Owner
	program string
	accts   map[string]*acct
	// newLive makes the tally an enumeration seeds (tally.NewLive, or
	// a Follower's).
	newLive func(slot uint64) *tally.Live
}

// enumerate seeds a tally as the collector reads the ledger: its
// getProgramAccounts queries (dataSlice owner and amount, with their
// context; Token-2022's accounts in two, dataSize 165 and account type 2
// at offset 165, as a node refuses the mint filter alone) streamed into
// DecodeProgramAccountsLive. The test's own record of the accounts comes
// from the same queries with whole account data, read with
// encoding/json. No holder changes meanwhile, so every answer has one
// context slot.
func (n *liveNode) enumerate() *tally.Live {
	t := n.t
	byMint := map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": n.tok.Mint}}
	queries := [][]any{{byMint, map[string]any{"dataSize": 165}}}
	if n.tok.Program == solanasim.ProgramToken2022 {
		queries = append(queries, []any{byMint, map[string]any{"memcmp": map[string]any{"offset": 165, "bytes": "3"}}})
	}
	gpa := func(filters []any, slice bool) *http.Response {
		cfg := map[string]any{"commitment": "finalized", "encoding": "base64", "filters": filters, "withContext": true}
		if slice {
			cfg["dataSlice"] = map[string]any{"offset": 32, "length": 40}
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getProgramAccounts",
			"params": []any{n.program, cfg}})
		resp, err := http.Post(n.url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	var l *tally.Live
	var slot uint64
	for _, filters := range queries {
		var out struct {
			Result struct {
				Context struct {
					Slot uint64 `json:"slot"`
				} `json:"context"`
				Value []struct {
					Pubkey  string `json:"pubkey"`
					Account struct {
						Data []string `json:"data"`
					} `json:"account"`
				} `json:"value"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.NewDecoder(gpa(filters, false).Body).Decode(&out); err != nil || out.Result.Context.Slot == 0 {
			t.Fatalf("getProgramAccounts: %v %s", err, out.Error)
		}
		for _, a := range out.Result.Value {
			data, err := base64.StdEncoding.DecodeString(a.Account.Data[0])
			if err != nil {
				t.Fatal(err)
			}
			n.accts[a.Pubkey] = &acct{owner: base58.Encode(data[32:64]), amount: binary.LittleEndian.Uint64(data[64:72])}
		}
		if l == nil {
			slot = out.Result.Context.Slot
			if n.newLive == nil {
				n.newLive = tally.NewLive
			}
			l = n.newLive(slot)
		}
		got, err := wire.DecodeProgramAccountsLive(gpa(filters, true).Body, l, nil)
		if err != nil || got != slot || out.Result.Context.Slot != slot {
			t.Fatalf("getProgramAccounts into the tally: slot %d, %v; want slot %d (and %d)", got, err, slot, out.Result.Context.Slot)
		}
	}
	n.check(l, 0)
	return l
}

// record takes a change's accounts into the test's record and returns
// how many notifications it makes (a closed account makes none).
func (n *liveNode) record(ch solanasim.HolderChange, err error) (solanasim.HolderChange, int) {
	n.t.Helper()
	if err != nil {
		n.t.Fatal(err)
	}
	notes := 0
	for _, a := range ch.Accounts {
		n.accts[a.Address] = &acct{owner: a.Owner, amount: a.Amount, closed: a.Closed}
		if !a.Closed {
			notes++
		}
	}
	return ch, notes
}

// check compares the tally with the ledger: holders and non-zero
// accounts exact; token accounts as of the enumeration plus those opened
// since, closed ones counted until the next enumeration.
func (n *liveNode) check(l *tally.Live, closed int) {
	n.t.Helper()
	truth, _ := n.s.Truth(n.tok.Mint)
	if l.Holders() != uint64(truth.Holders) || l.NonZeroAccounts() != uint64(truth.NonZeroAccounts) ||
		l.TokenAccounts() != uint64(truth.TokenAccounts+closed) {
		n.t.Fatalf("live: %d holders, %d non-zero accounts, %d token accounts; the ledger: %d, %d, %d (+%d closed)",
			l.Holders(), l.NonZeroAccounts(), l.TokenAccounts(), truth.Holders, truth.NonZeroAccounts, truth.TokenAccounts, closed)
	}
}

// pick returns an account of the record that cond accepts, at random.
func (n *liveNode) pick(r *rand.Rand, cond func(*acct) bool) string {
	var keys []string
	for k, a := range n.accts {
		if !a.closed && cond(a) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		n.t.Fatal("no account to pick")
	}
	// map order is random: sort for a run the seed decides
	slices.Sort(keys)
	return keys[r.IntN(len(keys))]
}
