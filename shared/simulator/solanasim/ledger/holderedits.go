package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sort"
)

// Holder changes on demand. A token's accounts are generated (holders.go);
// the changes made since depart from them: an account opened (a new index
// after the generated ones, with an owner of its own), a balance set, an
// account closed. Each change is a transaction that lands in a slot of its
// own, after the one the ledger was at; the log of changes lets a lagging
// node answer the holder set of its slot, and PubSub tell each slot's
// changed accounts (programSubscribe). The supply is left as it is, as
// burns and mints leave the holder set.

// AccountState is a token account's balance, or its absence (closed, or not
// opened yet).
type AccountState struct {
	Amount uint64
	Closed bool
}

// holderEdit is one change of one account, in force from slot on.
type holderEdit struct {
	slot          uint64
	index         int
	before, after AccountState
}

// maxHolderEdits bounds the log of changes per token (it keeps the last
// maxHolderEdits to twice as many): a node lagging past the oldest sees
// the changes made before it as made, and a socket that far behind misses
// their notifications.
const maxHolderEdits = 4096

// Errors of the ledger's changes (wrapped), for the control
// endpoint's status.
var (
	ErrUnknownMint    = errors.New("unknown mint")
	ErrUnknownAccount = errors.New("unknown token account")
)

// generated is account i as generated: indices past n are not opened.
func (hs *holderSet) generated(i int) AccountState {
	if i >= hs.n {
		return AccountState{Closed: true}
	}
	return AccountState{Amount: hs.amount(i)}
}

// indexOf finds the account at address among the first total indices,
// through an index of the addresses' first 8 bytes built as it is needed
// (a linear pass, hashing every address, took 6 ms a change at 1,000,000
// accounts); two addresses sharing those bytes make it look for the
// second by that pass.
func (hs *holderSet) indexOf(address Key, total int) (int, bool) {
	hs.idxMu.Lock()
	defer hs.idxMu.Unlock()
	if hs.byWord == nil {
		hs.byWord = make(map[uint64]int32, total)
	}
	for ; hs.indexed < total; hs.indexed++ {
		w := hs.h(hs.indexed, 1)
		if _, dup := hs.byWord[w]; dup {
			hs.clashed = true
			continue
		}
		hs.byWord[w] = int32(hs.indexed)
	}
	if i, ok := hs.byWord[binary.LittleEndian.Uint64(address[:8])]; ok && int(i) < total && hs.addressKey(int(i)) == address {
		return int(i), true
	}
	if hs.clashed {
		for i := range total {
			if hs.addressKey(i) == address {
				return i, true
			}
		}
	}
	return 0, false
}

// HolderChange is what one holder change did: the slot it landed in and
// the accounts it changed, as they are after it.
type HolderChange struct {
	Mint     string          `json:"mint"`
	Slot     uint64          `json:"slot"`
	Accounts []AccountChange `json:"accounts"`
}

// AccountChange is one token account after a holder change.
type AccountChange struct {
	Address string `json:"address"`
	Owner   string `json:"owner"`
	// Amount is the balance in base units (a decimal string in JSON, as
	// the node's amounts).
	Amount uint64 `json:"amount,string"`
	// Closed reports an account closed by the change.
	Closed bool `json:"closed"`
}

// OpenHolder opens a token account of mint ("" is the first token added)
// with a new owner and amount base units: a new holder, or with 0 an
// account opened empty.
func (l *Ledger) OpenHolder(mint string, amount uint64) (HolderChange, error) {
	return l.changeHolders(mint, nil, func(hs *holderSet, _ []int, set func(int, AccountState)) error {
		set(hs.total, AccountState{Amount: amount})
		hs.total++
		return nil
	})
}

// SetHolderBalance sets the balance of mint's token account: 0 is a
// holder who sold out, a positive amount after 0 a holder back. It is
// refused for a closed account and when the balance is amount already.
func (l *Ledger) SetHolderBalance(mint, account string, amount uint64) (HolderChange, error) {
	return l.changeHolders(mint, []string{account}, func(hs *holderSet, idx []int, set func(int, AccountState)) error {
		if cur := hs.state(idx[0]); cur.Amount == amount {
			return fmt.Errorf("the balance of %s is %d already", account, amount)
		}
		set(idx[0], AccountState{Amount: amount})
		return nil
	})
}

// BackHolder sets the balance of an account at 0 to amount: a holder
// back, refused for an account that holds some.
func (l *Ledger) BackHolder(mint, account string, amount uint64) (HolderChange, error) {
	return l.changeHolders(mint, []string{account}, func(hs *holderSet, idx []int, set func(int, AccountState)) error {
		if cur := hs.state(idx[0]); cur.Amount != 0 {
			return fmt.Errorf("%s holds %d: a holder back comes from 0", account, cur.Amount)
		}
		set(idx[0], AccountState{Amount: amount})
		return nil
	})
}

// MoveHolderBalance moves amount base units (above 0) from one token
// account of mint to another, both changed in one slot. It is refused
// when from holds less than amount or when from and to are one account.
func (l *Ledger) MoveHolderBalance(mint, from, to string, amount uint64) (HolderChange, error) {
	return l.changeHolders(mint, []string{from, to}, func(hs *holderSet, idx []int, set func(int, AccountState)) error {
		a, b := hs.state(idx[0]), hs.state(idx[1])
		switch {
		case idx[0] == idx[1]:
			return errors.New("from and to are one account")
		case amount == 0:
			return errors.New("moving 0")
		case a.Amount < amount:
			return fmt.Errorf("%s holds %d, fewer than %d", from, a.Amount, amount)
		case b.Amount > ^uint64(0)-amount:
			return fmt.Errorf("%s would hold more than 2^64-1", to)
		}
		set(idx[0], AccountState{Amount: a.Amount - amount})
		set(idx[1], AccountState{Amount: b.Amount + amount})
		return nil
	})
}

// CloseHolderAccount closes mint's token account, which must hold 0 (the
// token program refuses to close an account with a balance).
func (l *Ledger) CloseHolderAccount(mint, account string) (HolderChange, error) {
	return l.changeHolders(mint, []string{account}, func(hs *holderSet, idx []int, set func(int, AccountState)) error {
		if cur := hs.state(idx[0]); cur.Amount != 0 {
			return fmt.Errorf("%s holds %d: only an account at 0 can be closed", account, cur.Amount)
		}
		set(idx[0], AccountState{Closed: true})
		return nil
	})
}

// state is account i now (Ledger.mu held).
func (hs *holderSet) state(i int) AccountState {
	v := HolderView{holderSet: hs, total: hs.total, over: hs.over}
	return v.State(i)
}

// changeHolders makes one holder change of mint at a new slot: it finds
// the accounts (open ones), and f sets their states through set.
func (l *Ledger) changeHolders(mint string, accounts []string, f func(hs *holderSet, idx []int, set func(int, AccountState)) error) (HolderChange, error) {
	k, err := l.mintKey(mint)
	if err != nil {
		return HolderChange{}, err
	}
	l.mu.RLock()
	tok, ok := l.tokens[k]
	var total int
	if ok {
		total = tok.holders.total
	}
	l.mu.RUnlock()
	if !ok {
		return HolderChange{}, fmt.Errorf("solanasim: %w %s", ErrUnknownMint, k)
	}
	hs := tok.holders
	// The addresses are looked for before the lock is taken: an index's
	// address never changes.
	idx := make([]int, len(accounts))
	for n, a := range accounts {
		ak, err := ParseKey(a)
		if err != nil {
			return HolderChange{}, fmt.Errorf("solanasim: account %q: %w", a, err)
		}
		i, found := hs.indexOf(ak, total)
		if !found {
			return HolderChange{}, fmt.Errorf("solanasim: %w %s of mint %s", ErrUnknownAccount, a, k)
		}
		idx[n] = i
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tokens[k] != tok {
		return HolderChange{}, fmt.Errorf("solanasim: mint %s was replaced", k)
	}
	for n, i := range idx {
		if hs.state(i).Closed {
			return HolderChange{}, fmt.Errorf("solanasim: %w %s of mint %s (closed)", ErrUnknownAccount, accounts[n], k)
		}
	}
	type set struct {
		i  int
		st AccountState
	}
	var sets []set
	if err := f(hs, idx, func(i int, st AccountState) { sets = append(sets, set{i, st}) }); err != nil {
		return HolderChange{}, fmt.Errorf("solanasim: %w", err)
	}
	l.slot++
	slot := l.slot
	// A new map when a reader took the one in place as its snapshot
	// (holdersNow) since the last change; otherwise it is written in
	// place (a copy at every change made a stream of them quadratic).
	over := hs.over
	if over == nil || hs.overShared.Load() {
		over = maps.Clone(hs.over)
		if over == nil {
			over = map[int]AccountState{}
		}
		hs.overShared.Store(false)
	}
	hs.over = over
	ch := HolderChange{Mint: k.String(), Slot: slot}
	for _, st := range sets {
		before := hs.state(st.i)
		if b := hs.generated(st.i); st.st == b {
			delete(over, st.i)
		} else {
			over[st.i] = st.st
		}
		hs.edits = append(hs.edits, holderEdit{slot: slot, index: st.i, before: before, after: st.st})
		ch.Accounts = append(ch.Accounts, AccountChange{
			Address: hs.addressKey(st.i).String(),
			Owner:   hs.ownerKey(hs.ownerIndex(st.i)).String(),
			Amount:  st.st.Amount,
			Closed:  st.st.Closed,
		})
	}
	if len(hs.edits) > 2*maxHolderEdits { // trimmed once every maxHolderEdits changes, not at each
		hs.edits = append([]holderEdit(nil), hs.edits[len(hs.edits)-maxHolderEdits:]...)
	}
	l.signal()
	return ch, nil
}

// mintKey is mint's key; "" is the first token added.
func (l *Ledger) mintKey(mint string) (Key, error) {
	if mint == "" {
		l.mu.RLock()
		defer l.mu.RUnlock()
		if !l.hasDefault {
			return Key{}, errors.New("solanasim: no token")
		}
		return l.defaultMint, nil
	}
	k, err := ParseKey(mint)
	if err != nil {
		return Key{}, fmt.Errorf("solanasim: mint: %w", err)
	}
	return k, nil
}

// ChangedAccount is one token account a slot changed, as that slot left
// it.
type ChangedAccount struct {
	Slot    uint64
	Closed  bool
	Account TokenAccount
	hs      *holderSet
}

// Data writes the account's bytes (real SPL layout) into buf[:Account.Size].
func (c *ChangedAccount) Data(buf []byte) []byte { return c.hs.data(&c.Account, buf) }

// ProgramChanges are the token accounts of program changed from slot
// from to the slot a node lagging by lag is at (to, returned): one per
// account and slot, as the slot left it, by slot, then mint, then order
// of change.
func (l *Ledger) ProgramChanges(program Key, from, lag uint64) (changes []ChangedAccount, to uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	to = l.slot - min(lag, l.slot)
	if from > to {
		return nil, to
	}
	var sets []*holderSet
	for _, tok := range l.tokens {
		if tok.holders.program.Key() == program && len(tok.holders.edits) > 0 {
			sets = append(sets, tok.holders)
		}
	}
	if len(sets) == 0 {
		return nil, to
	}
	sort.Slice(sets, func(a, b int) bool { return bytes.Compare(sets[a].mint[:], sets[b].mint[:]) < 0 })
	var out []ChangedAccount
	for _, hs := range sets {
		first := sort.Search(len(hs.edits), func(k int) bool { return hs.edits[k].slot >= from })
		for _, e := range hs.edits[first:] {
			if e.slot > to {
				break
			}
			dup := false
			for k := len(out) - 1; k >= 0 && out[k].Slot == e.slot; k-- {
				if c := &out[k]; c.hs == hs && c.Account.Index == e.index {
					c.Closed, c.Account.Amount, dup = e.after.Closed, e.after.Amount, true
					break
				}
			}
			if !dup {
				out = append(out, ChangedAccount{Slot: e.slot, Closed: e.after.Closed, Account: hs.accountWith(e.index, e.after.Amount), hs: hs})
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Slot < out[b].Slot })
	return out, to
}
