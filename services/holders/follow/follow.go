// Package follow keeps the holders collector's live count: a Follower
// joins the token program's notifications, read from a PubSub socket, to
// the getProgramAccounts enumeration that anchors them, and keeps a Live
// (services/holders/tally) exact from one to the next, with the
// comparison of a resync's two counts at one slot. It is fed from
// outside: the collector (services/holders) keeps the socket
// (shared/pubsub) and hands it each message and change of state, runs the
// enumeration, and publishes what Take returns. This package reads
// nothing from the network itself.
package follow

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/contract"
)

// Follower joins the two halves of the live count: the token
// program's notifications, read from a socket, and the enumeration that
// anchors them. Its methods are called by the socket's reader
// (Connected, Notify, Lost) and by the enumeration (Begin, Anchor), on
// goroutines of their own.
//
// An anchor holds only for the socket it was taken on: notifications are
// buffered from the moment the node confirmed the subscription, so that
// those newer than the enumeration's slot are applied on top of it, and a
// socket that ended (a reconnection, a notification that could not be
// read, a slot that went back) leaves no count until a new enumeration
// on the next socket. A count is never carried over a gap.
type Follower struct {
	mint     tally.Owner
	program  string
	maxBytes int64
	// maxPending bounds the notifications buffered before an anchor: past
	// it the socket is dropped (a node sending faster than the
	// enumeration reads), and the next one starts over.
	maxPending int

	mu      sync.Mutex
	session uint64 // the socket's generation; 0: none yet
	// subscribed is set from Connected to Lost: only then are
	// notifications followed and an anchor taken.
	subscribed bool
	live       *tally.Live // nil: not anchored on this socket
	pending    []wire.Change
	changed    bool // a figure of the count changed since the last Take
	// resyncing is set by Begin while a count is live: the
	// notifications are applied to it and also buffered for the new
	// anchor. overflow is set when that buffer filled (the resync's
	// anchor is then refused; the live count goes on).
	resyncing, overflow bool
	// prev is the count a resync replaced, still following the
	// notifications until it is compared with the new one at the same
	// slot (compareBy: at the latest); result is the last comparison.
	prev      *tally.Live
	compareBy time.Time
	result    *contract.HoldersResync
	taken     bool // a Take reported result
}

// ResyncGrace bounds how long a resync waits for the count it replaced
// to reach the new enumeration's slot: a ledger that changed nothing
// since sends no notification, so after it the two are compared at the
// new count's slot.
const ResyncGrace = 5 * time.Second

// New follows mint's token accounts under program; maxBytes bounds each
// tally (tally.Live.Limit), maxPending the notifications buffered before
// an anchor.
func New(mint tally.Owner, program string, maxBytes int64, maxPending int) *Follower {
	return &Follower{mint: mint, program: program, maxBytes: maxBytes, maxPending: maxPending}
}

// ErrNotFollowing is an anchor taken while no socket was subscribed, or
// on a socket that has ended since.
var ErrNotFollowing = errors.New("the subscription ended during the enumeration")

// Connected starts a socket: the node confirmed the subscription, and
// every notification from now on is buffered until the next Anchor.
func (f *Follower) Connected() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.session++
	f.subscribed = true
	f.live, f.pending = nil, f.pending[:0]
	f.resyncing, f.overflow, f.prev = false, false, nil
}

// Lost ends the socket: no count is live until a new socket is anchored.
func (f *Follower) Lost() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lostLocked()
}

func (f *Follower) lostLocked() {
	if f.session != 0 {
		f.session++ // no anchor taken on the old one may land
	}
	f.subscribed = false
	f.live, f.pending = nil, nil
	f.resyncing, f.overflow, f.prev = false, false, nil
}

// Notify takes one message of the socket. An error means the count no
// longer follows the ledger (a message that is not a notification of the
// mint's accounts, a slot behind the last applied, a tally past its
// bound, a full buffer): the socket must be dropped, and the count is
// not live until a new one is anchored.
func (f *Follower) Notify(msg []byte) error {
	ch, err := wire.DecodeProgramNotification(msg, &f.mint, f.program)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.subscribed {
		return errors.New("a notification with no subscription")
	}
	if err != nil {
		f.lostLocked()
		return err
	}
	if f.live == nil {
		if len(f.pending) >= f.maxPending {
			f.lostLocked()
			return fmt.Errorf("%d notifications came before the enumeration anchored them (the bound): the subscription starts over", f.maxPending)
		}
		f.pending = append(f.pending, ch)
		return nil
	}
	if f.resyncing && !f.overflow {
		if len(f.pending) >= f.maxPending {
			f.overflow, f.pending = true, nil
		} else {
			f.pending = append(f.pending, ch)
		}
	}
	before := figures(f.live)
	if _, err := f.live.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount); err != nil {
		f.lostLocked()
		return err
	}
	f.changed = f.changed || figures(f.live) != before
	if f.prev != nil {
		if _, err := f.prev.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount); err != nil {
			f.prev = nil // the new count goes on; this resync compares nothing
		}
		f.compareLocked(time.Now())
	}
	return nil
}

// compareLocked compares the count a resync replaced with the new one
// once it has reached the new one's anchor, or at compareBy.
func (f *Follower) compareLocked(now time.Time) {
	if f.prev == nil || f.live == nil || (f.prev.Slot() < f.live.Anchor() && now.Before(f.compareBy)) {
		return
	}
	r := &contract.HoldersResync{Agreed: f.prev.Holders() == f.live.Holders(),
		Live: f.prev.Holders(), Enumerated: f.live.Holders(), Slot: f.live.Slot(), CheckedAt: now.UTC()}
	f.prev = nil
	if r.Agreed && f.result != nil && !f.result.Agreed && !f.taken {
		return // a difference no Take has reported yet is not hidden by a later agreement
	}
	f.result, f.taken = r, false
}

// Begin is called before an enumeration that is to anchor the count: it
// returns the socket to anchor on, or false when none is subscribed.
//
// While a count is live, Begin starts a resync: the notifications go on
// being applied to it and are also buffered for the new anchor, which
// replaces it; the two are then compared at the same slot (Take reports
// the comparison).
func (f *Follower) Begin() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live != nil {
		f.resyncing, f.overflow, f.pending = true, false, f.pending[:0]
	}
	return f.session, f.subscribed
}

// Buffered is the number of notifications waiting for an anchor.
func (f *Follower) Buffered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// Tally returns an empty tally for an enumeration at slot, bounded as
// the follower's.
func (f *Follower) Tally(slot uint64) *tally.Live {
	l := tally.NewLive(slot)
	l.Limit(f.maxBytes)
	return l
}

// Anchor makes l, seeded by an enumeration begun on session, the live
// count: the notifications buffered since that socket was subscribed are
// applied on top of it (those at or before its slot are already in it).
// It is ErrNotFollowing when that socket has ended meanwhile, and the
// error of a buffered notification that cannot be applied.
func (f *Follower) Anchor(session uint64, l *tally.Live) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.subscribed || session != f.session {
		return ErrNotFollowing
	}
	if f.resyncing && f.overflow {
		f.resyncing, f.overflow, f.pending = false, false, nil
		return fmt.Errorf("more than %d notifications came during the resync's enumeration (the bound): the live count goes on, the next resync tries again", f.maxPending)
	}
	for i := range f.pending {
		ch := &f.pending[i]
		if _, err := l.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount); err != nil {
			if f.resyncing { // the live count goes on; the new one is not taken
				f.resyncing, f.pending = false, nil
				return err
			}
			f.lostLocked()
			return err
		}
	}
	if f.resyncing {
		if f.prev != nil { // the last resync's comparison is still due: now
			f.compareBy = time.Time{}
			f.compareLocked(time.Now())
		}
		f.prev, f.compareBy = f.live, time.Now().Add(ResyncGrace)
		f.resyncing = false
	}
	f.live, f.pending, f.changed = l, nil, true
	f.compareLocked(time.Now())
	return nil
}

// EndResync ends a resync whose enumeration failed: the live count goes
// on, and nothing more is buffered for it.
func (f *Follower) EndResync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resyncing, f.overflow, f.pending = false, false, nil
}

// LiveCount is the live count: holders, non-zero accounts, token accounts
// (closed ones included since the anchor, see tally.Live), and the slot
// it is exact at; ok is false when the count is not anchored on the
// socket that is subscribed.
type LiveCount struct {
	Holders, NonZeroAccounts, TokenAccounts, Slot uint64
	// Anchor is the slot of the enumeration the count is anchored on,
	// Seeded its token accounts, Applied the notifications applied
	// since.
	Anchor, Seeded, Applied uint64
	// Resync is the last comparison of a count a resync replaced with
	// the new one (nil before one); Comparing is set while one waits to
	// be made.
	Resync    *contract.HoldersResync
	Comparing bool
}

// Take returns the live count and whether it changed since the last
// Take; ok is false while no count is live. Its Resync counts as
// reported: a caller publishes what Take returns.
func (f *Follower) Take() (c LiveCount, changed, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == nil {
		return LiveCount{}, false, false
	}
	f.compareLocked(time.Now())
	changed, f.changed = f.changed, false
	f.taken = f.taken || f.result != nil
	l := f.live
	return LiveCount{Holders: l.Holders(), NonZeroAccounts: l.NonZeroAccounts(), TokenAccounts: l.TokenAccounts(), Slot: l.Slot(),
		Anchor: l.Anchor(), Seeded: l.Seeded(), Applied: l.Applied(), Resync: f.result, Comparing: f.prev != nil}, changed, true
}

// Compared makes a resync's comparison that can be made at now, and
// returns the last comparison (nil before one) and whether one is still
// pending: no resync may start then, or its own comparison would replace
// the pending one's, a difference included, as soon as it anchors.
func (f *Follower) Compared(now time.Time) (last *contract.HoldersResync, pending bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compareLocked(now)
	return f.result, f.prev != nil
}

// Due reports whether a poll has something to publish: the count changed
// since the last Take, or a resync's comparison can be made.
func (f *Follower) Due(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == nil {
		return false
	}
	return f.changed || (f.prev != nil && (f.prev.Slot() >= f.live.Anchor() || !now.Before(f.compareBy)))
}

// figures are the published figures of a tally: a notification that
// changes none of them (a balance moved between two positive accounts)
// is applied, and published with the next change or HOLDERS_REFRESH.
func figures(l *tally.Live) [3]uint64 {
	return [3]uint64{l.Holders(), l.NonZeroAccounts(), l.TokenAccounts()}
}

// Following reports whether a count is live, no resync is under way and
// none's comparison is pending: a resync may start.
func (f *Follower) Following() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live != nil && !f.resyncing && f.prev == nil
}

// Subscribed reports whether a socket is subscribed now.
func (f *Follower) Subscribed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subscribed
}
