package follow_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/holders/follow"
	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// anchor enumerates on the socket subscribed now and anchors the count.
func anchor(fw *holderstest.FollowNode) {
	fw.T.Helper()
	session, ok := fw.F.Begin()
	if !ok {
		fw.T.Fatal("no subscription to anchor on")
	}
	if err := fw.F.Anchor(session, fw.Enumerate()); err != nil {
		fw.T.Fatal(err)
	}
}

// TestFollowerReanchorsAfterAGap: the count anchored on a socket follows
// the ledger through changes of every kind, including those made between
// the subscription and the enumeration; when the socket drops while
// holders change, the count is not live (never the old one) until a new
// enumeration on the new socket anchors it, exact again; an anchor taken
// on a socket that has ended is refused.
func TestFollowerReanchorsAfterAGap(t *testing.T) {
	for _, tok := range []solanasim.Token{holderstest.ClassicToken(200), holderstest.T22Token(200)} {
		t.Run(tok.Program.ID(), func(t *testing.T) {
			fw := holderstest.StartFollow(t, tok)
			mint := tok.Mint
			r := rand.New(rand.NewPCG(3, 4))
			if _, ok := fw.F.Begin(); !ok {
				t.Fatal("subscribed, but Begin sees no socket")
			}
			if _, _, ok := fw.F.Take(); ok {
				t.Fatal("a live count before any anchor")
			}
			for range 5 { // before the enumeration: in it already
				fw.Record(fw.Sim.OpenHolder(mint, 2_000))
			}
			session, _ := fw.F.Begin()
			l := fw.Enumerate()
			// after the enumeration, before the anchor: buffered, then
			// applied on top of it
			fw.Record(fw.Sim.OpenHolder(mint, 3_000))
			fw.Record(fw.Sim.SetHolderBalance(mint, fw.Pick(r, func(a *holderstest.Account) bool { return a.Amount == 2_000 }), 0))
			deadline := time.Now().Add(5 * time.Second)
			for fw.F.Buffered() < 7 { // 5 before the enumeration, 2 after
				if time.Now().After(deadline) {
					t.Fatalf("%d notifications buffered, want 7", fw.F.Buffered())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := fw.F.Anchor(session, l); err != nil {
				t.Fatal(err)
			}
			first := fw.Exact("anchored, the two notifications after the enumeration applied", 0)
			if _, changed, _ := fw.F.Take(); changed {
				t.Error("changed again with nothing new")
			}

			closed := 0
			positive := func(a *holderstest.Account) bool { return a.Amount > 0 }
			for i := range 12 {
				switch i % 6 {
				case 0:
					fw.Record(fw.Sim.OpenHolder(mint, 0))
				case 1:
					fw.Record(fw.Sim.OpenHolder(mint, uint64(1+r.IntN(500))))
				case 2:
					fw.Record(fw.Sim.SetHolderBalance(mint, fw.Pick(r, positive), 0))
				case 3:
					fw.Record(fw.Sim.SetHolderBalance(mint, fw.Pick(r, func(a *holderstest.Account) bool { return a.Amount == 0 }), 77))
				case 4:
					from := fw.Pick(r, positive)
					to := fw.Pick(r, func(a *holderstest.Account) bool { return a.Owner != fw.Accounts[from].Owner })
					fw.Record(fw.Sim.MoveHolderBalance(mint, from, to, fw.Accounts[from].Amount))
				case 5:
					fw.Record(fw.Sim.CloseHolderAccount(mint, fw.Pick(r, func(a *holderstest.Account) bool { return a.Amount == 0 })))
					closed++
				}
				fw.Exact("change "+string(rune('a'+i)), closed)
			}
			if c, _, _ := fw.F.Take(); c.Slot <= first.Slot {
				t.Errorf("the count's slot %d did not move past the anchor's %d", c.Slot, first.Slot)
			}

			stale, _ := fw.F.Begin()
			fw.Node.SetSocketFault(solanasim.SocketDrop)
			deadline = time.Now().Add(5 * time.Second)
			for {
				if _, _, ok := fw.F.Take(); !ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("still live 5 s after the socket was dropped")
				}
				time.Sleep(5 * time.Millisecond)
			}
			// changes in the gap: no socket hears them
			fw.Record(fw.Sim.SetHolderBalance(mint, fw.Pick(r, positive), 0))
			fw.Record(fw.Sim.OpenHolder(mint, 9_000))
			for range len(fw.Connected) {
				<-fw.Connected
			}
			fw.Node.SetSocketFault(solanasim.SocketOK)
			fw.WaitConnected()
			if _, _, ok := fw.F.Take(); ok {
				t.Fatal("live on the new socket before an anchor: the count would skip the gap")
			}
			if err := fw.F.Anchor(stale, fw.F.Tally(1)); !errors.Is(err, follow.ErrNotFollowing) {
				t.Fatalf("an anchor on the dropped socket: %v, want ErrNotFollowing", err)
			}
			anchor(fw)
			fw.Exact("re-anchored after the gap", 0) // the new enumeration has no closed account
			fw.Record(fw.Sim.OpenHolder(mint, 5))
			fw.Exact("after the re-anchor", 0)
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

// TestFollowerNoResyncWhileComparing: while a resync's comparison waits
// for the count it replaced (up to ResyncGrace), the follower is not
// ready for another resync, and Compared says so. A resync started then
// would anchor and make its own comparison at once, replacing a pending
// difference within milliseconds, before any poll published it.
func TestFollowerNoResyncWhileComparing(t *testing.T) {
	var mint tally.Owner
	mint[0] = 7
	f := follow.New(mint, contract.ProgramIDToken, 0, 100)
	f.Connected()
	session, _ := f.Begin()
	if err := f.Anchor(session, seeded(t, f, 10, 100)); err != nil {
		t.Fatal(err)
	}
	if r, pending := f.Compared(time.Now()); r != nil || pending || !f.Following() {
		t.Fatalf("a first anchor: comparison %+v, pending %v, following %v", r, pending, f.Following())
	}
	// A resync whose enumeration (slot 105) saw a holder whose
	// notification was lost; nothing on the ledger moves after it.
	session, _ = f.Begin()
	if err := f.Anchor(session, seeded(t, f, 11, 105)); err != nil {
		t.Fatal(err)
	}
	if r, pending := f.Compared(time.Now()); r != nil || !pending || f.Following() {
		t.Fatalf("within the grace: comparison %+v, pending %v, following %v (want none, pending, not following)", r, pending, f.Following())
	}
	r, pending := f.Compared(time.Now().Add(follow.ResyncGrace + time.Second))
	if pending || r == nil || r.Agreed || r.Live != 10 || r.Enumerated != 11 || !f.Following() {
		t.Fatalf("after the grace: comparison %+v, pending %v, following %v (want the difference, following)", r, pending, f.Following())
	}
}
