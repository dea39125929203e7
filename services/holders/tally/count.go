package tally

import "fmt"

// Count accumulates one enumeration: the set of owners with a positive
// balance and the account counters. Balances are never negative, so an
// owner's summed balance is above zero exactly when one of its accounts
// is: the set keeps only owners seen with a positive account, and no sum
// is ever formed (nothing to overflow).
//
// The set is a keySet: at 1,000,000 owners 32 MiB of keys and 8 MiB of
// table, against 60 to 80 MiB for a map[[32]byte]struct{}.
//
// Limit sets ceilings on the accounts counted and on the set's memory
// (checked when it grows, so free on the hot path): past either, Add
// fails with a *LimitError and the tally must be discarded.
type Count struct {
	// TokenAccounts counts every account seen.
	TokenAccounts uint64
	// NonZeroAccounts counts accounts with a positive balance.
	NonZeroAccounts uint64

	owners keySet

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

// NewCount returns an empty Count.
func NewCount() *Count {
	return &Count{owners: newKeySet(false, nil)}
}

// Limit sets the ceilings: at most maxAccounts accounts, and an owner set
// of at most maxBytes (Bytes); 0 leaves one unbounded.
func (c *Count) Limit(maxAccounts uint64, maxBytes int64) {
	c.maxAccounts, c.maxBytes = maxAccounts, maxBytes
}

// Bytes is the memory of the owner set: its key chunks and its table.
func (c *Count) Bytes() int64 { return c.owners.bytes() }

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
func (c *Count) Holders() uint64 { return uint64(c.owners.len()) }

func (c *Count) insert(owner *Owner) error {
	h := c.owners.hash(owner)
	if _, ok := c.owners.find(owner, h); ok {
		return nil // already counted
	}
	if g := c.owners.growth(); c.maxBytes > 0 && g > 0 && c.owners.bytes()+g > c.maxBytes {
		return &LimitError{Accounts: c.TokenAccounts, Holders: c.Holders(), MaxBytes: c.maxBytes}
	}
	c.owners.insert(owner, h)
	return nil
}
