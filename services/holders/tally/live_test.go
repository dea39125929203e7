package tally_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// TestLiveGap: a notification behind the last one applied is a gap,
// never applied; one at or before the enumeration's slot is already in it.
func TestLiveGap(t *testing.T) {
	a, b, o := tally.Owner{1}, tally.Owner{2}, tally.Owner{9}
	l := tally.NewLive(100)
	if err := l.Seed(&a, &o, 5); err != nil {
		t.Fatal(err)
	}
	if err := l.Seed(&a, &o, 5); err == nil {
		t.Error("an account seeded twice was taken")
	}
	if changed, err := l.Apply(100, &a, &o, 0); changed || err != nil || l.Holders() != 1 {
		t.Errorf("a notification at the enumeration's slot changed the tally: %v %v, %d holders", changed, err, l.Holders())
	}
	if changed, err := l.Apply(105, &b, &o, 7); changed || err != nil || l.Holders() != 1 || l.NonZeroAccounts() != 2 {
		t.Errorf("a second account of a holder: %v %v, %d holders", changed, err, l.Holders())
	}
	if changed, err := l.Apply(104, &a, &o, 0); !errors.Is(err, tally.ErrGap) || changed {
		t.Errorf("a notification behind the last applied: %v %v", changed, err)
	}
	if l.NonZeroAccounts() != 2 || l.Slot() != 105 {
		t.Errorf("a gap changed the tally: %d non-zero, slot %d", l.NonZeroAccounts(), l.Slot())
	}
}

// TestLiveLimit: past its memory ceiling the tally takes nothing more and
// says why.
func TestLiveLimit(t *testing.T) {
	l := tally.NewLive(1)
	l.Limit(1 << 20)
	var err error
	var i uint32
	for ; err == nil && i < 1_000_000; i++ {
		var a, o tally.Owner
		binary.LittleEndian.PutUint32(a[:], i)
		binary.LittleEndian.PutUint32(o[:], i)
		err = l.Seed(&a, &o, 1)
	}
	var le *tally.LimitError
	if !errors.As(err, &le) || le.MaxBytes != 1<<20 {
		t.Fatalf("after %d accounts: %v, want a LimitError at 1 MiB", i, err)
	}
	if l.Bytes() > 1<<20 || l.Holders() != uint64(i-1) {
		t.Errorf("%d bytes, %d holders after %d accounts", l.Bytes(), l.Holders(), i-1)
	}
}
