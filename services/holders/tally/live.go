package tally

import (
	"errors"
	"fmt"
	"runtime"
)

// Live is the holder count kept exact between enumerations, from each
// token account's whole new state as the token program's notifications
// carry it: an enumeration seeds it with every account, at the
// enumeration's slot, and each notification newer than that slot sets one
// account (created, balance changed, moved to zero, or to another owner).
//
// It keeps what exactness needs and nothing more: per account, its owner
// and whether its balance is positive; per owner, how many of its accounts
// are positive. An owner holds when that number is above zero, so a
// balance moved between two accounts of one owner changes nothing, and no
// sum is ever formed. Both sets are keySets: at 1,000,000 accounts of
// 700,000 owners about 72 MiB, bounded by Limit, in an arena outside
// the Go heap (returned when the Live is no longer reachable).
//
// A closed token account is never notified to a token-program
// subscription (its owner becomes the system program, which the filters
// exclude); a token account can be closed only at a zero balance, so a
// closure never changes the count, but TokenAccounts counts a closed
// account until the next enumeration.
type Live struct {
	accounts keySet // value: owner index<<1 | 1 when the balance is positive
	owners   keySet // value: the owner's accounts with a positive balance
	holders  uint64
	nonZero  uint64
	maxBytes int64

	anchor  uint64 // the enumeration's slot
	slot    uint64 // the slot the count is exact at
	applied uint64 // notifications applied after the anchor
	seeded  uint64 // accounts of the enumeration
}

// NewLive returns an empty tally anchored at slot, the context slot of
// the enumeration that will Seed it.
func NewLive(slot uint64) *Live {
	a := newArena()
	l := &Live{accounts: newKeySet(true, a), owners: newKeySet(true, a), anchor: slot, slot: slot}
	runtime.AddCleanup(l, (*arena).release, a)
	return l
}

// AnchorAt sets the slot of the enumeration that seeded the tally (the
// oldest of its queries'), once it is known.
func (l *Live) AnchorAt(slot uint64) {
	l.anchor, l.slot, l.seeded = slot, slot, uint64(l.accounts.len())
}

// Anchor is the slot of the enumeration that seeded the tally.
func (l *Live) Anchor() uint64 { return l.anchor }

// Applied is the number of notifications applied after the anchor.
func (l *Live) Applied() uint64 { return l.applied }

// Seeded is the number of token accounts of the enumeration.
func (l *Live) Seeded() uint64 { return l.seeded }

// Limit bounds the tally's memory (Bytes) at maxBytes; 0: unbounded.
func (l *Live) Limit(maxBytes int64) { l.maxBytes = maxBytes }

// Bytes is the memory of both sets.
func (l *Live) Bytes() int64 { return l.accounts.bytes() + l.owners.bytes() }

// Holders is the number of owners with a positive balance.
func (l *Live) Holders() uint64 { return l.holders }

// NonZeroAccounts is the number of accounts with a positive balance.
func (l *Live) NonZeroAccounts() uint64 { return l.nonZero }

// TokenAccounts is the number of accounts the tally knows: those of the
// enumeration and those created since (closed ones included, see Live).
func (l *Live) TokenAccounts() uint64 { return uint64(l.accounts.len()) }

// Slot is the slot the count is exact at: the enumeration's, or the last
// notification's applied.
func (l *Live) Slot() uint64 { return l.slot }

// Seed records one account of the enumeration. The same account seeded
// twice is an error: an enumeration names each account once.
func (l *Live) Seed(account, owner *Owner, amount uint64) error {
	h := l.accounts.hash(account)
	if _, ok := l.accounts.find(account, h); ok {
		return fmt.Errorf("token account %x listed twice by the enumeration", account[:4])
	}
	return l.set(account, h, owner, amount)
}

// ErrGap is a notification the tally cannot take without losing
// exactness: its slot is behind the last one applied. The count is no
// longer live; a new enumeration re-anchors it.
var ErrGap = errors.New("a notification older than the last one applied")

// Apply sets account to its state at slot, as a notification carries it.
// A notification at or before the anchor is already in the enumeration
// and changes nothing; one behind the last applied is ErrGap. It reports
// whether the holder count changed.
func (l *Live) Apply(slot uint64, account, owner *Owner, amount uint64) (bool, error) {
	switch {
	case slot <= l.anchor:
		return false, nil
	case slot < l.slot:
		return false, fmt.Errorf("%w: slot %d after %d", ErrGap, slot, l.slot)
	}
	before := l.holders
	if err := l.set(account, l.accounts.hash(account), owner, amount); err != nil {
		return false, err
	}
	l.slot = slot
	l.applied++
	return l.holders != before, nil
}

// set makes account (hash h) owned by owner with amount.
func (l *Live) set(account *Owner, h uint32, owner *Owner, amount uint64) error {
	oh := l.owners.hash(owner)
	o, known := l.owners.find(owner, oh)
	i, exists := l.accounts.find(account, h)
	if err := l.fits(!known, !exists); err != nil {
		return err
	}
	if !known {
		o = l.owners.insert(owner, oh)
	}
	next := o << 1
	if amount > 0 {
		next |= 1
	}
	if !exists {
		i = l.accounts.insert(account, h)
	} else {
		prev := *l.accounts.value(i)
		if prev == next {
			return nil
		}
		if prev&1 == 1 {
			l.drop(prev >> 1)
		}
	}
	*l.accounts.value(i) = next
	if next&1 == 1 {
		l.nonZero++
		if n := l.owners.value(o); *n == 0 {
			l.holders++
			*n = 1
		} else {
			*n++
		}
	}
	return nil
}

// drop takes one positive account from owner o.
func (l *Live) drop(o uint32) {
	l.nonZero--
	n := l.owners.value(o)
	*n--
	if *n == 0 {
		l.holders--
	}
}

// fits checks that the inserts to come keep the tally within Limit.
func (l *Live) fits(newOwner, newAccount bool) error {
	if l.maxBytes <= 0 {
		return nil
	}
	var g int64
	if newOwner {
		g += l.owners.growth()
	}
	if newAccount {
		g += l.accounts.growth()
	}
	if g > 0 && l.Bytes()+g > l.maxBytes {
		return &LimitError{Accounts: l.TokenAccounts(), Holders: l.holders, MaxBytes: l.maxBytes}
	}
	return nil
}
