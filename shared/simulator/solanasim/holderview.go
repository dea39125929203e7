package solanasim

import (
	"context"
	"maps"
	"math/bits"
	"sort"
)

// The holder set as a node sees it at one slot: the generated accounts
// with the changes of holderedits.go in force then, its ground truth and
// its largest accounts.

// holderView is a token's holder set at one slot: the generated accounts
// with the changes in force then.
type holderView struct {
	*holderSet
	total int
	over  map[int]acctState
}

// state is account i's balance or absence in the view.
func (v *holderView) state(i int) acctState {
	if v.over != nil {
		if st, ok := v.over[i]; ok {
			return st
		}
	}
	return v.generated(i)
}

// account is account i in full, and false when it does not exist.
func (v *holderView) account(i int) (tokenAccount, bool) {
	st := v.state(i)
	if st.closed {
		return tokenAccount{}, false
	}
	return tokenAccount{
		index:   i,
		address: v.addressKey(i),
		owner:   v.ownerKey(v.ownerIndex(i)),
		amount:  st.amount,
		size:    v.size(i),
	}, true
}

// holdersNow is tok's holder set now (Server.mu held).
func holdersNow(tok *simToken) holderView {
	hs := tok.holders
	hs.overShared.Store(true) // the view may outlive the lock
	return holderView{holderSet: hs, total: hs.total, over: hs.over}
}

// holdersSeen is tok's holder set as the node of ctx sees it (Server.mu
// held): a lagging node's is the set of its slot.
func (s *Server) holdersSeen(ctx context.Context, tok *simToken) holderView {
	v := holdersNow(tok)
	lag := viewOf(ctx).lag
	edits := tok.holders.edits
	if lag == 0 || len(edits) == 0 {
		return v
	}
	now := s.slot.Load()
	at := now - min(lag, now)
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

// truth is the ground truth of the view: the generated set's, computed
// once, corrected by the accounts that changed.
func (v *holderView) truth() Truth {
	v.compute()
	t := v.holderSet.truth
	if len(v.over) == 0 {
		return t
	}
	hi, lo := v.totalHi, v.totalLo
	count := func(st acctState, i, sign int) {
		if st.closed {
			return
		}
		t.TokenAccounts += sign
		if v.size(i) > tokenAccountLen {
			t.Accounts170 += sign
		} else {
			t.Accounts165 += sign
		}
		if st.amount == 0 {
			return
		}
		t.NonZeroAccounts += sign
		var c uint64
		if sign > 0 {
			lo, c = bits.Add64(lo, st.amount, 0)
			hi += c
		} else {
			lo, c = bits.Sub64(lo, st.amount, 0)
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
			b, st := v.generated(i), v.state(i)
			baseIn, basePos = baseIn || !b.closed, basePos || b.amount > 0
			nowIn, nowPos = nowIn || !st.closed, nowPos || (!st.closed && st.amount > 0)
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

// largest is the view's 20 largest accounts (positive balances), largest
// first: the generated set's largest that did not change, with the
// changed ones; one pass over the set when too many of them changed for
// that to be exact.
func (v *holderView) largest() []BalanceEntry {
	v.compute()
	if len(v.over) == 0 {
		return v.holderSet.largest
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
		if !st.closed && st.amount > 0 {
			items = append(items, topItem{i, st.amount})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[b].less(items[a]) })
	return v.entries(items)
}

func (v *holderView) largestFull() []BalanceEntry {
	var items []topItem
	for i := range v.total {
		if st := v.state(i); !st.closed && st.amount > 0 {
			items = append(items, topItem{i, st.amount})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[b].less(items[a]) })
	return v.entries(items)
}
