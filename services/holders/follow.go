package holders

import (
	"errors"
	"fmt"
	"sync"
)

// Follower joins the two halves of the live count (issue 36): the token
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
	mint     Owner
	program  string
	maxBytes int64
	// maxPending bounds the notifications buffered before an anchor: past
	// it the socket is dropped (a node sending faster than the
	// enumeration reads), and the next one starts over.
	maxPending int

	mu      sync.Mutex
	session uint64 // the socket's generation; 0: none
	live    *Live  // nil: not anchored on this socket
	pending []Change
	changed bool // the count changed since the last Take
}

// NewFollower follows mint's token accounts under program; maxBytes
// bounds each tally (Live.Limit), maxPending the notifications buffered
// before an anchor.
func NewFollower(mint Owner, program string, maxBytes int64, maxPending int) *Follower {
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
	f.live, f.pending = nil, f.pending[:0]
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
	f.live, f.pending = nil, nil
}

// Notify takes one message of the socket. An error means the count no
// longer follows the ledger (a message that is not a notification of the
// mint's accounts, a slot behind the last applied, a tally past its
// bound, a full buffer): the socket must be dropped, and the count is
// not live until a new one is anchored.
func (f *Follower) Notify(msg []byte) error {
	ch, err := DecodeProgramNotification(msg, &f.mint, f.program)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.session == 0 {
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
	moved, err := f.live.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount)
	if err != nil {
		f.lostLocked()
		return err
	}
	f.changed = f.changed || moved
	return nil
}

// Begin is called before an enumeration that is to anchor the count: it
// returns the socket to anchor on, or false when none is subscribed.
func (f *Follower) Begin() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.session, f.session != 0
}

// Buffered is the number of notifications waiting for an anchor.
func (f *Follower) Buffered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// Tally returns an empty tally for an enumeration at slot, bounded as
// the follower's.
func (f *Follower) Tally(slot uint64) *Live {
	l := NewLive(slot)
	l.Limit(f.maxBytes)
	return l
}

// Anchor makes l, seeded by an enumeration begun on session, the live
// count: the notifications buffered since that socket was subscribed are
// applied on top of it (those at or before its slot are already in it).
// It is ErrNotFollowing when that socket has ended meanwhile, and the
// error of a buffered notification that cannot be applied.
func (f *Follower) Anchor(session uint64, l *Live) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if session == 0 || session != f.session {
		return ErrNotFollowing
	}
	for i := range f.pending {
		ch := &f.pending[i]
		if _, err := l.Apply(ch.Slot, &ch.Account, &ch.Owner, ch.Amount); err != nil {
			f.lostLocked()
			return err
		}
	}
	f.live, f.pending, f.changed = l, nil, true
	return nil
}

// LiveCount is the live count: holders, non-zero accounts, token accounts
// (closed ones included since the anchor, see Live), and the slot it is
// exact at; ok is false when the count is not anchored on the socket
// that is subscribed.
type LiveCount struct {
	Holders, NonZeroAccounts, TokenAccounts, Slot uint64
}

// Take returns the live count and whether it changed since the last
// Take; ok is false while no count is live.
func (f *Follower) Take() (c LiveCount, changed, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == nil {
		return LiveCount{}, false, false
	}
	changed, f.changed = f.changed, false
	l := f.live
	return LiveCount{Holders: l.Holders(), NonZeroAccounts: l.NonZeroAccounts(), TokenAccounts: l.TokenAccounts(), Slot: l.Slot()}, changed, true
}
