package holders_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// liveCollector is a holders collector with HOLDERS_LIVE on a simulator
// node of its own (whose socket can fail), run as the binary runs it.
type liveCollector struct {
	*holderstest.Ledger
	node *solanasim.Node
	fx   fixture
	// had is every holder count the ledger had during the test.
	had map[uint64]bool
}

func startLiveCollector(t *testing.T, tok solanasim.Token, tune func(*holders.Config)) *liveCollector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, node := holderstest.StartNode(ctx, t, tok)
	n.Enumerate() // the test's record of the accounts
	cfg := holders.DefaultConfig()
	cfg.Live, cfg.Commitment = "true", "finalized"
	cfg.PublishInterval = 100 * time.Millisecond
	cfg.WSPing, cfg.WSSilence = 200*time.Millisecond, 2*time.Second
	cfg.WSBackoff, cfg.WSBackoffMax = 20*time.Millisecond, 200*time.Millisecond
	if tune != nil {
		tune(&cfg)
	}
	lc := &liveCollector{Ledger: n, node: node, fx: newCollector(t, setup{url: n.URL, mint: tok.Mint, cfg: cfg}), had: map[uint64]bool{}}
	lc.remember()
	done := make(chan struct{})
	go func() { defer close(done); _ = lc.fx.c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return lc
}

// remember adds the ledger's holder count now to those it had.
func (lc *liveCollector) remember() {
	truth, _ := lc.Sim.Truth(lc.Token.Mint)
	lc.had[uint64(truth.Holders)] = true
}

// change makes one holder change and remembers the count it left.
func (lc *liveCollector) change(ch solanasim.HolderChange, err error) {
	lc.T.Helper()
	lc.Record(ch, err)
	lc.remember()
}

// waitDoc waits for the published document to be method's with the
// ledger's figures (closed: accounts closed since the anchor, which a
// live count still counts); every document seen meanwhile must hold a
// count the ledger had.
func (lc *liveCollector) waitDoc(what, method string, closed int) contract.Holders {
	lc.T.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var h contract.Holders
	for {
		doc, err := lc.fx.store.Read(context.Background(), contract.DomainHolders)
		if err == nil {
			h = contract.Holders{}
			if err := doc.Decode(&h); err != nil {
				lc.T.Fatal(err)
			}
			if !lc.had[h.Holders] {
				lc.T.Fatalf("%s: published %d holders (method %s, slot %d), a count the ledger never had", what, h.Holders, h.Method, h.Slot)
			}
			truth, _ := lc.Sim.Truth(lc.Token.Mint)
			if h.Method == method && h.Holders == uint64(truth.Holders) && h.NonZeroAccounts == uint64(truth.NonZeroAccounts) &&
				h.TokenAccounts == uint64(truth.TokenAccounts+closed) {
				return h
			}
		}
		if time.Now().After(deadline) {
			truth, _ := lc.Sim.Truth(lc.Token.Mint)
			lc.T.Fatalf("%s: published %+v; want method %s with the ledger's %d holders, %d non-zero, %d token accounts (+%d closed)",
				what, h, method, truth.Holders, truth.NonZeroAccounts, truth.TokenAccounts, closed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitMethod waits for the published document to be method's, whatever
// its figures (a count the ledger had all the same).
func (lc *liveCollector) waitMethod(what, method string) contract.Holders {
	lc.T.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if doc, err := lc.fx.store.Read(context.Background(), contract.DomainHolders); err == nil {
			var h contract.Holders
			if err := doc.Decode(&h); err != nil {
				lc.T.Fatal(err)
			}
			if !lc.had[h.Holders] {
				lc.T.Fatalf("%s: published %d holders (method %s, slot %d), a count the ledger never had", what, h.Holders, h.Method, h.Slot)
			}
			if h.Method == method {
				return h
			}
		}
		if time.Now().After(deadline) {
			lc.T.Fatalf("%s: no document of method %s within 10 s", what, method)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCollectorLive: with HOLDERS_LIVE the collector anchors its count on
// its own enumeration and publishes every kind of holder change (20 of
// each) with the ledger's figures, each within seconds and without
// enumerating again; a count it publishes is always one the ledger had.
// A dropped socket with changes during the gap ends the live count (the
// next documents are enumerations'), and the next socket re-anchors it,
// exact again.
func TestCollectorLive(t *testing.T) {
	for _, tok := range []solanasim.Token{holderstest.ClassicToken(200), holderstest.T22Token(200)} {
		t.Run(tok.Program.ID(), func(t *testing.T) {
			lc := startLiveCollector(t, tok, nil)
			h := lc.waitDoc("anchored", contract.HoldersMethodLive, 0)
			if h.Live == nil || h.Live.AnchorSlot == 0 || h.Live.AnchorMethod != contract.HoldersMethodGPA || h.Live.AnchoredAt.IsZero() ||
				h.Live.AnchorTokenAccounts != h.TokenAccounts || !h.Live.NextResyncAt.After(h.Live.AnchoredAt) {
				t.Fatalf("live document: %+v", h.Live)
			}
			anchor := h.Live.AnchorSlot
			r := rand.New(rand.NewPCG(7, 36))
			closed := 0
			positive := func(a *holderstest.Account) bool { return a.Amount > 0 }
			zero := func(a *holderstest.Account) bool { return a.Amount == 0 }
			kinds := []struct {
				name string
				do   func()
			}{
				{"new holder", func() { lc.change(lc.Sim.OpenHolder(tok.Mint, 1+r.Uint64N(1e9))) }},
				{"holder sold out", func() { lc.change(lc.Sim.SetHolderBalance(tok.Mint, lc.Pick(r, positive), 0)) }},
				{"holder back", func() { lc.change(lc.Sim.SetHolderBalance(tok.Mint, lc.Pick(r, zero), 1+r.Uint64N(1e9))) }},
				{"balance moved", func() {
					from := lc.Pick(r, positive)
					to := lc.Pick(r, func(a *holderstest.Account) bool { return a != lc.Accounts[from] })
					lc.change(lc.Sim.MoveHolderBalance(tok.Mint, from, to, 1+r.Uint64N(lc.Accounts[from].Amount)))
				}},
				{"account opened", func() { lc.change(lc.Sim.OpenHolder(tok.Mint, 0)) }},
				{"account closed", func() { lc.change(lc.Sim.CloseHolderAccount(tok.Mint, lc.Pick(r, zero))); closed++ }},
			}
			for _, k := range kinds {
				for i := range 20 {
					k.do()
					lc.waitDoc(k.name+" "+string(rune('0'+i/10))+string(rune('0'+i%10)), contract.HoldersMethodLive, closed)
				}
			}
			h = lc.waitDoc("after the changes", contract.HoldersMethodLive, closed)
			if h.Live.AnchorSlot != anchor || h.Live.Notifications == 0 || h.Slot <= anchor {
				t.Errorf("the changes re-anchored or were not notified: anchor %d (first %d), %d notifications, slot %d",
					h.Live.AnchorSlot, anchor, h.Live.Notifications, h.Slot)
			}
			if st := lc.fx.c.Runner().Status(); len(st.Subscriptions) != 1 || st.Subscriptions[0].State != contract.SubscriptionConnected ||
				st.Subscriptions[0].LastNotificationAt == nil || st.Subscriptions[0].LastNotificationSlot != h.Slot {
				t.Errorf("subscription record: %+v (document slot %d)", st.Subscriptions, h.Slot)
			}

			// A gap: the socket dropped while holders change. The live
			// count ends at once: an enumeration's count is published
			// (once: a failed reconnection enumerates nothing), and the
			// changes of the gap wait for the re-anchor.
			lc.node.SetSocketFault(solanasim.SocketDrop)
			lc.change(lc.Sim.OpenHolder(tok.Mint, 1+r.Uint64N(1e9)))
			lc.waitMethod("socket dropped", contract.HoldersMethodGPA)
			for range 5 {
				lc.change(lc.Sim.OpenHolder(tok.Mint, 1+r.Uint64N(1e9)))
				lc.change(lc.Sim.SetHolderBalance(tok.Mint, lc.Pick(r, positive), 0))
			}
			time.Sleep(500 * time.Millisecond) // reconnections fail meanwhile
			if h := lc.waitMethod("still dropped", contract.HoldersMethodGPA); h.Live != nil {
				t.Errorf("an enumerated count with a live block: %+v", h.Live)
			}
			lc.node.SetSocketFault(solanasim.SocketOK)
			h = lc.waitDoc("re-anchored", contract.HoldersMethodLive, 0)
			if h.Live.AnchorSlot <= anchor {
				t.Errorf("re-anchored at slot %d, not after the first anchor %d", h.Live.AnchorSlot, anchor)
			}
			lc.change(lc.Sim.OpenHolder(tok.Mint, 5))
			lc.waitDoc("a new holder after the re-anchor", contract.HoldersMethodLive, 0)
			if !strings.Contains(lc.fx.logs.String(), "holders anchored") {
				t.Error("no anchor logged")
			}
		})
	}
}

// TestCollectorLiveResync: a resync re-anchors the live count on a new
// enumeration and compares the two at the same slot: equal, it says
// agreed and warns of nothing.
func TestCollectorLiveResync(t *testing.T) {
	tok := holderstest.ClassicToken(150)
	lc := startLiveCollector(t, tok, func(c *holders.Config) { c.Resync = time.Second })
	first := lc.waitDoc("anchored", contract.HoldersMethodLive, 0)
	lc.change(lc.Sim.OpenHolder(tok.Mint, 7))
	deadline := time.Now().Add(15 * time.Second)
	for {
		h := lc.waitDoc("resynced", contract.HoldersMethodLive, 0)
		if h.Live.Resync != nil && h.Live.AnchorSlot > first.Live.AnchorSlot {
			if !h.Live.Resync.Agreed || h.Live.Resync.Live != h.Live.Resync.Enumerated || len(h.Warnings) != 0 {
				t.Fatalf("resync: %+v, warnings %v", h.Live.Resync, h.Warnings)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no resync compared within 15 s: %+v", h.Live)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCollectorLiveResyncRefused: a node that refuses a resync's
// enumeration (no secondary index) sets
// tokendata_holders_enumeration_unsupported (the holders-unavailable
// alert), though the live count goes on: the next restart could not
// anchor a count on that node.
func TestCollectorLiveResyncRefused(t *testing.T) {
	tok := holderstest.ClassicToken(150)
	lc := startLiveCollector(t, tok, func(c *holders.Config) { c.Resync = time.Second })
	lc.waitDoc("anchored", contract.HoldersMethodLive, 0)
	if got := testutil.ToFloat64(gauge(t, lc.fx.reg, "tokendata_holders_enumeration_unsupported")); got != 0 {
		t.Fatalf("unsupported = %v before any refusal", got)
	}
	lc.Sim.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.RPCExcludedIndex})
	deadline := time.Now().Add(15 * time.Second)
	for testutil.ToFloat64(gauge(t, lc.fx.reg, "tokendata_holders_enumeration_unsupported")) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("unsupported still 0 15 s after the node began refusing resyncs; logs:\n%s", lc.fx.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	lc.change(lc.Sim.OpenHolder(tok.Mint, 9))
	lc.waitDoc("a change after the refused resync", contract.HoldersMethodLive, 0)
}

// TestCollectorLivePublishesDuringResync: a resync's enumeration runs
// beside the publications. The node answers getProgramAccounts 20 s late
// from the moment the resync is due; a holder change made meanwhile is
// published live while the count is still anchored on the first
// enumeration (the resync has not ended). When the enumeration ran in the
// poll, no publication was made until it ended.
func TestCollectorLivePublishesDuringResync(t *testing.T) {
	tok := holderstest.ClassicToken(150)
	lc := startLiveCollector(t, tok, func(c *holders.Config) { c.Resync = 5 * time.Second })
	first := lc.waitDoc("anchored", contract.HoldersMethodLive, 0)
	lc.Sim.Faults().Inject("getProgramAccounts", fault.Fault{Kind: fault.Latency, Delay: 20 * time.Second})
	time.Sleep(time.Until(first.Live.NextResyncAt) + time.Second) // the resync's enumeration is waiting on the node
	lc.change(lc.Sim.OpenHolder(tok.Mint, 9))
	h := lc.waitDoc("a change during the resync", contract.HoldersMethodLive, 0)
	if h.Live.AnchorSlot != first.Live.AnchorSlot || h.Live.Resync != nil {
		t.Fatalf("published anchored at slot %d (first %d), resync %+v: the resync ended, its enumeration was not delayed",
			h.Live.AnchorSlot, first.Live.AnchorSlot, h.Live.Resync)
	}
	if h.Slot <= first.Slot {
		t.Fatalf("published at slot %d, not after the anchor's %d", h.Slot, first.Slot)
	}
}

// TestCollectorLiveStalledSocket: a socket that goes silent is dropped
// after HOLDERS_WS_SILENCE and the live count with it: the changes made
// meanwhile are published by an enumeration, and a new socket re-anchors
// the count once the node answers again.
func TestCollectorLiveStalledSocket(t *testing.T) {
	tok := holderstest.ClassicToken(150)
	lc := startLiveCollector(t, tok, func(c *holders.Config) { c.WSSilence = time.Second })
	first := lc.waitDoc("anchored", contract.HoldersMethodLive, 0)
	lc.node.SetSocketFault(solanasim.SocketStall)
	lc.change(lc.Sim.OpenHolder(tok.Mint, 11))
	lc.change(lc.Sim.OpenHolder(tok.Mint, 12))
	lc.waitDoc("socket stalled", contract.HoldersMethodGPA, 0)
	if st := lc.fx.c.Runner().Status(); len(st.Subscriptions) != 1 || st.Subscriptions[0].State != contract.SubscriptionConnecting ||
		!strings.Contains(st.Subscriptions[0].Error, "silent") {
		t.Errorf("subscription record while stalled: %+v", st.Subscriptions)
	}
	lc.node.SetSocketFault(solanasim.SocketOK)
	h := lc.waitDoc("re-anchored", contract.HoldersMethodLive, 0)
	if h.Live.AnchorSlot <= first.Live.AnchorSlot {
		t.Errorf("re-anchored at slot %d, not after %d", h.Live.AnchorSlot, first.Live.AnchorSlot)
	}
}

// TestCollectorLiveRefused: a node that refuses programSubscribe (as
// providers that restrict it answer: method not found) keeps the scans:
// the count is an enumeration's, and the status record says the
// subscription is unsupported, with the node's words and not its key.
func TestCollectorLiveRefused(t *testing.T) {
	tok := holderstest.ClassicToken(120)
	s, _ := simtest.StartTB(t, tok)
	s.Faults().Inject("programSubscribe", fault.Fault{Kind: fault.RPCMethodNotFound})
	node := s.NewNode()
	ctx, cancel := context.WithCancel(context.Background())
	url, err := node.StartOn(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	url += "/?api-key=" + apiKey
	cfg := holders.DefaultConfig()
	cfg.Live, cfg.Commitment = "true", "finalized"
	cfg.WSBackoff, cfg.WSBackoffMax = 20*time.Millisecond, 100*time.Millisecond
	fx := newCollector(t, setup{url: url, mint: tok.Mint, cfg: cfg})
	done := make(chan struct{})
	go func() { defer close(done); _ = fx.c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := fx.c.Runner().Status()
		doc, err := fx.store.Read(context.Background(), contract.DomainHolders)
		if err == nil && len(st.Subscriptions) == 1 && st.Subscriptions[0].State == contract.SubscriptionUnsupported {
			var h contract.Holders
			if err := doc.Decode(&h); err != nil {
				t.Fatal(err)
			}
			checkTruth(t, s, tok.Mint, h)
			if h.Method != contract.HoldersMethodGPA || h.Live != nil {
				t.Errorf("document without a subscription: method %q, live %+v", h.Method, h.Live)
			}
			if e := st.Subscriptions[0].Error; e == "" || strings.Contains(e, apiKey) {
				t.Errorf("subscription error %q: empty, or quoting the key", e)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscription record %+v, document %v", st.Subscriptions, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCollectorLiveResyncFindsADifference: a notification the node lost
// without a word leaves the live count one holder short; the next resync
// finds it at one slot, publishes the enumeration's count with the
// difference (resync agreed false, the warning) and follows it from there;
// the next resync comes HOLDERS_REFRESH after the comparison.
func TestCollectorLiveResyncFindsADifference(t *testing.T) {
	tok := holderstest.ClassicToken(150)
	lc := startLiveCollector(t, tok, func(c *holders.Config) { c.Resync = 3 * time.Second })
	lc.waitDoc("anchored", contract.HoldersMethodLive, 0)
	lc.Sim.Faults().Inject(solanasim.RouteProgramNotification, fault.Fault{Kind: fault.Lost, Times: 1})
	lc.change(lc.Sim.OpenHolder(tok.Mint, 99)) // never notified
	deadline := time.Now().Add(15 * time.Second)
	for {
		h := lc.waitDoc("after the resync", contract.HoldersMethodLive, 0)
		if r := h.Live.Resync; r != nil {
			if r.Agreed || r.Enumerated != h.Holders || r.Live+1 != r.Enumerated || r.Slot == 0 {
				t.Fatalf("resync: %+v, published %d\n%s", r, h.Holders, lc.fx.logs.String())
			}
			if len(h.Warnings) != 1 || h.Warnings[0].Code != contract.WarnHoldersLiveDiffered || !strings.Contains(h.Warnings[0].Message, "differed") {
				t.Fatalf("warnings: %+v", h.Warnings)
			}
			// Checked again HOLDERS_REFRESH after the comparison. The
			// comparison came ResyncGrace after the enumeration (the
			// lost notification's slot never arrives), past the next
			// resync's due time: that one began in the poll that
			// published the difference and replaced it at once.
			refresh := contract.DefaultTimings[contract.DomainHolders].Refresh
			if d := h.Live.NextResyncAt.Sub(r.CheckedAt) - refresh; d < -time.Millisecond || d > time.Millisecond {
				t.Fatalf("a difference checked at %s, the next resync at %s: want HOLDERS_REFRESH (%s) after it", r.CheckedAt, h.Live.NextResyncAt, refresh)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no resync within 15 s: %+v", h.Live)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lc.change(lc.Sim.OpenHolder(tok.Mint, 3))
	lc.waitDoc("followed after the resync", contract.HoldersMethodLive, 0)
}
