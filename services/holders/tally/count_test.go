package tally_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/services/holders/tally"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCountMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := tally.NewCount()
	ref := map[tally.Owner]bool{}
	var accounts, nonZero uint64
	for range 200_000 {
		var o tally.Owner
		// Few distinct prefixes and many repeats: collisions and duplicates.
		binary.LittleEndian.PutUint64(o[:], rng.Uint64N(50_000))
		o[31] = byte(rng.UintN(3))
		amount := uint64(0)
		if rng.UintN(4) > 0 {
			amount = rng.Uint64()
		}
		_ = c.Add(&o, amount)
		accounts++
		if amount > 0 {
			nonZero++
			ref[o] = true
		}
	}
	if c.Holders() != uint64(len(ref)) || c.TokenAccounts != accounts || c.NonZeroAccounts != nonZero {
		t.Errorf("holders %d want %d; accounts %d/%d; non-zero %d/%d", c.Holders(), len(ref), c.TokenAccounts, accounts, c.NonZeroAccounts, nonZero)
	}
}

// TestCountCeilings: the owner set refuses an account past either ceiling
// and counts nothing of it; without a ceiling it takes everything.
func TestCountCeilings(t *testing.T) {
	owner := func(i int) *tally.Owner {
		var o tally.Owner
		o[0], o[1], o[2] = byte(i), byte(i>>8), byte(i>>16)
		return &o
	}
	c := tally.NewCount()
	c.Limit(10, 0)
	for i := range 10 {
		if err := c.Add(owner(i), uint64(i%2)); err != nil {
			t.Fatal(err)
		}
	}
	var le *tally.LimitError
	if err := c.Add(owner(10), 1); !errors.As(err, &le) || le.MaxAccounts != 10 || c.TokenAccounts != 10 || c.Holders() != 5 {
		t.Fatalf("past 10 accounts: %v, %d accounts, %d holders", err, c.TokenAccounts, c.Holders())
	}

	c = tally.NewCount()
	c.Limit(0, 4<<20)
	var err error
	n := 0
	for ; err == nil; n++ {
		err = c.Add(owner(n), 1)
	}
	if !errors.As(err, &le) || le.MaxBytes != 4<<20 || c.Bytes() > 4<<20 || c.Holders() != uint64(n-1) || c.NonZeroAccounts != uint64(n-1) {
		t.Fatalf("memory ceiling: %v after %d owners, %d bytes", err, n, c.Bytes())
	}
	if c.Holders() < 40_000 {
		t.Errorf("4 MiB held only %d owners", c.Holders())
	}
}
