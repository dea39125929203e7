package holders

import (
	"fmt"
	"hash/maphash"
	"math/bits"
)

// Count accumulates one enumeration: the set of owners with a positive
// balance and the account counters. Balances are never negative, so an
// owner's summed balance is above zero exactly when one of its accounts
// is: the set keeps only owners seen with a positive account, and no sum
// is ever formed (nothing to overflow).
//
// The set is compact: owner keys live in fixed 1 MiB chunks (32 bytes
// each, never copied), indexed by an open-addressing table of 8-byte slots
// (32 bits of hash, 32 bits of key index) at a load factor of at most 3/4.
// At 1,000,000 owners that is 32 MiB of keys and 16 MiB of table, against
// 60 to 80 MiB for a map[[32]byte]struct{}: 43 to 54 bytes an owner, as
// the table doubles.
//
// Limit sets ceilings on the accounts counted and on the set's memory
// (checked when it grows, so free on the hot path): past either, Add
// fails with a *LimitError and the tally must be discarded.
type Count struct {
	// TokenAccounts counts every account seen.
	TokenAccounts uint64
	// NonZeroAccounts counts accounts with a positive balance.
	NonZeroAccounts uint64

	seed   maphash.Seed
	chunks [][]Owner
	n      uint32
	slots  []uint64 // 0: empty; else hash32<<32 | (index+1)
	mask   uint32

	maxAccounts uint64 // 0: no ceiling
	maxBytes    int64  // 0: no ceiling
}

// LimitError is a Count that met one of its ceilings.
type LimitError struct {
	// Accounts and Holders are the tally when the ceiling was met.
	Accounts, Holders uint64
	// MaxAccounts is set when the account ceiling was met, MaxBytes when
	// the owner set would have grown past its memory ceiling.
	MaxAccounts uint64
	MaxBytes    int64
}

func (e *LimitError) Error() string {
	if e.MaxAccounts > 0 {
		return fmt.Sprintf("more than %d token accounts", e.MaxAccounts)
	}
	return fmt.Sprintf("the owner set would pass %d MiB at %d holders (%d token accounts)", e.MaxBytes>>20, e.Holders, e.Accounts)
}

// Owner is a 32-byte account address.
type Owner = [32]byte

const (
	chunkBits = 15 // 32,768 keys (1 MiB) per chunk
	chunkLen  = 1 << chunkBits
	minSlots  = 1 << 12
)

// NewCount returns an empty Count.
func NewCount() *Count {
	return &Count{seed: maphash.MakeSeed(), slots: make([]uint64, minSlots), mask: minSlots - 1}
}

// Limit sets the ceilings: at most maxAccounts accounts, and an owner set
// of at most maxBytes (Bytes); 0 leaves one unbounded.
func (c *Count) Limit(maxAccounts uint64, maxBytes int64) {
	c.maxAccounts, c.maxBytes = maxAccounts, maxBytes
}

// Bytes is the memory of the owner set: its key chunks and its table.
func (c *Count) Bytes() int64 {
	return int64(len(c.chunks))*chunkLen*ownerSize + int64(len(c.slots))*8
}

const ownerSize = int64(len(Owner{}))

// Add records one token account of owner with amount. It fails, counting
// nothing, when a ceiling of Limit would be passed.
func (c *Count) Add(owner *Owner, amount uint64) error {
	if c.maxAccounts > 0 && c.TokenAccounts >= c.maxAccounts {
		return &LimitError{Accounts: c.TokenAccounts, Holders: c.Holders(), MaxAccounts: c.maxAccounts}
	}
	if amount == 0 {
		c.TokenAccounts++
		return nil
	}
	if err := c.insert(owner); err != nil {
		return err
	}
	c.TokenAccounts++
	c.NonZeroAccounts++
	return nil
}

// Holders is the number of unique owners with a positive balance.
func (c *Count) Holders() uint64 { return uint64(c.n) }

func (c *Count) key(i uint32) *Owner { return &c.chunks[i>>chunkBits][i&(chunkLen-1)] }

func (c *Count) insert(owner *Owner) error {
	h := uint32(maphash.Bytes(c.seed, owner[:]) >> 32)
	for i := h & c.mask; ; i = (i + 1) & c.mask {
		v := c.slots[i]
		if v == 0 {
			break
		}
		if uint32(v>>32) == h && *c.key(uint32(v) - 1) == *owner {
			return nil // already counted
		}
	}
	idx := c.n
	newChunk := idx>>chunkBits == uint32(len(c.chunks))
	grow := uint64(idx+1)*4 > uint64(len(c.slots))*3
	if c.maxBytes > 0 && (newChunk || grow) {
		next := c.Bytes()
		if newChunk {
			next += chunkLen * ownerSize
		}
		if grow {
			next += int64(len(c.slots)) * 8 // the table doubles
		}
		if next > c.maxBytes {
			return &LimitError{Accounts: c.TokenAccounts, Holders: c.Holders(), MaxBytes: c.maxBytes}
		}
	}
	if newChunk {
		c.chunks = append(c.chunks, make([]Owner, chunkLen))
	}
	*c.key(idx) = *owner
	c.n++
	if grow {
		c.grow()
	}
	c.place(uint64(h)<<32 | uint64(idx+1))
	return nil
}

func (c *Count) place(v uint64) {
	for i := uint32(v>>32) & c.mask; ; i = (i + 1) & c.mask {
		if c.slots[i] == 0 {
			c.slots[i] = v
			return
		}
	}
}

// grow doubles the table, re-placing entries from their stored hash
// (the keys are not read again).
func (c *Count) grow() {
	old := c.slots
	size := len(old) * 2
	if bits.Len(uint(size)) > 33 {
		panic("holders: owner set above 2^31 entries")
	}
	c.slots = make([]uint64, size)
	c.mask = uint32(size - 1)
	for _, v := range old {
		if v != 0 {
			c.place(v)
		}
	}
}
