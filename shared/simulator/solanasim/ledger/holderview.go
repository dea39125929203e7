package ledger

import (
	"maps"
	"math/bits"
	"sort"
)

// The holder set as a node sees it at one slot: the generated accounts
// with the changes of holderedits.go in force then, its ground truth and
// its largest accounts.

// HolderView is a token's holder set at one slot: the generated accounts
// with the changes in force then. It is a snapshot, read without the
// Ledger's lock: a change after it was taken writes a copy of what it
// holds (holderSet.overShared).
type HolderView struct {
	*holderSet
	total int
	over  map[int]AccountState
}

// Mint is the view's mint.
func (v HolderView) Mint() Key { return v.mint }

// Program is the token program that owns the view's accounts.
func (v HolderView) Program() Program { return v.program }

// Total is the number of account indices: every index below it is an
// account of the set, open or closed (Account reports which).
func (v HolderView) Total() int { return v.total }

// State is account i's balance or absence in the view.
func (v HolderView) State(i int) AccountState {
	if v.over != nil {
		if st, ok := v.over[i]; ok {
			return st
		}
	}
	return v.generated(i)
}

// Account is account i in full, and false when it does not exist.
func (v HolderView) Account(i int) (TokenAccount, bool) {
	st := v.State(i)
	if st.Closed {
		return TokenAccount{}, false
	}
	return v.accountWith(i, st.Amount), true
}

// Owner is the owner of account i.
func (v HolderView) Owner(i int) Key { return v.ownerKey(v.ownerIndex(i)) }

// Address is the address of account i.
func (v HolderView) Address(i int) Key { return v.addressKey(i) }

// Data writes account a's bytes (real SPL layout) into buf[:a.Size].
func (v HolderView) Data(a *TokenAccount, buf []byte) []byte { return v.data(a, buf) }

// holdersNow is tok's holder set now (Ledger.mu held).
func holdersNow(tok *token) HolderView {
	hs := tok.holders
	hs.overShared.Store(true) // the view may outlive the lock
	return HolderView{holderSet: hs, total: hs.total, over: hs.over}
}

// holdersAt is tok's holder set as a node lagging by lag slots sees it
// (Ledger.mu held): the set of its slot.
func (l *Ledger) holdersAt(tok *token, lag uint64) HolderView {
	v := holdersNow(tok)
	edits := tok.holders.edits
	if lag == 0 || len(edits) == 0 {
		return v
	}
	at := l.slot - min(lag, l.slot)
	if edits[len(edits)-1].slot <= at {
		return v
	}
	v.over = maps.Clone(v.over)
	for k := len(edits) - 1; k >= 0 && edits[k].slot > at; k-- {
		e := &edits[k]
		if e.before == v.generated(e.index) {
			delete(v.over, e.index)
		} else {
			v.over[e.index] = e.before
		}
	}
	return v
}

// ownerAccounts are the account indices of owner j among the generated
// ones; an opened account's owner has that account alone.
func (hs *holderSet) ownerAccounts(j int) []int {
	if j < hs.k {
		out := make([]int, 0, (hs.multi-j+hs.k-1)/hs.k)
		for i := j; i < hs.multi; i += hs.k {
			out = append(out, i)
		}
		return out
	}
	return []int{hs.multi + (j - hs.k)}
}

// Truth is the ground truth of the view: the generated set's, computed
// once, corrected by the accounts that changed.
func (v HolderView) Truth() Truth {
	v.compute()
	t := v.truth
	if len(v.over) == 0 {
		return t
	}
	hi, lo := v.totalHi, v.totalLo
	count := func(st AccountState, i, sign int) {
		if st.Closed {
			return
		}
		t.TokenAccounts += sign
		if v.size(i) > TokenAccountLen {
			t.Accounts170 += sign
		} else {
			t.Accounts165 += sign
		}
		if st.Amount == 0 {
			return
		}
		t.NonZeroAccounts += sign
		var c uint64
		if sign > 0 {
			lo, c = bits.Add64(lo, st.Amount, 0)
			hi += c
		} else {
			lo, c = bits.Sub64(lo, st.Amount, 0)
			hi -= c
		}
	}
	owners := map[int]struct{}{}
	for i, st := range v.over {
		count(v.generated(i), i, -1)
		count(st, i, +1)
		owners[v.ownerIndex(i)] = struct{}{}
	}
	for j := range owners {
		var baseIn, basePos, nowIn, nowPos bool
		for _, i := range v.ownerAccounts(j) {
			b, st := v.generated(i), v.State(i)
			baseIn, basePos = baseIn || !b.Closed, basePos || b.Amount > 0
			nowIn, nowPos = nowIn || !st.Closed, nowPos || (!st.Closed && st.Amount > 0)
		}
		t.Owners += b2i(nowIn) - b2i(baseIn)
		t.Holders += b2i(nowPos) - b2i(basePos)
	}
	t.TotalAmount = lo
	if hi != 0 {
		t.TotalAmount = ^uint64(0)
	}
	return t
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Largest is the view's 20 largest accounts (positive balances), largest
// first: the generated set's largest that did not change, with the
// changed ones; one pass over the set when too many of them changed for
// that to be exact.
func (v HolderView) Largest() []BalanceEntry {
	v.compute()
	if len(v.over) == 0 {
		return v.largest
	}
	items := make([]topItem, 0, len(v.top)+len(v.over))
	kept := 0
	for _, it := range v.top {
		if _, ok := v.over[it.i]; !ok {
			items = append(items, it)
			kept++
		}
	}
	if len(v.top) == topDepth && kept < 20 {
		return v.largestFull()
	}
	for i, st := range v.over {
		if !st.Closed && st.Amount > 0 {
			items = append(items, topItem{i, st.Amount})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[b].less(items[a]) })
	return v.entries(items)
}

func (v HolderView) largestFull() []BalanceEntry {
	var items []topItem
	for i := range v.total {
		if st := v.State(i); !st.Closed && st.Amount > 0 {
			items = append(items, topItem{i, st.Amount})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[b].less(items[a]) })
	return v.entries(items)
}
