package tally_test

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// BenchmarkCount inserts 1,000,000 random owners.
func BenchmarkCount(b *testing.B) {
	keys := make([]tally.Owner, 1_000_000)
	for i := range keys {
		_, _ = rand.Read(keys[i][:])
	}
	b.ReportAllocs()
	for b.Loop() {
		c := tally.NewCount()
		for i := range keys {
			_ = c.Add(&keys[i], 1)
		}
	}
}

// BenchmarkLive holds a live tally of 1,000,000 token accounts of 700,000
// owners (one in ten at zero) and applies notifications to it, each an
// account's new state (a new owner, a balance of 0 to 2): MiB is the
// memory the tally holds, ns/op one notification applied.
func BenchmarkLive(b *testing.B) {
	accounts := make([]tally.Owner, 1_000_000)
	owners := make([]tally.Owner, 700_000)
	for i := range accounts {
		_, _ = rand.Read(accounts[i][:])
	}
	for i := range owners {
		_, _ = rand.Read(owners[i][:])
	}
	l := tally.NewLive(1)
	for i := range accounts {
		if err := l.Seed(&accounts[i], &owners[i%len(owners)], uint64(i%10)); err != nil {
			b.Fatal(err)
		}
	}
	r := mrand.New(mrand.NewPCG(1, 2))
	slot := uint64(2)
	for b.Loop() {
		if _, err := l.Apply(slot, &accounts[r.IntN(len(accounts))], &owners[r.IntN(len(owners))], r.Uint64N(3)); err != nil {
			b.Fatal(err)
		}
		slot++
	}
	b.ReportMetric(float64(l.Bytes())/(1<<20), "MiB")
}
