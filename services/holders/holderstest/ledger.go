package holderstest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// Account is the test's own record of a token account.
type Account struct {
	Owner  string
	Amount uint64
	Closed bool
}

// Ledger is a simulator with one token and the test's record of its
// accounts.
type Ledger struct {
	T       testing.TB
	Sim     *solanasim.Server
	URL     string // the simulator's (or its node's) base URL
	Token   solanasim.Token
	Mint    tally.Owner
	Program string // the token's program ID
	// Accounts is the test's record, by address: filled by Enumerate,
	// kept by Record.
	Accounts map[string]*Account
	// NewLive makes the tally an enumeration seeds (tally.NewLive when
	// nil, or a Follower's Tally).
	NewLive func(slot uint64) *tally.Live
}

// NewLedger is the ledger of tok on the simulator s served at url, with
// an empty record.
func NewLedger(t testing.TB, s *solanasim.Server, url string, tok solanasim.Token) *Ledger {
	t.Helper()
	return &Ledger{T: t, Sim: s, URL: url, Token: tok, Mint: MintOf(t, tok.Mint), Program: tok.Program.ID(),
		Accounts: map[string]*Account{}}
}

// StartNode starts a simulator serving tok and a node of its own, which
// serves until ctx ends (its socket can be made to fail), and returns the
// ledger read through that node.
func StartNode(ctx context.Context, t testing.TB, tok solanasim.Token) (*Ledger, *solanasim.Node) {
	t.Helper()
	s, _ := simtest.StartTB(t, tok)
	node := s.NewNode()
	url, err := node.StartOn(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return NewLedger(t, s, url, tok), node
}

// Enumerate seeds a tally as the collector reads the ledger: its
// getProgramAccounts queries (dataSlice owner and amount, with their
// context; Token-2022's accounts in two, dataSize 165 and account type 2
// at offset 165, as a node refuses the mint filter alone) streamed into
// DecodeProgramAccountsLive. The test's own record of the accounts comes
// from the same queries with whole account data, read with
// encoding/json. No holder changes meanwhile, so every answer has one
// context slot.
func (n *Ledger) Enumerate() *tally.Live {
	t := n.T
	byMint := map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": n.Token.Mint}}
	queries := [][]any{{byMint, map[string]any{"dataSize": 165}}}
	if n.Token.Program == solanasim.ProgramToken2022 {
		queries = append(queries, []any{byMint, map[string]any{"memcmp": map[string]any{"offset": 165, "bytes": "3"}}})
	}
	// gpa is one getProgramAccounts answer's whole body.
	gpa := func(filters []any, slice bool) []byte {
		cfg := map[string]any{"commitment": "finalized", "encoding": "base64", "filters": filters, "withContext": true}
		if slice {
			cfg["dataSlice"] = map[string]any{"offset": 32, "length": 40}
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getProgramAccounts",
			"params": []any{n.Program, cfg}})
		resp, err := http.Post(n.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return answer
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
		if err := json.Unmarshal(gpa(filters, false), &out); err != nil || out.Result.Context.Slot == 0 {
			t.Fatalf("getProgramAccounts: %v %s", err, out.Error)
		}
		for _, a := range out.Result.Value {
			data, err := base64.StdEncoding.DecodeString(a.Account.Data[0])
			if err != nil {
				t.Fatal(err)
			}
			n.Accounts[a.Pubkey] = &Account{Owner: base58.Encode(data[32:64]), Amount: binary.LittleEndian.Uint64(data[64:72])}
		}
		if l == nil {
			slot = out.Result.Context.Slot
			if n.NewLive == nil {
				n.NewLive = tally.NewLive
			}
			l = n.NewLive(slot)
		}
		got, err := wire.DecodeProgramAccountsLive(bytes.NewReader(gpa(filters, true)), l, nil)
		if err != nil || got != slot || out.Result.Context.Slot != slot {
			t.Fatalf("getProgramAccounts into the tally: slot %d, %v; want slot %d (and %d)", got, err, slot, out.Result.Context.Slot)
		}
	}
	n.Check(l, 0)
	return l
}

// Record takes a change's accounts into the test's record and returns
// how many notifications it makes (a closed account makes none).
func (n *Ledger) Record(ch solanasim.HolderChange, err error) (solanasim.HolderChange, int) {
	n.T.Helper()
	if err != nil {
		n.T.Fatal(err)
	}
	notes := 0
	for _, a := range ch.Accounts {
		n.Accounts[a.Address] = &Account{Owner: a.Owner, Amount: a.Amount, Closed: a.Closed}
		if !a.Closed {
			notes++
		}
	}
	return ch, notes
}

// Check compares the tally with the ledger: holders and non-zero
// accounts exact; token accounts as of the enumeration plus those opened
// since, closed ones counted until the next enumeration.
func (n *Ledger) Check(l *tally.Live, closed int) {
	n.T.Helper()
	truth, _ := n.Sim.Truth(n.Token.Mint)
	if l.Holders() != uint64(truth.Holders) || l.NonZeroAccounts() != uint64(truth.NonZeroAccounts) ||
		l.TokenAccounts() != uint64(truth.TokenAccounts+closed) {
		n.T.Fatalf("live: %d holders, %d non-zero accounts, %d token accounts; the ledger: %d, %d, %d (+%d closed)",
			l.Holders(), l.NonZeroAccounts(), l.TokenAccounts(), truth.Holders, truth.NonZeroAccounts, truth.TokenAccounts, closed)
	}
}

// Pick returns an open account of the record that cond accepts, at
// random (r decides).
func (n *Ledger) Pick(r *rand.Rand, cond func(*Account) bool) string {
	var keys []string
	for k, a := range n.Accounts {
		if !a.Closed && cond(a) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		n.T.Fatal("no account to pick")
	}
	// map order is random: sort for a run the seed decides
	slices.Sort(keys)
	return keys[r.IntN(len(keys))]
}
