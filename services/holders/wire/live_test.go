package wire_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/holderstest"
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

// liveNode is a simulator with one token, a socket subscribed to the
// token program for the mint's accounts, and the test's record of them.
type liveNode struct {
	*holderstest.Ledger
	notes chan []byte
}

// finalizedLag is how far behind the processed slot the simulator's
// finalized commitment answers: a notification's context slot is its
// change's slot less it.
const finalizedLag = 32

func startLive(t *testing.T, tok solanasim.Token) *liveNode {
	t.Helper()
	s, url := simtest.StartTB(t, tok)
	n := &liveNode{Ledger: holderstest.NewLedger(t, s, url, tok), notes: make(chan []byte, 1024)}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { _ = c.Close() })
	sub := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "programSubscribe",
		"params": wire.ProgramSubscribeParams(n.Program, n.Token.Mint, "finalized")}
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

// apply decodes and applies the next count notifications.
func (n *liveNode) apply(l *tally.Live, count int) {
	n.T.Helper()
	for range count {
		var msg []byte
		select {
		case msg = <-n.notes:
		case <-time.After(5 * time.Second):
			n.T.Fatal("no programNotification within 5 s")
		}
		ch, err := wire.DecodeProgramNotification(msg, &n.Mint, n.Program)
		if err != nil {
			n.T.Fatalf("%v: %s", err, msg)
		}
		if _, err := l.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount); err != nil {
			n.T.Fatal(err)
		}
	}
}

// TestLiveFollowsTheLedger: 20 changes of each kind (account opened
// empty, new holder, holder sold out, holder back, balance moved, account
// closed), in rounds, with five changes made between the subscription
// and the enumeration (notified before it; those at or before its slot
// are in it already). After each, the tally is the ledger's.
func TestLiveFollowsTheLedger(t *testing.T) {
	for _, tok := range []solanasim.Token{holderstest.ClassicToken(300), holderstest.T22Token(300)} {
		t.Run(tok.Program.ID(), func(t *testing.T) {
			n := startLive(t, tok)
			r := rand.New(rand.NewPCG(1, 2))
			mint := tok.Mint
			early := 0
			for range 5 {
				_, k := n.Record(n.Sim.OpenHolder(mint, 1_000))
				early += k
			}
			l := n.Enumerate()
			n.apply(l, early) // all at or before the enumeration's slot
			n.Check(l, 0)
			anchor := l.Slot()

			closed := 0
			positive := func(a *holderstest.Account) bool { return a.Amount > 0 }
			zero := func(a *holderstest.Account) bool { return a.Amount == 0 }
			for round := range 20 {
				type step struct {
					kind string
					do   func() (solanasim.HolderChange, error)
				}
				steps := []step{
					{"opened empty", func() (solanasim.HolderChange, error) { return n.Sim.OpenHolder(mint, 0) }},
					{"new holder", func() (solanasim.HolderChange, error) { return n.Sim.OpenHolder(mint, 1+r.Uint64N(1e9)) }},
					{"sold out", func() (solanasim.HolderChange, error) {
						return n.Sim.SetHolderBalance(mint, n.Pick(r, positive), 0)
					}},
					{"back", func() (solanasim.HolderChange, error) {
						return n.Sim.SetHolderBalance(mint, n.Pick(r, zero), 1+r.Uint64N(1e6))
					}},
					{"moved", func() (solanasim.HolderChange, error) {
						from := n.Pick(r, positive)
						f := n.Accounts[from]
						var to string
						if round%2 == 1 { // to another account of the same owner, when it has one
							to = n.Pick(r, func(a *holderstest.Account) bool { return a.Owner == f.Owner })
						}
						if to == from || to == "" {
							to = n.Pick(r, func(*holderstest.Account) bool { return true })
						}
						for to == from {
							to = n.Pick(r, func(*holderstest.Account) bool { return true })
						}
						amount := f.Amount // all of it: the sender may stop holding
						if round%4 >= 2 {
							amount = 1 + r.Uint64N(f.Amount)
						}
						return n.Sim.MoveHolderBalance(mint, from, to, amount)
					}},
					{"closed", func() (solanasim.HolderChange, error) {
						return n.Sim.CloseHolderAccount(mint, n.Pick(r, zero))
					}},
				}
				for _, s := range steps {
					ch, notes := n.Record(s.do())
					if notes == 0 {
						closed++
					}
					n.apply(l, notes)
					n.Check(l, closed)
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
	n := startLive(t, holderstest.ClassicToken(20))
	ch0, k := n.Record(n.Sim.OpenHolder(n.Token.Mint, 5))
	if k != 1 {
		t.Fatal("one notification expected")
	}
	good := <-n.notes
	ch, err := wire.DecodeProgramNotification(good, &n.Mint, n.Program)
	if err != nil || ch.Amount != 5 || ch.Slot == 0 || ch.Subscription == 0 || base58.Encode(ch.Owner[:]) != ch0.Accounts[0].Owner {
		t.Fatalf("the simulator's notification: %+v %v", ch, err)
	}
	if _, err := wire.DecodeProgramNotification(good, &n.Mint, solanasim.Token2022ProgramID); err == nil {
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
		"the slice":                 {func() {}, n.Program, true},
		"whole":                     {func() { data[0] = whole(n.Mint[:]) }, n.Program, true},
		"whole, extended":           {func() { data[0] = whole(n.Mint[:], 2, 0, 0) }, n.Program, true},
		"whole, another mint":       {func() { data[0] = whole(make([]byte, 32)) }, n.Program, false},
		"whole, not an account":     {func() { data[0] = whole(n.Mint[:], 1) }, n.Program, false},
		"short data":                {func() { data[0] = base64.StdEncoding.EncodeToString(raw[:39]) }, n.Program, false},
		"Token-2022's slice":        {func() { data[0] = base64.StdEncoding.EncodeToString(append(raw, make([]byte, 93)...)) }, solanasim.Token2022ProgramID, true},
		"Token-2022's, type 2":      {func() { data[0] = base64.StdEncoding.EncodeToString(append(append(raw, make([]byte, 93)...), 2)) }, solanasim.Token2022ProgramID, true},
		"Token-2022's, a mint":      {func() { data[0] = base64.StdEncoding.EncodeToString(append(append(raw, make([]byte, 93)...), 1)) }, solanasim.Token2022ProgramID, false},
		"classic slice, Token-2022": {func() {}, solanasim.Token2022ProgramID, false},
		"not base64":                {func() { data[0] = "%%%" }, n.Program, false},
		"base58 encoding":           {func() { data[1] = "base58" }, n.Program, false},
		"bad pubkey":                {func() { value["pubkey"] = "0OIl" }, n.Program, false},
		"another method":            {func() { m["method"] = "accountNotification" }, n.Program, false},
	} {
		saved := [2]any{data[0], data[1]}
		pk, method, owner := value["pubkey"], m["method"], account["owner"]
		tc.mutate()
		account["owner"] = tc.program
		b, _ := json.Marshal(m)
		ch, err := wire.DecodeProgramNotification(b, &n.Mint, tc.program)
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
