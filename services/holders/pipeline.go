package holders

import (
	"errors"
	"sync/atomic"
)

// The decoder and the owner set run on two goroutines. Inserting into the
// set is random access over tens of MiB (a cache and TLB miss an owner,
// page faults as it grows), decoding is a sequential scan of the stream:
// at 1,000,000 accounts each is about half of the work, and on two cores
// they overlap. The decoder hands accounts over in batches (a few channel
// operations per thousands of accounts), through a fixed set of batches
// that go round: memory stays bounded whatever the stream's length.

const (
	// batchLen accounts are handed over at a time (160 KiB a batch).
	batchLen = 4096
	// batches is how many batches go round: one filling, the others
	// queued or being counted.
	batches = 3
)

type batch struct {
	n       int
	owners  [batchLen]Owner
	amounts [batchLen]uint64
}

// counter adds the accounts the decoder queues to a Count on a goroutine
// of its own. Its outcome equals adding them in order on the decoder's
// goroutine: the first error of Count.Add stops the counting, and it wins
// over any error the decoder meets later in the stream (finish).
type counter struct {
	c      *Count
	full   chan *batch
	free   chan *batch
	done   chan struct{}
	cur    *batch
	err    error       // the first error of Count.Add; read after done
	failed atomic.Bool // err is set: the decoder may stop early
}

func startCounter(c *Count) *counter {
	k := &counter{c: c, full: make(chan *batch, batches), free: make(chan *batch, batches), done: make(chan struct{})}
	for range batches - 1 {
		k.free <- new(batch)
	}
	k.cur = new(batch)
	go k.run()
	return k
}

func (k *counter) run() {
	defer close(k.done)
	for b := range k.full {
		for i := 0; i < b.n && k.err == nil; i++ {
			if err := k.c.Add(&b.owners[i], b.amounts[i]); err != nil {
				k.err = err
				k.failed.Store(true)
			}
		}
		b.n = 0
		k.free <- b
	}
}

// add queues one account. It returns an error once the counting has
// failed (then the decoder stops and calls finish, which returns it).
func (k *counter) add(owner *Owner, amount uint64) error {
	b := k.cur
	b.owners[b.n], b.amounts[b.n] = *owner, amount
	b.n++
	if b.n < batchLen {
		return nil
	}
	if k.failed.Load() {
		return errCountFailed
	}
	k.full <- b
	k.cur = <-k.free
	return nil
}

// errCountFailed stands for the counter's error until finish returns it.
var errCountFailed = errors.New("the count failed")

// finish counts what is queued, stops the goroutine, and returns the
// counting's error, or else decodeErr: an error of Count.Add happened at
// an account before the point where the decoder stopped.
func (k *counter) finish(decodeErr error) error {
	if k.cur.n > 0 && !k.failed.Load() {
		k.full <- k.cur
	}
	close(k.full)
	<-k.done
	if k.err != nil {
		return k.err
	}
	return decodeErr
}
