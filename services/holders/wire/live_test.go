package wire_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// The live tally against the simulator, which speaks programSubscribe as
// a node does: the tally is seeded by a full getProgramAccounts at its
// context slot, and every notification is decoded from the wire and
// applied; after each holder change its figures are the ledger's (the
// simulator's Truth), never one the ledger never had.

// acct is the test's own record of a token account.
type acct struct {
	owner  string
	amount uint64
	closed bool
}

// liveNode is a simulator with one token, a socket subscribed to the
// token program for the mint's accounts, and the test's record of them.
type liveNode struct {
	t       *testing.T
	s       *solanasim.Server
	url     string
	tok     solanasim.Token
	mint    tally.Owner
	program string
	notes   chan []byte
	accts   map[string]*acct
	// newLive makes the tally an enumeration seeds (tally.NewLive, or
	// a Follower's).
	newLive func(slot uint64) *tally.Live
}

// finalizedLag is how far behind the processed slot the simulator's
// finalized commitment answers: a notification's context slot is its
// change's slot less it.
const finalizedLag = 32

func startLive(t *testing.T, tok solanasim.Token) *liveNode {
	t.Helper()
	s, url := simtest.StartTB(t, tok)
	n := &liveNode{t: t, s: s, url: url, tok: tok, notes: make(chan []byte, 1024), accts: map[string]*acct{},
		program: tok.Program.ID()}
	b, _ := base58.Decode(tok.Mint)
	n.mint = tally.Owner(b)
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { _ = c.Close() })
	sub := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "programSubscribe",
		"params": wire.ProgramSubscribeParams(n.program, n.tok.Mint, "finalized")}
	if err := c.WriteJSON(sub); err != nil {
		t.Fatal(err)
	}
	var ok struct {
		Result uint64          `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := c.ReadJSON(&ok); err != nil || ok.Result == 0 {
		t.Fatalf("programSubscribe: %v %s", err, ok.Error)
	}
	go func() {
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				close(n.notes)
				return
			}
			n.notes <- msg
		}
	}()
	return n
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

// apply decodes and applies the next count notifications.
func (n *liveNode) apply(l *tally.Live, count int) {
	n.t.Helper()
	for range count {
		var msg []byte
		select {
		case msg = <-n.notes:
		case <-time.After(5 * time.Second):
			n.t.Fatal("no programNotification within 5 s")
		}
		ch, err := wire.DecodeProgramNotification(msg, &n.mint, n.program)
		if err != nil {
			n.t.Fatalf("%v: %s", err, msg)
		}
		if _, err := l.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount); err != nil {
			n.t.Fatal(err)
		}
	}
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

// TestLiveFollowsTheLedger: 20 changes of each kind (account opened
// empty, new holder, holder sold out, holder back, balance moved, account
// closed), in rounds, with five changes made between the subscription
// and the enumeration (notified before it; those at or before its slot
// are in it already). After each, the tally is the ledger's.
func TestLiveFollowsTheLedger(t *testing.T) {
	for _, tok := range []solanasim.Token{classicToken(300), t22Token(300)} {
		t.Run(tok.Program.ID(), func(t *testing.T) {
			n := startLive(t, tok)
			r := rand.New(rand.NewPCG(1, 2))
			mint := tok.Mint
			early := 0
			for range 5 {
				_, k := n.record(n.s.OpenHolder(mint, 1_000))
				early += k
			}
			l := n.enumerate()
			n.apply(l, early) // all at or before the enumeration's slot
			n.check(l, 0)
			anchor := l.Slot()

			closed := 0
			positive := func(a *acct) bool { return a.amount > 0 }
			zero := func(a *acct) bool { return a.amount == 0 }
			for round := range 20 {
				type step struct {
					kind string
					do   func() (solanasim.HolderChange, error)
				}
				steps := []step{
					{"opened empty", func() (solanasim.HolderChange, error) { return n.s.OpenHolder(mint, 0) }},
					{"new holder", func() (solanasim.HolderChange, error) { return n.s.OpenHolder(mint, 1+r.Uint64N(1e9)) }},
					{"sold out", func() (solanasim.HolderChange, error) {
						return n.s.SetHolderBalance(mint, n.pick(r, positive), 0)
					}},
					{"back", func() (solanasim.HolderChange, error) {
						return n.s.SetHolderBalance(mint, n.pick(r, zero), 1+r.Uint64N(1e6))
					}},
					{"moved", func() (solanasim.HolderChange, error) {
						from := n.pick(r, positive)
						f := n.accts[from]
						var to string
						if round%2 == 1 { // to another account of the same owner, when it has one
							to = n.pick(r, func(a *acct) bool { return a.owner == f.owner })
						}
						if to == from || to == "" {
							to = n.pick(r, func(*acct) bool { return true })
						}
						for to == from {
							to = n.pick(r, func(*acct) bool { return true })
						}
						amount := f.amount // all of it: the sender may stop holding
						if round%4 >= 2 {
							amount = 1 + r.Uint64N(f.amount)
						}
						return n.s.MoveHolderBalance(mint, from, to, amount)
					}},
					{"closed", func() (solanasim.HolderChange, error) {
						return n.s.CloseHolderAccount(mint, n.pick(r, zero))
					}},
				}
				for _, s := range steps {
					ch, notes := n.record(s.do())
					if notes == 0 {
						closed++
					}
					n.apply(l, notes)
					n.check(l, closed)
					if notes > 0 && l.Slot() != ch.Slot-finalizedLag {
						t.Fatalf("round %d, %s: the tally is at slot %d, the change's notification at %d", round, s.kind, l.Slot(), ch.Slot-finalizedLag)
					}
				}
			}
			if l.Slot() <= anchor {
				t.Fatal("no change applied")
			}
		})
	}
}

// TestDecodeProgramNotificationRefuses: what is not a token account of
// the mint under the program is an error, never a change; the slice the
// subscription asks for and the whole account (a node that ignores the
// slice) are both read.
func TestDecodeProgramNotificationRefuses(t *testing.T) {
	n := startLive(t, classicToken(20))
	ch0, k := n.record(n.s.OpenHolder(n.tok.Mint, 5))
	if k != 1 {
		t.Fatal("one notification expected")
	}
	good := <-n.notes
	ch, err := wire.DecodeProgramNotification(good, &n.mint, n.program)
	if err != nil || ch.Amount != 5 || ch.Slot == 0 || ch.Subscription == 0 || base58.Encode(ch.Owner[:]) != ch0.Accounts[0].Owner {
		t.Fatalf("the simulator's notification: %+v %v", ch, err)
	}
	if _, err := wire.DecodeProgramNotification(good, &n.mint, solanasim.Token2022ProgramID); err == nil {
		t.Error("an account of another program was taken")
	}
	var m map[string]any
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	value := m["params"].(map[string]any)["result"].(map[string]any)["value"].(map[string]any)
	account := value["account"].(map[string]any)
	data := account["data"].([]any)
	raw, _ := base64.StdEncoding.DecodeString(data[0].(string))
	if len(raw) != 40 {
		t.Fatalf("%d bytes of data, want the slice of 40 (owner and amount)", len(raw))
	}
	// whole is the account as a node that ignores dataSlice sends it.
	whole := func(mint []byte, tail ...byte) string {
		b := append(append(append([]byte(nil), mint...), raw...), make([]byte, 165-72)...)
		return base64.StdEncoding.EncodeToString(append(b, tail...))
	}
	for name, tc := range map[string]struct {
		mutate  func()
		program string
		ok      bool
	}{
		"the slice":                 {func() {}, n.program, true},
		"whole":                     {func() { data[0] = whole(n.mint[:]) }, n.program, true},
		"whole, extended":           {func() { data[0] = whole(n.mint[:], 2, 0, 0) }, n.program, true},
		"whole, another mint":       {func() { data[0] = whole(make([]byte, 32)) }, n.program, false},
		"whole, not an account":     {func() { data[0] = whole(n.mint[:], 1) }, n.program, false},
		"short data":                {func() { data[0] = base64.StdEncoding.EncodeToString(raw[:39]) }, n.program, false},
		"Token-2022's slice":        {func() { data[0] = base64.StdEncoding.EncodeToString(append(raw, make([]byte, 93)...)) }, solanasim.Token2022ProgramID, true},
		"Token-2022's, type 2":      {func() { data[0] = base64.StdEncoding.EncodeToString(append(append(raw, make([]byte, 93)...), 2)) }, solanasim.Token2022ProgramID, true},
		"Token-2022's, a mint":      {func() { data[0] = base64.StdEncoding.EncodeToString(append(append(raw, make([]byte, 93)...), 1)) }, solanasim.Token2022ProgramID, false},
		"classic slice, Token-2022": {func() {}, solanasim.Token2022ProgramID, false},
		"not base64":                {func() { data[0] = "%%%" }, n.program, false},
		"base58 encoding":           {func() { data[1] = "base58" }, n.program, false},
		"bad pubkey":                {func() { value["pubkey"] = "0OIl" }, n.program, false},
		"another method":            {func() { m["method"] = "accountNotification" }, n.program, false},
	} {
		saved := [2]any{data[0], data[1]}
		pk, method, owner := value["pubkey"], m["method"], account["owner"]
		tc.mutate()
		account["owner"] = tc.program
		b, _ := json.Marshal(m)
		ch, err := wire.DecodeProgramNotification(b, &n.mint, tc.program)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case tc.ok && (ch.Amount != 5 || base58.Encode(ch.Owner[:]) != ch0.Accounts[0].Owner):
			t.Errorf("%s: read %+v", name, ch)
		case !tc.ok && err == nil:
			t.Errorf("%s: taken", name)
		}
		data[0], data[1], value["pubkey"], m["method"], account["owner"] = saved[0], saved[1], pk, method, owner
	}
}

// TestDecodeProgramAccountsLiveRefuses: an answer that names an account
// twice, or an account whose pubkey is not an address, seeds nothing
// usable: an error, as for any broken answer.
func TestDecodeProgramAccountsLiveRefuses(t *testing.T) {
	data := base64.StdEncoding.EncodeToString(append(bytes.Repeat([]byte{3}, 32), 1, 0, 0, 0, 0, 0, 0, 0))
	account := func(pubkey string) string {
		return `{"pubkey":"` + pubkey + `","account":{"data":["` + data + `","base64"],"owner":"x"}}`
	}
	a := base58.Encode(bytes.Repeat([]byte{1}, 32))
	b := base58.Encode(bytes.Repeat([]byte{2}, 32))
	for name, tc := range map[string]struct {
		accounts string
		ok       bool
	}{
		"two accounts":        {account(a) + "," + account(b), true},
		"one account twice":   {account(a) + "," + account(a), false},
		"a pubkey not base58": {account("0OIl") + "," + account(b), false},
		"a short pubkey":      {account("abc"), false},
	} {
		l := tally.NewLive(9)
		body := `{"jsonrpc":"2.0","id":1,"result":{"context":{"slot":9},"value":[` + tc.accounts + `]}}`
		_, err := wire.DecodeProgramAccountsLive(strings.NewReader(body), l, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
		if tc.ok && (l.Holders() != 1 || l.TokenAccounts() != 2) {
			t.Errorf("%s: %d holders of %d accounts, want 1 of 2", name, l.Holders(), l.TokenAccounts())
		}
	}
}
