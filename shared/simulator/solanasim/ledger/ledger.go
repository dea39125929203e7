// Package ledger is the simulated Solana chain behind solanasim's servers:
// the tokens (each mint's state and the states it had, its Metaplex
// metadata account, its deterministic holder set and the holder changes
// made since), the slot, and the signal that the ledger changed. It
// serves nothing: solanasim's RPC, PubSub, ledger nodes and control
// endpoint read and change it through a Ledger, and this package imports
// no network, no server and no solanasim (the layout test
// TestSimulatorLedgerLinksNoServer checks it).
//
// Every change is a transaction: it lands in a slot after the one the
// ledger was at, as on a real ledger, where an account has one state per
// slot and subscribers are notified once per slot.
package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Ledger is the chain state. Its methods are safe for concurrent use.
//
// Locking: mu guards everything the Ledger holds (the tokens, their
// states, histories and holder changes, the slot, the default mint and
// the change signal); a holder set's address index has a lock of its own
// (holderSet.idxMu), taken without mu. mu is a leaf lock: while it is
// held the Ledger takes no other lock but idxMu's and calls no code of
// another package (no callback of a caller runs under it). A server may
// hold a lock of its own when it calls the Ledger (a PubSub socket holds
// its subscriptions' lock while it reads accounts): the server's lock is
// taken first, the Ledger's second, never the other way. What the reads
// return are copies (MintState) or snapshots (HolderView) read without
// the lock; a slot and the state it pairs with are read under one hold
// of it (Mint, Account), so no answer pairs a slot with another slot's
// state.
type Ledger struct {
	mu     sync.RWMutex
	slot   uint64
	tokens map[Key]*token
	byMeta map[Key]*token // Metaplex metadata PDA -> token
	// defaultMint is the first token added: the one a change that names
	// no mint ("") changes.
	defaultMint Key
	hasDefault  bool
	// changed is closed (and replaced) whenever the ledger changes: a
	// mint's state, a holder or the slot.
	changed chan struct{}
}

// token is a token on the ledger (its fields guarded by Ledger.mu).
type token struct {
	state MintState
	// history holds the states the mint had, each from the slot it took
	// effect: what a lagging node answers.
	history []pastState
	holders *holderSet
	metaPDA Key
}

// pastState is a state of a mint, in force from slot from on.
type pastState struct {
	from  uint64
	state MintState
}

// maxHistory bounds the states kept per mint; a node lagging past the
// oldest sees the oldest.
const maxHistory = 256

// New returns a ledger at slot with no token.
func New(slot uint64) *Ledger {
	return &Ledger{
		slot:    slot,
		tokens:  map[Key]*token{},
		byMeta:  map[Key]*token{},
		changed: make(chan struct{}),
	}
}

// AddToken registers t (replacing a token with the same mint). It returns
// an error when an address or a holder parameter is invalid.
func (l *Ledger) AddToken(t Token) error {
	mint, err := ParseKey(t.Mint)
	if err != nil {
		return fmt.Errorf("solanasim: Mint: %w", err)
	}
	st := MintState{
		Mint: mint, Program: t.Program, Decimals: t.Decimals, Supply: t.Supply,
		Metadata: t.Metadata, Name: t.Name, Symbol: t.Symbol, URI: t.URI,
		Additional: append([][2]string(nil), t.AdditionalMetadata...),
	}
	if t.Program != ProgramToken && t.Program != ProgramToken2022 {
		return fmt.Errorf("solanasim: unknown Program %d", t.Program)
	}
	if t.Metadata == MetadataToken2022 && t.Program != ProgramToken2022 {
		return errors.New("solanasim: MetadataToken2022 needs ProgramToken2022")
	}
	if st.MintAuthority, err = parseOptKey("MintAuthority", t.MintAuthority); err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	if st.FreezeAuthority, err = parseOptKey("FreezeAuthority", t.FreezeAuthority); err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	if st.UpdateAuthority, err = parseOptKey("UpdateAuthority", t.UpdateAuthority); err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	hs, err := newHolderSet(mint, t.Program, t.Supply, t.Holders)
	if err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	tok := &token{state: st, holders: hs, history: []pastState{{from: 0, state: st}}}
	pda, _, err := findProgramAddress([][]byte{[]byte("metadata"), metadataProgramKey[:], mint[:]}, metadataProgramKey)
	if err != nil {
		return fmt.Errorf("solanasim: metadata address: %w", err)
	}
	tok.metaPDA = pda
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.tokens[mint]; ok {
		delete(l.byMeta, old.metaPDA)
	}
	l.tokens[mint] = tok
	if !l.hasDefault {
		l.defaultMint, l.hasDefault = mint, true
	}
	if t.Metadata == MetadataMetaplex {
		l.byMeta[pda] = tok
	}
	return nil
}

// Slot returns the current (processed) slot.
func (l *Ledger) Slot() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.slot
}

// BumpSlot advances the slot by n and returns the new slot.
func (l *Ledger) BumpSlot(n uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slot += n
	l.signal()
	return l.slot
}

// signal wakes whoever waits on Changes: the ledger changed (mu held).
func (l *Ledger) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Changes is closed at the next change of the ledger. A waiter takes the
// next channel before it reads what changed, so that a change made while
// it reads is not missed.
func (l *Ledger) Changes() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.changed
}

// AccountKind is what an address holds on the ledger.
type AccountKind int

// Account kinds.
const (
	// NoAccount: no account of the ledger's (a token account is read
	// through HolderView).
	NoAccount AccountKind = iota
	// MintAccount: a token's mint.
	MintAccount
	// MetadataAccount: a token's Metaplex metadata account.
	MetadataAccount
)

// Mint returns the current slot, and mint k's state and holder set as a
// node lagging by lag slots sees them (false when k is no mint), read
// under one hold of the lock.
func (l *Ledger) Mint(k Key, lag uint64) (slot uint64, st MintState, hv HolderView, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	tok, ok := l.tokens[k]
	if !ok {
		return l.slot, MintState{}, HolderView{}, false
	}
	return l.slot, l.stateAt(tok, lag), l.holdersAt(tok, lag), true
}

// Account returns the current slot, and what account k holds as a node
// lagging by lag slots sees it: a mint's state (MintAccount), or the state
// of the mint whose Metaplex metadata account k is (MetadataAccount), read
// under one hold of the lock.
func (l *Ledger) Account(k Key, lag uint64) (slot uint64, st MintState, kind AccountKind) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if tok, ok := l.tokens[k]; ok {
		return l.slot, l.stateAt(tok, lag), MintAccount
	}
	if tok, ok := l.byMeta[k]; ok {
		return l.slot, l.stateAt(tok, lag), MetadataAccount
	}
	return l.slot, MintState{}, NoAccount
}

// Holders is mint k's holder set as a node lagging by lag slots sees it,
// and false when k is no mint.
func (l *Ledger) Holders(k Key, lag uint64) (HolderView, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	tok, ok := l.tokens[k]
	if !ok {
		return HolderView{}, false
	}
	return l.holdersAt(tok, lag), true
}

// AllHolders is every mint's holder set as a node lagging by lag slots
// sees it, by mint address.
func (l *Ledger) AllHolders(lag uint64) []HolderView {
	l.mu.RLock()
	sets := make([]HolderView, 0, len(l.tokens))
	for _, tok := range l.tokens {
		sets = append(sets, l.holdersAt(tok, lag))
	}
	l.mu.RUnlock()
	sort.Slice(sets, func(a, b int) bool { return bytes.Compare(sets[a].mint[:], sets[b].mint[:]) < 0 })
	return sets
}

// Truth returns the exact ground truth of mint's holder set now (the
// generated set's computed once, in one pass of bounded memory, corrected
// by the holder changes made since), and false when mint is unknown.
func (l *Ledger) Truth(mint string) (Truth, bool) {
	v, ok := l.holdersNow(mint)
	if !ok {
		return Truth{}, false
	}
	return v.Truth(), true
}

// Largest returns mint's 20 largest token accounts, largest first.
func (l *Ledger) Largest(mint string) ([]BalanceEntry, bool) {
	v, ok := l.holdersNow(mint)
	if !ok {
		return nil, false
	}
	return append([]BalanceEntry(nil), v.Largest()...), true
}

// holdersNow is mint's holder set now.
func (l *Ledger) holdersNow(mint string) (HolderView, bool) {
	k, err := ParseKey(mint)
	if err != nil {
		return HolderView{}, false
	}
	return l.Holders(k, 0)
}

// Supply is mint's supply in base units now, and false when mint is
// unknown.
func (l *Ledger) Supply(mint string) (uint64, bool) {
	k, err := ParseKey(mint)
	if err != nil {
		return 0, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	tok, ok := l.tokens[k]
	if !ok {
		return 0, false
	}
	return tok.state.Supply, true
}

// SetSupply changes mint's supply (the holder set is unchanged).
func (l *Ledger) SetSupply(mint string, supply uint64) error {
	_, err := l.update(mint, func(m *MintState) error { m.Supply = supply; return nil })
	return err
}

// SetMintAuthority sets mint's mint authority ("" disables it).
func (l *Ledger) SetMintAuthority(mint, authority string) error {
	_, err := l.update(mint, func(m *MintState) error {
		k, err := parseOptKey("mint authority", authority)
		if err == nil {
			m.MintAuthority = k
		}
		return err
	})
	return err
}

// SetFreezeAuthority sets mint's freeze authority ("" disables it).
func (l *Ledger) SetFreezeAuthority(mint, authority string) error {
	_, err := l.update(mint, func(m *MintState) error {
		k, err := parseOptKey("freeze authority", authority)
		if err == nil {
			m.FreezeAuthority = k
		}
		return err
	})
	return err
}

// SupplyChange is what AdjustSupply did.
type SupplyChange struct {
	Mint   string
	Supply uint64 // after the change
	Slot   uint64 // the slot it landed in
}

// AdjustSupply adds delta base units to mint's supply (negative: a burn);
// "" is the first token added. An unknown mint's error wraps
// ErrUnknownMint.
func (l *Ledger) AdjustSupply(mint string, delta int64) (SupplyChange, error) {
	if mint == "" {
		k, err := l.mintKey(mint)
		if err != nil {
			return SupplyChange{}, err
		}
		mint = k.String()
	}
	ch := SupplyChange{Mint: mint}
	var err error
	ch.Slot, err = l.update(mint, func(m *MintState) error {
		switch {
		case delta < 0 && uint64(-delta) > m.Supply:
			return fmt.Errorf("solanasim: burning %d of a supply of %d", -delta, m.Supply)
		case delta > 0 && uint64(delta) > math.MaxUint64-m.Supply:
			return fmt.Errorf("solanasim: minting %d over a supply of %d passes 2^64-1", delta, m.Supply)
		}
		if delta < 0 {
			m.Supply -= uint64(-delta)
		} else {
			m.Supply += uint64(delta)
		}
		ch.Supply = m.Supply
		return nil
	})
	return ch, err
}

// update changes mint's state by f, at a new slot, which it returns. f
// is this package's own: it runs under the lock.
func (l *Ledger) update(mint string, f func(*MintState) error) (uint64, error) {
	k, err := ParseKey(mint)
	if err != nil {
		return 0, fmt.Errorf("solanasim: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tok, ok := l.tokens[k]
	if !ok {
		return 0, fmt.Errorf("solanasim: %w %s", ErrUnknownMint, mint)
	}
	if err := f(&tok.state); err != nil {
		return 0, err
	}
	l.slot++
	tok.remember(l.slot)
	l.signal()
	return l.slot, nil
}

// remember records the current state as in force from slot on.
func (t *token) remember(slot uint64) {
	if n := len(t.history); n > 0 && t.history[n-1].from == slot {
		t.history[n-1].state = t.state
		return
	}
	t.history = append(t.history, pastState{from: slot, state: t.state})
	if len(t.history) > maxHistory {
		t.history = t.history[len(t.history)-maxHistory:]
	}
}

// stateAt is tok's state as a node lagging by lag slots sees it (mu
// held): the state of lag slots ago.
func (l *Ledger) stateAt(tok *token, lag uint64) MintState {
	if lag == 0 {
		return tok.state
	}
	at := l.slot - min(lag, l.slot)
	st := tok.history[0].state
	for i := len(tok.history) - 1; i >= 0; i-- {
		if tok.history[i].from <= at {
			st = tok.history[i].state
			break
		}
	}
	return st
}
