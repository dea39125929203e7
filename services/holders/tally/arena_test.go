package tally

import (
	"crypto/rand"
	"runtime"
	"testing"
	"time"
)

// A live tally's memory is outside the Go heap, exactly its Bytes while
// it is reachable (a grown table's old one returned at once), and all
// of it is returned once it is not.
func TestLiveTallyMemoryMappedAndReturned(t *testing.T) {
	l := NewLive(1)
	a := l.accounts.arena
	if a == nil || l.owners.arena != a {
		t.Fatal("the live tally's sets are not in one arena")
	}
	var account, owner Owner
	for i := range 100_000 {
		_, _ = rand.Read(account[:])
		if i%3 == 0 {
			_, _ = rand.Read(owner[:])
		}
		if err := l.Seed(&account, &owner, uint64(i%4)); err != nil {
			t.Fatal(err)
		}
	}
	if a.mapped.Load() != l.Bytes() || int64(len(a.regions)) != int64(len(l.accounts.chunks)+len(l.accounts.vals)+len(l.owners.chunks)+len(l.owners.vals)+2) {
		t.Fatalf("the arena maps %d bytes in %d regions, the tally is %d bytes", a.mapped.Load(), len(a.regions), l.Bytes())
	}
	if MappedBytes() < l.Bytes() {
		t.Fatalf("MappedBytes %d below the tally's %d", MappedBytes(), l.Bytes())
	}
	var heap runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heap)
	if heap.HeapAlloc >= uint64(l.Bytes()) {
		t.Fatalf("the Go heap holds %d bytes with a tally of %d outside it", heap.HeapAlloc, l.Bytes())
	}
	if l.Holders() == 0 {
		t.Fatal("no holder counted")
	}
	// Unreachable: its cleanup returns every region. (The cleanup runs
	// on a goroutine of the runtime after a collection.)
	l = nil
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		if a.mapped.Load() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an unreachable tally still maps %d bytes", a.mapped.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
