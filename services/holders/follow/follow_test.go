package follow_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
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

// followNode is a Follower kept by pubsub.Keep on a simulator node's real
// socket, as the collector will keep it.
type followNode struct {
	*liveNode
	node      *solanasim.Node
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
	fw := &followNode{liveNode: n, node: node, f: follow.New(n.mint, n.program, 0, 10_000), connected: make(chan struct{}, 16)}
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

// anchor enumerates on the socket subscribed now and anchors the count.
func (fw *followNode) anchor() {
	fw.t.Helper()
	session, ok := fw.f.Begin()
	if !ok {
		fw.t.Fatal("no subscription to anchor on")
	}
	if err := fw.f.Anchor(session, fw.enumerate()); err != nil {
		fw.t.Fatal(err)
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

// TestFollowerReanchorsAfterAGap: the count anchored on a socket follows
// the ledger through changes of every kind, including those made between
// the subscription and the enumeration; when the socket drops while
// holders change, the count is not live (never the old one) until a new
// enumeration on the new socket anchors it, exact again; an anchor taken
// on a socket that has ended is refused.
func TestFollowerReanchorsAfterAGap(t *testing.T) {
	for _, tok := range []solanasim.Token{classicToken(200), t22Token(200)} {
		t.Run(tok.Program.ID(), func(t *testing.T) {
			fw := startFollow(t, tok)
			mint := tok.Mint
			r := rand.New(rand.NewPCG(3, 4))
			if _, ok := fw.f.Begin(); !ok {
				t.Fatal("subscribed, but Begin sees no socket")
			}
			if _, _, ok := fw.f.Take(); ok {
				t.Fatal("a live count before any anchor")
			}
			for range 5 { // before the enumeration: in it already
				fw.record(fw.s.OpenHolder(mint, 2_000))
			}
			session, _ := fw.f.Begin()
			l := fw.enumerate()
			// after the enumeration, before the anchor: buffered, then
			// applied on top of it
			fw.record(fw.s.OpenHolder(mint, 3_000))
			fw.record(fw.s.SetHolderBalance(mint, fw.pick(r, func(a *acct) bool { return a.amount == 2_000 }), 0))
			deadline := time.Now().Add(5 * time.Second)
			for fw.f.Buffered() < 7 { // 5 before the enumeration, 2 after
				if time.Now().After(deadline) {
					t.Fatalf("%d notifications buffered, want 7", fw.f.Buffered())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := fw.f.Anchor(session, l); err != nil {
				t.Fatal(err)
			}
			first := fw.exact("anchored, the two notifications after the enumeration applied", 0)
			if _, changed, _ := fw.f.Take(); changed {
				t.Error("changed again with nothing new")
			}

			closed := 0
			positive := func(a *acct) bool { return a.amount > 0 }
			for i := range 12 {
				switch i % 6 {
				case 0:
					fw.record(fw.s.OpenHolder(mint, 0))
				case 1:
					fw.record(fw.s.OpenHolder(mint, uint64(1+r.IntN(500))))
				case 2:
					fw.record(fw.s.SetHolderBalance(mint, fw.pick(r, positive), 0))
				case 3:
					fw.record(fw.s.SetHolderBalance(mint, fw.pick(r, func(a *acct) bool { return a.amount == 0 }), 77))
				case 4:
					from := fw.pick(r, positive)
					to := fw.pick(r, func(a *acct) bool { return a.owner != fw.accts[from].owner })
					fw.record(fw.s.MoveHolderBalance(mint, from, to, fw.accts[from].amount))
				case 5:
					fw.record(fw.s.CloseHolderAccount(mint, fw.pick(r, func(a *acct) bool { return a.amount == 0 })))
					closed++
				}
				fw.exact("change "+string(rune('a'+i)), closed)
			}
			if c, _, _ := fw.f.Take(); c.Slot <= first.Slot {
				t.Errorf("the count's slot %d did not move past the anchor's %d", c.Slot, first.Slot)
			}

			stale, _ := fw.f.Begin()
			fw.node.SetSocketFault(solanasim.SocketDrop)
			deadline = time.Now().Add(5 * time.Second)
			for {
				if _, _, ok := fw.f.Take(); !ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("still live 5 s after the socket was dropped")
				}
				time.Sleep(5 * time.Millisecond)
			}
			// changes in the gap: no socket hears them
			fw.record(fw.s.SetHolderBalance(mint, fw.pick(r, positive), 0))
			fw.record(fw.s.OpenHolder(mint, 9_000))
			for range len(fw.connected) {
				<-fw.connected
			}
			fw.node.SetSocketFault(solanasim.SocketOK)
			fw.waitConnected()
			if _, _, ok := fw.f.Take(); ok {
				t.Fatal("live on the new socket before an anchor: the count would skip the gap")
			}
			if err := fw.f.Anchor(stale, fw.f.Tally(1)); !errors.Is(err, follow.ErrNotFollowing) {
				t.Fatalf("an anchor on the dropped socket: %v, want ErrNotFollowing", err)
			}
			fw.anchor()
			fw.exact("re-anchored after the gap", 0) // the new enumeration has no closed account
			fw.record(fw.s.OpenHolder(mint, 5))
			fw.exact("after the re-anchor", 0)
		})
	}
}

// TestFollowerRefusesWhatItCannotFollow: a notification that cannot be
// read ends the live count, and an anchor taken on that socket is
// refused.
func TestFollowerRefusesWhatItCannotFollow(t *testing.T) {
	var mint tally.Owner
	mint[0] = 1
	f := follow.New(mint, contract.ProgramIDToken, 0, 2)
	if err := f.Notify([]byte(`{}`)); err == nil {
		t.Error("a notification with no subscription taken")
	}
	f.Connected()
	session, _ := f.Begin()
	if err := f.Anchor(session, f.Tally(10)); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.Take(); !ok {
		t.Fatal("not live after an anchor")
	}
	if err := f.Notify([]byte(`{"jsonrpc":"2.0","method":"programNotification","params":{}}`)); err == nil {
		t.Fatal("an unreadable notification taken")
	}
	if _, _, ok := f.Take(); ok {
		t.Fatal("still live after an unreadable notification")
	}
	if err := f.Anchor(session, f.Tally(10)); !errors.Is(err, follow.ErrNotFollowing) {
		t.Fatalf("an anchor on a socket with a gap: %v", err)
	}
}

func mintOf(t *testing.T, mint string) tally.Owner {
	t.Helper()
	b, err := base58.Decode(mint)
	if err != nil || len(b) != 32 {
		t.Fatalf("mint %q: %v", mint, err)
	}
	return tally.Owner(b)
}

// note is a programNotification of mint's token account acct (owner,
// amount) at slot, as a node sends it.
func note(t *testing.T, mint tally.Owner, acct, owner byte, amount, slot uint64) []byte {
	t.Helper()
	data := make([]byte, 165)
	copy(data, mint[:])
	data[32] = owner
	binary.LittleEndian.PutUint64(data[64:], amount)
	var a tally.Owner
	a[0], a[1] = 0xAC, acct
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "programNotification", "params": map[string]any{
		"subscription": 1, "result": map[string]any{"context": map[string]any{"slot": slot}, "value": map[string]any{
			"pubkey": base58.Encode(a[:]), "account": map[string]any{"data": []string{base64.StdEncoding.EncodeToString(data), "base64"},
				"owner": contract.ProgramIDToken, "lamports": 2039280, "executable": false, "space": 165}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seeded is a tally of n accounts, each of its own owner holding 1, at
// slot, as an enumeration seeds it.
func seeded(t *testing.T, f *follow.Follower, n int, slot uint64) *tally.Live {
	t.Helper()
	l := f.Tally(slot)
	for i := range n {
		var a, o tally.Owner
		a[0], a[1] = 0xAC, byte(i)
		o[0] = byte(i)
		if err := l.Seed(&a, &o, 1); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// TestFollowerResyncComparisons: a resync compares the count it replaces
// with the new one once the old has reached the new one's slot; one whose
// comparison is still due when the next resync anchors is compared then;
// and a difference no Take has reported is not hidden by a later
// agreement.
func TestFollowerResyncComparisons(t *testing.T) {
	var mint tally.Owner
	mint[0] = 7
	f := follow.New(mint, contract.ProgramIDToken, 0, 100)
	f.Connected()
	session, _ := f.Begin()
	if err := f.Anchor(session, seeded(t, f, 10, 100)); err != nil {
		t.Fatal(err)
	}
	// A resync whose enumeration (slot 105) saw a new holder the live
	// count was never told of: its notification was lost.
	session, _ = f.Begin()
	if err := f.Anchor(session, seeded(t, f, 11, 105)); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := f.Take(); c.Resync != nil || !c.Comparing || c.Holders != 11 {
		t.Fatalf("before the old count reached slot 105: %+v", c)
	}
	// Before any notification reaches slot 105, the next resync anchors:
	// the due comparison is made then, and the new one (equal) after it.
	session, _ = f.Begin()
	if err := f.Anchor(session, seeded(t, f, 11, 106)); err != nil {
		t.Fatal(err)
	}
	if err := f.Notify(note(t, mint, 200, 200, 5, 107)); err != nil { // a new holder, both counts told
		t.Fatal(err)
	}
	c, _, _ := f.Take()
	if r := c.Resync; r == nil || r.Agreed || r.Live != 10 || r.Enumerated != 11 || c.Holders != 12 {
		t.Fatalf("the lost notification's difference: %+v (resync %+v)", c, c.Resync)
	}
	// Reported, it gives way to the next comparison.
	session, _ = f.Begin()
	l := seeded(t, f, 11, 108)
	a, o := tally.Owner{0xAC, 200}, tally.Owner{200}
	if err := l.Seed(&a, &o, 5); err != nil { // the holder of slot 107
		t.Fatal(err)
	}
	if err := f.Anchor(session, l); err != nil {
		t.Fatal(err)
	}
	if err := f.Notify(note(t, mint, 201, 201, 5, 109)); err != nil {
		t.Fatal(err)
	}
	c, _, _ = f.Take()
	if r := c.Resync; r == nil || !r.Agreed {
		t.Fatalf("a resync that agrees after a reported difference: %+v", r)
	}
}
