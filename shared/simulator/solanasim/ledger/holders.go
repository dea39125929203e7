package ledger

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
)

// Holders parameterises a token's deterministic holder set. Account i is a
// pure function of (token, Seed, i), so the simulator streams any number of
// accounts without storing them.
//
// Ownership is built so the truth is cheap: the first
// floor(Accounts*MultiAccountShare) accounts belong to K owners that each hold
// about AccountsPerOwner of them (account i belongs to owner i mod K, so an
// owner's accounts are spread through the stream); every other account has
// an owner of its own.
type Holders struct {
	// Accounts is the number of token accounts of the mint.
	Accounts int
	// Seed makes the set deterministic; two seeds give unrelated sets.
	Seed uint64
	// MultiAccountShare (0..1) is the share of token accounts held by owners
	// with several accounts.
	MultiAccountShare float64
	// AccountsPerOwner is how many accounts a multi-account owner holds
	// (default 3).
	AccountsPerOwner int
	// ZeroShare (0..1) is the share of accounts with a zero balance.
	ZeroShare float64
	// ExtendedShare (0..1), Token-2022 only, is the share of 170-byte
	// accounts (account type byte 2 at 165 and an ImmutableOwner extension);
	// the others are 165 bytes.
	ExtendedShare float64
}

// Truth is the exact ground truth of a holder set.
type Truth struct {
	// Holders is the number of unique owners whose summed balance is above
	// zero.
	Holders int
	// Owners is the number of unique owners, zero balances included.
	Owners int
	// TokenAccounts is the number of token accounts of the mint.
	TokenAccounts int
	// NonZeroAccounts is the number of token accounts with a positive amount.
	NonZeroAccounts int
	// Accounts165 and Accounts170 split TokenAccounts by data length.
	Accounts165, Accounts170 int
	// TotalAmount is the sum of all balances (saturating at 2^64-1).
	TotalAmount uint64
}

// BalanceEntry is one of the largest accounts of a mint.
type BalanceEntry struct {
	Address string
	Amount  uint64
}

// holderSet generates the accounts of one mint.
type holderSet struct {
	mint     Key
	program  Program
	n        int
	multi    int // accounts held by multi-account owners
	k        int // number of multi-account owners
	base     uint64
	zeroT    uint64 // zero when h < zeroT
	extT     uint64 // extended when h < extT
	avg      uint64
	extended bool

	once    sync.Once
	truth   Truth
	totalHi uint64 // the generated balances' sum, high and low words
	totalLo uint64
	top     []topItem // the topDepth largest generated accounts, largest first
	largest []BalanceEntry

	// The changes made on demand (holderedits.go), guarded by Ledger.mu:
	// total is the number of account indices (n, then the accounts
	// opened since), over the state of each account that departs from
	// the generated one (replaced, never written in place: a snapshot
	// is the map), edits the log of changes, oldest first.
	total int
	over  map[int]AccountState
	edits []holderEdit
	// overShared is set when a view took over as its snapshot: the next
	// change writes a copy.
	overShared atomic.Bool

	// The index of indexOf, guarded by idxMu: the first 8 bytes of each
	// address of the first indexed indices, clashed when two shared them.
	idxMu   sync.Mutex
	byWord  map[uint64]int32
	indexed int
	clashed bool
}

// topDepth is how many of the largest generated accounts compute keeps:
// more than 20, so that the 20 largest stay exact after some of them
// changed (holderView.largest).
const topDepth = 64

func shareThreshold(s float64) uint64 {
	switch {
	case s <= 0:
		return 0
	case s >= 1:
		return ^uint64(0)
	}
	return uint64(s * (1 << 63) * 2)
}

func newHolderSet(mint Key, program Program, supply uint64, h Holders) (*holderSet, error) {
	if h.Accounts < 0 {
		return nil, fmt.Errorf("holders: Accounts %d is negative", h.Accounts)
	}
	for name, v := range map[string]float64{"MultiAccountShare": h.MultiAccountShare, "ZeroShare": h.ZeroShare, "ExtendedShare": h.ExtendedShare} {
		if v < 0 || v > 1 {
			return nil, fmt.Errorf("holders: %s %v outside 0..1", name, v)
		}
	}
	per := h.AccountsPerOwner
	if per == 0 {
		per = 3
	}
	if per < 2 {
		return nil, fmt.Errorf("holders: AccountsPerOwner %d, want >= 2", per)
	}
	hs := &holderSet{mint: mint, program: program, n: h.Accounts, total: h.Accounts}
	hs.multi = int(float64(h.Accounts) * h.MultiAccountShare)
	hs.k = (hs.multi + per - 1) / per
	hs.base = mix(h.Seed ^ binary.LittleEndian.Uint64(mint[:8]) ^ mix(binary.LittleEndian.Uint64(mint[8:16])))
	hs.zeroT = shareThreshold(h.ZeroShare)
	if program == ProgramToken2022 {
		hs.extT = shareThreshold(h.ExtendedShare)
		hs.extended = h.ExtendedShare > 0
	}
	if supply == 0 {
		supply = 1_000_000_000_000_000_000
	}
	if h.Accounts > 0 {
		hs.avg = supply / 4 / uint64(h.Accounts)
	}
	if hs.avg == 0 {
		hs.avg = 1
	}
	return hs, nil
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (hs *holderSet) h(i int, tag uint64) uint64 {
	return mix(hs.base + tag*0xd1b54a32d192ed03 ^ mix(uint64(i)+tag<<40))
}

// TokenAccount is one token account of a mint.
type TokenAccount struct {
	Index   int // its index in the holder set
	Address Key
	Owner   Key
	Amount  uint64
	Size    int // 165 or 170
}

func (hs *holderSet) ownerIndex(i int) int {
	if i < hs.multi {
		return i % hs.k
	}
	return hs.k + (i - hs.multi)
}

func (hs *holderSet) ownerKey(j int) Key {
	var p Key
	for w := range 4 {
		binary.LittleEndian.PutUint64(p[w*8:], hs.h(j, uint64(0x10+w)))
	}
	return p
}

func (hs *holderSet) addressKey(i int) Key {
	var p Key
	for w := range 4 {
		binary.LittleEndian.PutUint64(p[w*8:], hs.h(i, uint64(1+w)))
	}
	return p
}

// amount returns account i's balance (cheap: no address derivation).
func (hs *holderSet) amount(i int) uint64 {
	if i >= 3 && hs.h(i, 5) < hs.zeroT {
		return 0
	}
	r := hs.h(i, 6)
	if i < 3 || hs.h(i, 7)%1000 == 0 { // a whale
		return hs.avg*500 + r%hs.avg
	}
	return 1 + r%(2*hs.avg)
}

func (hs *holderSet) size(i int) int {
	if hs.extended && hs.h(i, 8) < hs.extT {
		return TokenAccountLen + 5
	}
	return TokenAccountLen
}

// account returns account i as generated.
func (hs *holderSet) account(i int) TokenAccount { return hs.accountWith(i, hs.amount(i)) }

// accountWith returns account i holding amount.
func (hs *holderSet) accountWith(i int, amount uint64) TokenAccount {
	return TokenAccount{
		Index:   i,
		Address: hs.addressKey(i),
		Owner:   hs.ownerKey(hs.ownerIndex(i)),
		Amount:  amount,
		Size:    hs.size(i),
	}
}

// data writes the account's bytes (real SPL layout) into buf[:a.Size].
func (hs *holderSet) data(a *TokenAccount, buf []byte) []byte {
	b := buf[:a.Size]
	clear(b)
	copy(b[0:32], hs.mint[:])
	copy(b[32:64], a.Owner[:])
	binary.LittleEndian.PutUint64(b[64:72], a.Amount)
	// delegate COption (72..108) None, state at 108: Initialized
	b[108] = 1
	// is_native (109..121), delegated_amount (121..129), close_authority
	// (129..165): None / zero.
	if a.Size > TokenAccountLen {
		b[165] = AccountTypeAccount
		binary.LittleEndian.PutUint16(b[166:168], extImmutableOwner)
		binary.LittleEndian.PutUint16(b[168:170], 0)
	}
	return b
}

// compute runs the one pass that yields the truth and the largest accounts;
// memory is one bit per multi-account owner plus a 20-entry heap.
func (hs *holderSet) compute() {
	hs.once.Do(func() {
		t := Truth{TokenAccounts: hs.n, Owners: hs.k + (hs.n - hs.multi)}
		positive := make([]uint64, (hs.k+63)/64)
		top := &minHeap{}
		for i := range hs.n {
			amt := hs.amount(i)
			if hs.size(i) > TokenAccountLen {
				t.Accounts170++
			} else {
				t.Accounts165++
			}
			if amt == 0 {
				continue
			}
			t.NonZeroAccounts++
			var carry uint64
			t.TotalAmount, carry = bits.Add64(t.TotalAmount, amt, 0)
			hs.totalHi += carry
			if i < hs.multi {
				j := i % hs.k
				positive[j/64] |= 1 << (j % 64)
			} else {
				t.Holders++
			}
			if top.Len() < topDepth {
				heap.Push(top, topItem{i, amt})
			} else if (*top)[0].less(topItem{i, amt}) {
				(*top)[0] = topItem{i, amt}
				heap.Fix(top, 0)
			}
		}
		for _, w := range positive {
			t.Holders += bits.OnesCount64(w)
		}
		hs.top = append([]topItem(nil), (*top)...)
		sort.Slice(hs.top, func(a, b int) bool { return hs.top[b].less(hs.top[a]) })
		hs.largest = hs.entries(hs.top)
		hs.totalLo = t.TotalAmount
		if hs.totalHi != 0 {
			t.TotalAmount = ^uint64(0)
		}
		hs.truth = t
	})
}

// entries are the 20 first items as BalanceEntry.
func (hs *holderSet) entries(items []topItem) []BalanceEntry {
	items = items[:min(len(items), 20)]
	out := make([]BalanceEntry, len(items))
	for k, it := range items {
		out[k] = BalanceEntry{Address: hs.addressKey(it.i).String(), Amount: it.amount}
	}
	return out
}

type topItem struct {
	i      int
	amount uint64
}

// less orders by amount, then by the larger index (so the smaller index
// ranks first among equals).
func (a topItem) less(b topItem) bool {
	if a.amount != b.amount {
		return a.amount < b.amount
	}
	return a.i > b.i
}

type minHeap []topItem

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(a, b int) bool { return h[a].less(h[b]) }
func (h minHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(topItem)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
