package holders_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/follow"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/pubsub"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// The tests' record of a simulator's ledger and a Follower kept on a
// simulator node's socket, for the live count's tests: the same helpers
// as the live tally's (services/holders/wire/live_test.go) and the
// Follower's (services/holders/follow/follow_test.go and
// helpers_test.go).

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

// followNode is a Follower kept by pubsub.Keep on a simulator node's real
// socket, as the collector will keep it.
type followNode struct {
	*liveNode
	f         *follow.Follower
	connected chan struct{}
}

func startFollow(t *testing.T, tok solanasim.Token) *followNode {
	t.Helper()
	s, _ := simtest.StartTB(t, tok)
	node := s.NewNode()
	ctx, cancel := context.WithCancel(context.Background())
	url, err := node.StartOn(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := &liveNode{t: t, s: s, url: url, tok: tok, accts: map[string]*acct{}, program: tok.Program.ID()}
	n.mint = mintOf(t, tok.Mint)
	fw := &followNode{liveNode: n, f: follow.New(n.mint, n.program, 0, 10_000), connected: make(chan struct{}, 16)}
	n.newLive = fw.f.Tally
	done := make(chan struct{})
	go func() {
		defer close(done)
		pubsub.Keep(ctx, pubsub.Config{URL: config.Secret("ws" + strings.TrimPrefix(url, "http")),
			Ping: time.Second, Silence: 5 * time.Second, Backoff: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
			MaxMessage: 1 << 20},
			pubsub.Request{Method: "programSubscribe", Params: wire.ProgramSubscribeParams(n.program, n.tok.Mint, "finalized")},
			pubsub.Hooks{
				State: func(state string, _ error) {
					if state == contract.SubscriptionConnected {
						fw.f.Connected()
						fw.connected <- struct{}{}
						return
					}
					fw.f.Lost()
				},
				Notification: func(msg []byte, _ uint64) error { return fw.f.Notify(msg) },
			})
	}()
	t.Cleanup(func() { cancel(); <-done })
	fw.waitConnected()
	return fw
}

func (fw *followNode) waitConnected() {
	fw.t.Helper()
	select {
	case <-fw.connected:
	case <-time.After(10 * time.Second):
		fw.t.Fatal("not subscribed within 10 s")
	}
}

// exact waits for the live count to be the ledger's (closed: the
// accounts closed since the anchor, which it still counts).
func (fw *followNode) exact(what string, closed int) follow.LiveCount {
	fw.t.Helper()
	var c follow.LiveCount
	var ok bool
	deadline := time.Now().Add(5 * time.Second)
	for {
		truth, _ := fw.s.Truth(fw.tok.Mint)
		c, _, ok = fw.f.Take()
		if ok && c.Holders == uint64(truth.Holders) && c.NonZeroAccounts == uint64(truth.NonZeroAccounts) &&
			c.TokenAccounts == uint64(truth.TokenAccounts+closed) {
			return c
		}
		if time.Now().After(deadline) {
			fw.t.Fatalf("%s: live %+v (live %v); the ledger: %d holders, %d non-zero, %d token accounts (+%d closed)",
				what, c, ok, truth.Holders, truth.NonZeroAccounts, truth.TokenAccounts, closed)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pickAny is an account of the ledger with a positive balance: the
// largest (the test's record is filled by enumerate, which this test does
// not run).
func (fw *followNode) pickAny() string {
	fw.t.Helper()
	largest, _ := fw.s.Largest(fw.tok.Mint)
	for _, a := range largest {
		if a.Amount > 0 {
			return a.Address
		}
	}
	fw.t.Fatal("no account with a balance")
	return ""
}

func mintOf(t *testing.T, mint string) tally.Owner {
	t.Helper()
	b, err := base58.Decode(mint)
	if err != nil || len(b) != 32 {
		t.Fatalf("mint %q: %v", mint, err)
	}
	return tally.Owner(b)
}
